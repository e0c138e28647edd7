"""The pipeline on a real SLURM cluster: a one-node SLURM that `make test-cluster` installs and starts
(tests/cluster/slurm.sh) and stops again. Every job goes through `sbatch`; nothing fakes the scheduler.

- the tiny profile end to end through `snakemake --executor slurm` with workflow/profiles/slurm as a user runs it
  (plus what a CPU-only cluster must set: no GPUs, small jobs), byte-identical to a local `snakemake --cores 2` run;
- pretraining as one SLURM job whose command starts two processes through torchrun's launcher, ending with the
  weights of one process;
- a pretraining job stopped by `scancel --signal=TERM` (what a time limit or pre-emption sends) saves its state,
  is retried by Snakemake and ends with the weights of an uninterrupted run, bit for bit;
- a fine-tuning job stopped the same way keeps its finished seed and resumes the stopped one on the retry, ending
  with the files of an uninterrupted run, byte for byte;
- a pretraining job that runs longer than its own SLURM time limit stops itself before the limit, attempt after
  attempt, and finishes over several attempts with the weights of an uninterrupted run, bit for bit (the paper's
  pretraining on one GPU outlasts the SLURM profile's limit in the same way: workflow/profiles/slurm).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml

from gpt1.params.schedule import log_spaced_updates
from gpt1.pipeline.stage_table import STAGES, module_name
from test_ddp import raw_params
from test_pipeline import BIN, ROOT, _fresh_copy, _run, _tiny_params
from test_pretrain import state_dict
from test_resume import cli_project, run_cli

CLUSTER = os.environ.get("GPT1_TEST_CLUSTER")  # the state folder of the cluster `make test-cluster` started
pytestmark = [pytest.mark.cluster, pytest.mark.slow,
              pytest.mark.skipif(not CLUSTER, reason="cluster tests run under `make test-cluster`, which starts a "
                                                     "throwaway one-node SLURM (tests/cluster/slurm.sh)")]

TRAINING_RULES = [module_name(command) for command, spec in STAGES.items() if spec.trains]
# What this cluster needs beyond the shipped profile: it has no GPU and 2 CPUs, and the test should not wait
# the plugin's default 40 s before it first asks squeue about a job.
ON_THIS_CLUSTER = ["--workflow-profile", "workflow/profiles/slurm",
                   "--default-resources", "mem_mb=1500", "cpus_per_task=1", "runtime=30",
                   "--set-resources", *[f"{rule}:gpu=0" for rule in TRAINING_RULES],
                   "--slurm-init-seconds-before-status-checks", "2", "--latency-wait", "5"]
# Pretraining's timings and its lock file (which names the process that held it): the only bytes two runs of the
# same code may differ in.
TIMINGS = ("tokens_per_second.tsv", "mfu.tsv", "pretrain.lock")


def _outputs(project: Path) -> dict[str, bytes]:
    found = {}
    for folder in ("data", "results"):
        for path in sorted((project / folder).rglob("*")):
            relative = str(path.relative_to(project))
            if path.is_file() and not relative.startswith("data/cache") and not relative.endswith(TIMINGS):
                content = path.read_bytes()
                if re.fullmatch(r"results/pretrain/\w+/metrics\.json", relative):
                    content = re.sub(rb'"train_seconds_this_run": [0-9.e+-]+', b"", content)
                found[relative] = content
    return found


def _slurm_batch_jobs() -> tuple[int, int]:
    """(batch jobs submitted, batch jobs that ended with status 0) since slurmctld started, from its own log: there
    is no accounting database here."""
    log = (Path(CLUSTER) / "log" / "slurmctld.log").read_text()
    return log.count("_slurm_rpc_submit_batch_job: JobId="), len(re.findall(r"_job_complete: JobId=\d+ WEXITSTATUS 0", log))


def _wait_for_job(job: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True).stdout
        state = re.search(r"JobState=(\w+)", shown)
        if state and state.group(1) not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            return state.group(1)
        time.sleep(0.5)
    raise AssertionError(f"SLURM job {job} did not finish within {timeout} s")


def test_the_tiny_profile_runs_every_job_through_sbatch_with_the_outputs_of_a_local_run(tmp_path):
    local = _fresh_copy(tmp_path / "local")
    log = _run([str(BIN / "snakemake"), "--cores", "2", "--configfile", "profiles/tiny.yaml"], local)
    jobs = int(re.search(r"^total\s+(\d+)", log, re.MULTILINE).group(1)) - 1  # `all` is a local rule

    cluster = _fresh_copy(tmp_path / "cluster")
    before = _slurm_batch_jobs()
    started = time.monotonic()
    log = _run([str(BIN / "snakemake"), *ON_THIS_CLUSTER, "--configfile", "profiles/tiny.yaml"], cluster)
    minutes = (time.monotonic() - started) / 60
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    received, succeeded = (after - earlier for after, earlier in zip(_slurm_batch_jobs(), before))
    print(f"\n{len(submitted)} jobs submitted with sbatch; slurmctld received {received} and ran {succeeded} to exit "
          f"status 0; {minutes:.1f} min; the local run had {jobs} jobs")
    assert len(submitted) == received == succeeded == jobs >= 20

    ours, reference = _outputs(cluster), _outputs(local)
    assert sorted(ours) == sorted(reference)
    differing = [path for path in reference if ours[path] != reference[path]]
    assert not differing, f"{len(differing)} files differ from the local run's: {differing[:10]}"


def test_pretraining_starts_its_two_processes_inside_one_slurm_job(tmp_path):
    """pretrain.processes_per_node: 2 on a CPU: one sbatch job, two gloo processes from torchrun's launcher."""
    raw = raw_params(micro_batch_size=2)
    single = cli_project(tmp_path, "single", raw)
    assert run_cli(single, "pretrain", "--kind", "transformer").returncode == 0
    raw["pretrain"]["processes_per_node"] = 2
    project = cli_project(tmp_path, "slurm", raw)
    submitted = subprocess.run(
        ["sbatch", "--parsable", "-c", "2", "--mem=2000", "-o", str(project / "job.out"), "--chdir", str(project),
         "--wrap", f"{BIN / 'gpt1'} pretrain --kind transformer"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    job = submitted.stdout.strip().split(";")[0]
    assert _wait_for_job(job) == "COMPLETED", (project / "job.out").read_text()[-3000:]

    log = (project / "logs/pretrain/transformer.log").read_text()
    assert "starting 2 processes on this node through torchrun" in log and "2 process(es) x" in log
    reference = state_dict(single / "data/pretrain/transformer/model.safetensors")
    ours = state_dict(project / "data/pretrain/transformer/model.safetensors")
    largest = max((ours[name] - reference[name]).abs().max().item() for name in reference)
    print(f"\n2 processes in SLURM job {job} vs 1 process: largest weight difference {largest:.2e}")
    for name, tensor in ours.items():
        torch.testing.assert_close(tensor, reference[name], rtol=1e-4, atol=1e-5, msg=name)


# Snakemake runs a training job with OMP_NUM_THREADS and MKL_NUM_THREADS set to its threads: every CPU of the job,
# on this one-node cluster every CPU of the machine. The reference run uses as many, so both sum in the same order.
SNAKEMAKE_THREADS = dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS"), str(len(os.sched_getaffinity(0))))
LONGER = {"pretrain": {"max_steps": 3000, "eval_interval": 1000, "save_interval": 1000, "checkpoints": 3},
          "analysis": {"transfer_curve_steps": [55]}}  # a kept checkpoint of 3000 updates (1, 55, 3000)


def test_a_pretraining_job_stopped_by_sigterm_is_retried_and_resumes_to_the_uninterrupted_weights(tmp_path):
    """What a time limit or a pre-emption does to a job: SIGTERM to its processes (then SIGKILL after KillWait).
    The run saves its resume state and exits 143; Snakemake (`retries` in the profile) submits the job again, which
    resumes at the saved update and ends where a run that was never stopped ends."""
    project = _fresh_copy(tmp_path / "stopped")
    (project / "longer.yaml").write_text(yaml.safe_dump(LONGER))
    target = "data/pretrain/transformer/model.safetensors"
    staged = project / "data/pretrain/transformer/resume-checkpoints/step_1.safetensors"
    signalled: list[str] = []

    def stop_the_job_once_it_trains():
        deadline = time.monotonic() + 600
        while not staged.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        running = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i %k"], capture_output=True, text=True).stdout
        for line in running.splitlines():
            job, comment = line.split(maxsplit=1)
            if "pretrain" in comment:
                subprocess.run(["scancel", "--signal=TERM", job], check=True)
                signalled.append(job)

    watcher = threading.Thread(target=stop_the_job_once_it_trains, daemon=True)
    watcher.start()
    log = _run([str(BIN / "snakemake"), *ON_THIS_CLUSTER, "--retries", "1", "--configfile", "profiles/tiny.yaml",
                "longer.yaml", "--", target], project)
    watcher.join(timeout=5)
    assert len(signalled) == 1, "the pretraining job was not running when its first checkpoint appeared"
    pretraining_log = (project / "logs/pretrain/transformer.log").read_text()
    resumed = re.search(r"resuming transformer pretraining from \S+ at update (\d+)", pretraining_log)
    assert resumed and 1 <= int(resumed.group(1)) < 3000, pretraining_log[-2000:]
    assert len(re.findall(r"has been submitted with SLURM jobid", log)) >= 2  # the job, then its retry

    _assert_the_weights_of_an_uninterrupted_run(project, tmp_path / "uninterrupted", "longer.yaml", target)
    print(f"\nSLURM job {signalled[0]} stopped by SIGTERM, retried, resumed at update {resumed.group(1)}: final "
          "weights equal to an uninterrupted run's, bit for bit")


def _assert_the_weights_of_an_uninterrupted_run(project: Path, uninterrupted: Path, profile: str, target: str) -> None:
    """The same params and tokens as `project`, pretrained in one go here: its weights equal `project`'s, bit for bit."""
    shutil.copytree(project / "profiles", uninterrupted / "profiles")
    shutil.copytree(project / "data/tokens", uninterrupted / "data/tokens")
    for name in ("params.yaml", profile):
        shutil.copy(project / name, uninterrupted / name)
    done = subprocess.run([str(BIN / "gpt1"), "--profile", "profiles/tiny.yaml", "--profile", profile, "pretrain",
                           "--kind", "transformer"], cwd=uninterrupted, capture_output=True, text=True,
                          env={**os.environ, **SNAKEMAKE_THREADS})
    assert done.returncode == 0, done.stderr[-2000:]
    reference = state_dict(uninterrupted / target)
    for name, tensor in state_dict(project / target).items():
        assert torch.equal(tensor, reference[name]), name


# Longer than two attempts under a one-minute SLURM limit on one CPU: 30,000 tiny updates.
ATTEMPT_SECONDS = 45  # what an attempt under a one-minute limit trains at most: the limit less its margin
CALIBRATION_SECONDS = 20


def _over_the_limit(project: Path, scratch: Path) -> dict:
    """Params whose pretraining needs about three and a half attempts' time on this machine, however fast it is: the
    update rate is measured first, by a run of this project's tokens stopped after CALIBRATION_SECONDS (its start
    counted in, so the rate is low and the run longer than planned, never shorter). At least three attempts are
    then needed; a fixed length trained three attempts on one machine and outlasted seven on a slower one. The
    test allows twenty, so attempts several times slower than the calibration (a busy machine) still finish."""
    shutil.copytree(project / "profiles", scratch / "profiles")
    shutil.copytree(project / "data/tokens", scratch / "data/tokens")
    shutil.copy(project / "params.yaml", scratch / "params.yaml")
    endless = 10**6  # updates: more than CALIBRATION_SECONDS train on any machine
    (scratch / "endless.yaml").write_text(yaml.safe_dump({
        "pretrain": {"max_steps": endless, "eval_interval": endless, "save_interval": endless, "checkpoints": 3},
        "analysis": {"transfer_curve_steps": [log_spaced_updates(endless, 3)[1]]}}))
    stopped = subprocess.run(["timeout", "-s", "TERM", str(CALIBRATION_SECONDS), str(BIN / "gpt1"), "--profile",
                              "profiles/tiny.yaml", "--profile", "endless.yaml", "pretrain", "--kind", "transformer"],
                             cwd=scratch, capture_output=True, text=True, env={**os.environ, **SNAKEMAKE_THREADS})
    stop = re.search(r"stopped by SIGTERM after update (\d+)", stopped.stdout + stopped.stderr)
    assert stop, stopped.stderr[-2000:]
    updates = int(stop.group(1))
    steps = max(300, round(updates / CALIBRATION_SECONDS * ATTEMPT_SECONDS * 3.5))
    middle = log_spaced_updates(steps, 3)[1]
    return {"pretrain": {"max_steps": steps, "eval_interval": steps, "save_interval": steps, "checkpoints": 3},
            "analysis": {"transfer_curve_steps": [middle]}}  # a kept checkpoint: the curve starts from kept ones


def test_a_pretraining_job_longer_than_its_time_limit_finishes_over_several_attempts_bit_for_bit(tmp_path):
    """SLURM's own time limit, with no signal sent by the test: the pretraining job asks for one minute (the least
    SLURM counts) and needs more. Each attempt stops itself before the limit (gpt1/train/interrupt.py), saving its
    state; Snakemake submits the job again (its retries), and each attempt resumes where the one before stopped,
    until one finishes, inside its limit: no attempt is cut or marked TIMEOUT by SLURM, which would have retried a
    finished run from its start. The final weights equal an uninterrupted run's, bit for bit."""
    project = _fresh_copy(tmp_path / "limited")
    _run([str(BIN / "snakemake"), "--cores", "2", "--configfile", "profiles/tiny.yaml", "--", "data/tokens"], project)
    over_the_limit = _over_the_limit(project, tmp_path / "calibration")
    (project / "over_the_limit.yaml").write_text(yaml.safe_dump(over_the_limit))
    steps = over_the_limit["pretrain"]["max_steps"]
    target = "data/pretrain/transformer/model.safetensors"
    first_resource = ON_THIS_CLUSTER.index("--set-resources") + 1
    on_this_cluster = [*ON_THIS_CLUSTER[:first_resource], "pretrain:runtime=1", *ON_THIS_CLUSTER[first_resource:]]
    controller_log = Path(CLUSTER) / "log" / "slurmctld.log"
    limits_before = controller_log.read_text().count("Time limit exhausted")
    # the plugin deletes a successful job's log unless told to keep it: the last attempt's is read below
    _run([str(BIN / "snakemake"), *on_this_cluster, "--retries", "20", "--slurm-keep-successful-logs",
          "--configfile", "profiles/tiny.yaml", "over_the_limit.yaml", "--", target], project)
    assert controller_log.read_text().count("Time limit exhausted") == limits_before
    attempts = sorted((project / ".snakemake/slurm_logs/rule_pretrain/transformer").glob("*.log"),
                      key=lambda log: int(log.stem))
    logs = [attempt.read_text() for attempt in attempts]
    assert len(logs) >= 3, f"{len(logs)} attempt(s): the run did not outlast its limit twice"
    assert all("time limit is near" in log for log in logs[:-1]), logs[0][-2000:]
    resumed = [int(re.search(r"resuming transformer pretraining from \S+ at update (\d+)", log).group(1))
               for log in logs[1:]]
    assert resumed == sorted(set(resumed)) and 0 < resumed[0] and resumed[-1] < steps, resumed
    _assert_the_weights_of_an_uninterrupted_run(project, tmp_path / "uninterrupted", "over_the_limit.yaml", target)
    print(f"\npretraining {steps} updates under a one-minute SLURM limit: {len(logs)} attempts, each stopping itself "
          f"before the limit, resumed at updates {resumed}: final weights equal to an uninterrupted run's, bit for bit")


LONGER_FINETUNE = {"finetune": {"seeds": [1, 2], "epochs": 30, "save_interval": 1}}  # 60 updates a seed, each saved


def test_a_finetuning_job_stopped_by_sigterm_is_retried_and_resumes_to_the_files_of_an_uninterrupted_run(tmp_path):
    """The same for a fine-tuning job (one method on one task): its finished seed is kept (outside the output folder,
    which Snakemake deletes when the job fails) and its stopped seed resumes at the saved update."""
    project = _fresh_copy(tmp_path / "stopped")
    (project / "longer.yaml").write_text(yaml.safe_dump(LONGER_FINETUNE))
    task = _tiny_params()["data"]["tasks"][0]  # the job runs with the tiny profile
    in_progress = project / "data/training_state/finetune/full" / task / "seed2/resume.pt"
    signalled: list[str] = []

    def stop_the_job_once_it_trains():
        deadline = time.monotonic() + 900
        while not in_progress.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        running = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i %k"], capture_output=True, text=True).stdout
        for line in running.splitlines():
            job, comment = line.split(maxsplit=1)
            if "finetune" in comment:
                subprocess.run(["scancel", "--signal=TERM", job], check=True)
                signalled.append(job)

    watcher = threading.Thread(target=stop_the_job_once_it_trains, daemon=True)
    watcher.start()
    log = _run([str(BIN / "snakemake"), *ON_THIS_CLUSTER, "--retries", "1", "--configfile", "profiles/tiny.yaml",
                "longer.yaml", "--", f"results/finetune/full/{task}"], project)
    watcher.join(timeout=5)
    assert len(signalled) == 1, "the fine-tuning job was not running when its second seed saved its state"
    job_log = (project / f"logs/finetune/full/{task}.log").read_text()
    assert "its files are copied back, not trained again" in job_log, job_log[-2000:]
    assert re.search(rf"finetune {task}/full/seed2: resuming from \S+ at update \d+", job_log), job_log[-2000:]
    assert len(re.findall(r"has been submitted with SLURM jobid", log)) >= 2

    uninterrupted = tmp_path / "uninterrupted"  # the same inputs, fine-tuned in one go, here
    for folder in ("profiles", "data/task_tokens", "data/pretrain", "data/starting_models"):
        shutil.copytree(project / folder, uninterrupted / folder)
    for name in ("params.yaml", "longer.yaml"):
        shutil.copy(project / name, uninterrupted / name)
    done = subprocess.run([str(BIN / "gpt1"), "--profile", "profiles/tiny.yaml", "--profile", "longer.yaml", "finetune",
                           "--method", "full", "--task", task], cwd=uninterrupted, capture_output=True, text=True,
                          env={**os.environ, **SNAKEMAKE_THREADS})
    assert done.returncode == 0, done.stderr[-2000:]
    ours, reference = (_outputs(folder) for folder in (project, uninterrupted))
    finetuned = sorted(path for path in reference if path.startswith("results/finetune/"))
    assert finetuned and [path for path in finetuned if ours.get(path) != reference[path]] == []
