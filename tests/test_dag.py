"""The stage table is the one declaration of the DAG: dvc.yaml is generated from its rows (each stage depending on
exactly the code it imports), gpt1/pipeline/dag.py resolves dvc.yaml as DVC does, and the Snakefile's rules are built
from that resolution."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from dag_views import dvc_stages, snakemake_jobs
from gpt1.pipeline import dag
from gpt1.params.files import compose_raw

ROOT = Path(__file__).resolve().parents[1]
PROFILES = {"default": (), "tiny": ("profiles/tiny.yaml",), "paper": ("profiles/paper.yaml",),
            "paper+tiny": ("profiles/paper.yaml", "profiles/tiny.yaml"),
            "paper+released": ("profiles/paper.yaml", "profiles/released.yaml"), "trial": ("profiles/trial.yaml",)}


def composed(profile: str) -> dict:
    return compose_raw(ROOT / "params.yaml", [ROOT / path for path in PROFILES[profile]])[0]


def _as_json(value) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("profile", PROFILES)
def test_our_resolution_is_dvcs(profile, tmp_path):
    """For every shipped profile, gpt1/pipeline/dag.py expands dvc.yaml exactly as DVC does (foreach, matrix, ${})."""
    from dvc.repo import Repo

    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    params = composed(profile)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    Repo.init(str(tmp_path), no_scm=True).close()
    theirs = dvc_stages(tmp_path)
    ours = {stage.name: stage for stage in dag.resolve(ROOT / "dvc.yaml", params)}
    assert set(ours) == set(theirs)
    for name, stage in ours.items():
        view = theirs[name]
        assert stage.command == view.command, name
        assert frozenset(stage.deps) == view.deps and frozenset(stage.outs) == view.outs, name
        assert frozenset(_as_json(dag.lookup(params, key)) for key in stage.params) == view.params, name


def _job_paths():
    """{stage: its job's values -> (every data/ path the job reads, or None where not checked; outputs it declares)},
    from gpt1/layout.py given the values themselves, as the stages' modules call it."""
    from gpt1 import layout
    from gpt1.kinds import TRANSFORMER

    return {"encode_task": lambda task: (None, [layout.task_tokens(task)]),
            "pretrain": lambda key: (None, [layout.pretrained_model(key), layout.pretraining_checkpoints(key),
                                            layout.pretraining_headline(key)]),
            "starting_model": lambda method: (None, [layout.starting_model_record(method)]),
            "finetune": lambda method, task: ([layout.task_tokens(task), layout.starting_model_record(method)],
                                              [layout.finetune_runs(task, method)]),
            "layer_transfer": lambda task: ([layout.task_tokens(task), layout.pretrained_model(TRANSFORMER)],
                                            [layout.layer_transfer_task(task)]),
            "transfer_curve": lambda task: ([layout.task_tokens(task), layout.pretraining_checkpoints(TRANSFORMER),
                                             layout.TOKENS], [layout.transfer_curve_task(task)])}


@pytest.mark.parametrize("profile", PROFILES)
def test_each_job_reads_and_writes_where_gpt1_layout_puts_its_own_values(profile):
    """A row builds its paths by handing gpt1/layout.py DVC's placeholders (`${item.task}`); resolved for a job, they
    must be the paths the same functions give for the job's values, where its command writes and reads: a fine-tuning
    job reads only its own task's tokens and its own method's weights (by their record), never another job's."""
    paths, checked = _job_paths(), 0
    for template in dag.templates(ROOT / "dvc.yaml", composed(profile)):
        if template.name not in paths:
            continue
        for values, stage in template.instances.items():
            reads, writes = paths[template.name](*values)
            data = [dep for dep in stage.deps if dep.startswith("data/")]
            assert reads is None or data == [str(path) for path in reads], (stage.name, data)
            assert all(str(path) in stage.outs for path in writes), (stage.name, stage.outs)
            checked += 1
    assert checked > len(paths)


@pytest.mark.parametrize("profile", PROFILES)
def test_snakemake_declares_the_log_each_command_writes(profile):
    """The Snakefile's `log:` of a rule, with a job's wildcards, is the file that job's command logs to."""
    from gpt1.cli import build_parser, log_path

    parser, count = build_parser(), 0
    for template in dag.templates(ROOT / "dvc.yaml", composed(profile)):
        for values, stage in template.instances.items():
            declared = template.log().format(**dict(zip(template.wildcards, values)))
            assert declared == str(log_path(parser.parse_args(stage.command.split()[1:]))), stage.name
            count += 1
    assert count == len(dag.resolve(ROOT / "dvc.yaml", composed(profile)))


@pytest.mark.parametrize("profile", ["default", "paper+tiny"])
def test_snakemake_runs_every_resolved_stage_with_the_same_command_files_and_params(profile):
    params = composed(profile)
    stages = dag.resolve(ROOT / "dvc.yaml", params)
    jobs = snakemake_jobs(ROOT, configfiles=tuple(ROOT / path for path in PROFILES[profile]))
    flags = "".join(f"--profile {path} " for path in PROFILES[profile])
    assert len(jobs) == len(stages)  # `rule all` reaches every stage
    for stage in stages:
        job = jobs[stage.command.replace("gpt1 ", f"gpt1 {flags}", 1)]
        # the code fingerprints are Snakemake's source files, refreshed by the Snakefile itself (workflow/Snakefile)
        assert job.outs == frozenset(out for out in stage.outs if not dag.is_code_fingerprint(out)), stage.name
        assert job.deps == frozenset(dag.inputs(stage, stages)), stage.name
        assert job.params == frozenset(_as_json(dag.lookup(params, key)) for key in stage.params), stage.name


def test_a_folder_dependency_becomes_the_runs_inside_it():
    stages = dag.resolve(ROOT / "dvc.yaml", composed("default"))
    ablation = next(stage for stage in stages if stage.name == "ablation")
    runs = dag.inputs(ablation, stages)
    assert "results/finetune" in ablation.deps and "results/finetune" not in runs
    assert "results/finetune/no_pretrain/sts_b" in runs and "results/scores_summary.csv" in runs


def test_snakemake_refuses_config_overrides_that_the_commands_would_not_see():
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, Quietness, ResourceSettings

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        with pytest.raises(Exception, match="--config overrides do not reach the gpt1 commands"):
            api.workflow(resource_settings=ResourceSettings(cores=1), config_settings=ConfigSettings(
                config={"seed": 3}), snakefile=ROOT / "workflow" / "Snakefile", workdir=ROOT).dag()


def test_dvc_yaml_is_what_the_stage_table_gives():
    """dvc.yaml is written from gpt1/pipeline/stage_table.py's rows, never by hand."""
    from gpt1.pipeline import regenerate

    written = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    assert regenerate.dvc_yaml_text() == written, f"dvc.yaml is stale: run `{regenerate.REGENERATE}`"


def test_the_committed_code_fingerprints_are_the_codes():
    """Each stage depends on its code fingerprint (code_fingerprints/<stage>.txt), derived from the modules its imports
    reach: a commit whose fingerprints lag its code would leave a fresh clone's `dvc status` blind to the edit until
    user_files ran."""
    from gpt1.pipeline import code_fingerprint, regenerate

    assert not code_fingerprint.stale(ROOT, ROOT), f"code_fingerprints/ is stale: run `{regenerate.REGENERATE}`"
    files = {path.stem for path in (ROOT / "code_fingerprints").glob("*.txt")}
    stages = dag.resolve(ROOT / "dvc.yaml", composed("default"))
    expected = {stage.declared for stage in stages if stage.declared != "user_files"}
    assert files == set(code_fingerprint.stages(ROOT)) == expected
    for stage in stages:
        prints = [dep for dep in stage.deps if dag.is_code_fingerprint(dep)]
        assert prints == ([] if stage.declared == "user_files" else [f"code_fingerprints/{stage.declared}.txt"])
        assert not [dep for dep in stage.deps if dep.endswith(".py")], stage.name  # the modules' bytes are not deps


def closure(module: str) -> set[str]:
    from gpt1.pipeline import code_deps

    return code_deps.closure(ROOT, module)


def test_the_import_walk_sees_late_imports_and_the_neutral_modules_exist():
    from gpt1.pipeline import code_deps

    assert "data.registry" in code_deps.imports_of(ROOT, "stages.download")  # imported inside a function
    assert "train.finetune" in code_deps.imports_of(ROOT, "stages.finetune")  # `from gpt1.train.finetune import ...`
    assert {"tokenizer.bpe", "data.cleanup"} <= closure("stages.encode_task")  # through model.task_encoding
    # Fine-tuning reads encode-task's ids: a change to the tokenizer re-runs the encoding, not every job.
    assert not {"tokenizer.bpe", "data.cleanup", "files.parallel"} & closure("stages.finetune")
    assert "data.registry" in code_deps.imports_of(ROOT, "data.prepare")  # `from gpt1.data import packaged, registry`
    assert all(code_deps.source_of(ROOT, module).is_file() for module in code_deps.NEUTRAL)


def test_the_slurm_profile_sets_resources_of_rules_that_exist_and_of_every_training_rule():
    """Snakemake names its rules after dvc.yaml's stages; a renamed stage must not leave the GPU settings behind."""
    profile = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())
    names = {template.name: template for template in dag.templates(ROOT / "dvc.yaml", composed("default"))}
    assert set(profile["set-resources"]) <= set(names)
    training = {name for name, template in names.items() if template.spec.trains}
    assert training == {name for name, values in profile["set-resources"].items() if values.get("gpu")}


def test_results_are_computed_here_never_taken_from_a_commit_yet_can_be_committed():
    """Snakemake takes any file that is present for up to date, so a committed table would stop
    `snakemake results/ablation.csv` from computing one (the default's measured copy is docs/results/).
    The outputs DVC keeps out of its cache (`cache: false`: metrics, tables, figures) are not ignored either:
    after `make repro`, `git add results && git commit` gives `dvc exp show` a filled baseline row."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert not tracked, f"generated outputs are committed: {tracked[:5]}; `git rm --cached` them"
    small = [path for stage in dag.resolve(ROOT / "dvc.yaml", composed("default")) for path in stage.outs
             if path.startswith("results/") and not path.startswith("results/finetune")
             and not path.startswith("results/layer_transfer/")]
    assert len(small) >= 10
    ignored = subprocess.run(["git", "check-ignore", *small], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert not ignored, f"{ignored} are git-ignored: `dvc exp show` could never show them for a commit"


def test_snakemake_gives_every_core_to_the_jobs_that_use_them():
    """Training (torch threads) and the text stages (worker processes) use every core: Snakemake must not run
    another job beside them, or both crawl."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import OutputSettings, Quietness, ResourceSettings

    cores = 3
    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        rules = api.workflow(resource_settings=ResourceSettings(cores=cores), snakefile=ROOT / "workflow" / "Snakefile",
                             workdir=ROOT)._workflow.rules
        threads = {rule.name: getattr(rule.resources["_cores"], "value", rule.resources["_cores"]) for rule in rules}
    for template in dag.templates(ROOT / "dvc.yaml", composed("default")):
        expected = cores if template.spec.uses_every_core else 1
        assert threads[template.name] == expected, (f"rule {template.name} ({template.spec.work} work) runs with "
                                                    f"{threads[template.name]} threads, not {expected}")
    assert {1, cores} <= set(threads.values())  # some rules of each kind, so the check compares something


def test_the_committed_lock_records_only_stages_dvc_yaml_declares():
    """`dvc repro` never drops the lock entries of stages dvc.yaml no longer declares (a renamed or merged stage):
    left there, they grow the file DVC parses and rewrites at every job, and mislead a reader of the lock."""
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text())
    declared = {stage.name for stage in dag.resolve(ROOT / "dvc.yaml", composed("default"))}
    stale = sorted(set(lock["stages"]) - declared)
    assert not stale, f"dvc.lock records stages dvc.yaml does not declare: {stale[:5]}; remove their entries"


def test_top_level_plots_name_the_columns_dvclive_writes():
    """DVCLive writes <metric>.tsv with the columns step and the metric's last name (`loss`, not `val/loss`);
    a y field it does not write leaves `dvc plots show` without the curve (it only warns)."""
    plots = yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]
    curves = [entry for plot in plots if isinstance(plot, dict) for entry in plot.values()
              if all(path.endswith(".tsv") for path in entry["y"])]
    assert curves
    for curve in curves:
        assert curve["x"] == "step"
        for path, field in curve["y"].items():
            assert path.startswith("results/pretrain/") and field == Path(path).stem, (path, field)


def test_the_table5_plot_reads_columns_the_ablation_table_has():
    """Table 5's averages as a bar chart: method and avg are the first columns `gpt1 ablation` writes."""
    plots = yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]
    (bars,) = [entry for plot in plots if isinstance(plot, dict) for entry in plot.values()
               if entry.get("template") == "bar_horizontal"]
    assert bars["y"] == {"results/ablation.csv": "method"} and bars["x"] == "avg"
    assert (ROOT / "docs/results/ablation.csv").read_text().splitlines()[0].startswith("method,avg,")


@pytest.mark.parametrize("page", ["README.md", "docs/pipeline.md"])
def test_the_generated_docs_are_what_dvc_yaml_and_the_stage_table_give(page):
    """The README's Mermaid drawing of the DAG (`dag.drawing`) and docs/pipeline.md's table of stages
    (`dag.stage_table_markdown`) are generated from dvc.yaml and gpt1/pipeline/stage_table.py: a stage, dependency,
    output or help text that the page lacks fails here."""
    from gpt1.pipeline import regenerate

    markers, part = regenerate.generated(ROOT)[ROOT / page]
    written = regenerate.split((ROOT / page).read_text(encoding="utf-8"), markers)[1]
    assert written == part, f"{page} is stale: run `{regenerate.REGENERATE}`"




def test_a_new_stage_is_its_module_one_row_and_the_roles_of_its_settings(tmp_path):
    """In a copy of the project, a stage added by its module, its row in gpt1/pipeline/stage_table.py and its name in
    the role of the setting it reads (gpt1/params/schema.py), gets its dvc.yaml entry from `python -m
    gpt1.pipeline.regenerate` (its command, data dependencies, the code it imports and all behind that, its params and
    outputs; every other entry as it was) and its row in docs/pipeline.md; Snakemake plans it with its log and
    threads, and the CLI runs it with its own log. Its name is one no real stage would take, so the copy gains a stage
    rather than replacing one."""
    import os
    import subprocess
    import sys

    for name in ("gpt1", "workflow", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    for name in ("params.yaml", "dvc.yaml", "README.md", "docs/pipeline.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "gpt1/stages/example_stage.py").write_text(
        '"""Stage `example-stage`: the project seed (it imports the BPE, so its entry lists the BPE\'s code)."""\n\n'
        "from pathlib import Path\n\n"
        "from gpt1.tokenizer import bpe\n\n\n"
        "def main(args, params) -> None:\n"
        "    Path('results').mkdir(exist_ok=True)\n"
        "    Path('results/example_stage.txt').write_text(str(params.seed))\n")
    table = tmp_path / "gpt1/pipeline/stage_table.py"
    opening = "STAGES: dict[str, StageSpec] = {  # by command, in the pipeline's order\n"
    table.write_text(table.read_text().replace(opening, opening + (
        '    "example-stage": StageSpec("write the seed", work="text", report="Corpus", why="An example.",\n'
        '                               deps=(layout.TASKS,),\n'
        '                               outputs=(Out(layout.RESULTS / "example_stage.txt", cache=False),)),\n')))
    schema = tmp_path / "gpt1/params/schema.py"
    seed_role = 'stages=("prepare", "encode-task"'
    assert schema.read_text().count(seed_role) == 1
    schema.write_text(schema.read_text().replace(seed_role, 'stages=("example-stage", "prepare", "encode-task"'))
    environment = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(*command: str) -> str:
        done = subprocess.run([sys.executable, "-m", *command], cwd=tmp_path, env=environment, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr + done.stdout
        return done.stdout

    run("gpt1.pipeline.regenerate")
    text = (tmp_path / "dvc.yaml").read_text()
    assert "  example_stage:\n    # An example.\n    desc: write the seed\n    cmd: gpt1 example-stage\n" in text
    stages = yaml.safe_load(text)["stages"]
    entry = stages.pop("example_stage")
    assert entry["deps"] == ["data/tasks", "code_fingerprints/example_stage.txt"]
    code = (tmp_path / "code_fingerprints/example_stage.txt").read_text()
    assert "  gpt1/stages/example_stage.py\n" in code
    assert "  gpt1/tokenizer/bpe.py\n" in code and "  gpt1/data/cleanup.py\n" in code  # what it imports, and behind
    assert entry["params"] == ["seed"] and entry["outs"] == [{"results/example_stage.txt": {"cache": False}}]
    fingerprint = {"code_fingerprints/example_stage.txt": {"cache": False, "persist": True}}
    assert fingerprint in stages["user_files"]["outs"]  # refreshed first on every run
    stages["user_files"]["outs"].remove(fingerprint)
    assert stages == yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert "| example_stage | 1 | `gpt1 example-stage` | write the seed | `data/tasks/` |" in (
        tmp_path / "docs/pipeline.md").read_text()
    plan = run("snakemake", "-n", "--cores", "3", "results/example_stage.txt")
    assert "rule example_stage:" in plan and "log: logs/example-stage.log" in plan
    assert "threads: 3" in plan.split("rule example_stage:")[1].split("\nrule ")[0]  # text work: every core
    run("gpt1.cli", "example-stage")
    assert (tmp_path / "results/example_stage.txt").read_text() == "1234"
    assert (tmp_path / "logs/example-stage.log").is_file()


def test_the_generator_never_writes_over_a_hand_edit_of_dvc_yaml(tmp_path):
    """dvc.yaml records the sha256 of what the generator wrote: a hand edit that changes a stage stops the generator
    with what to do, the file as the user left it; one that changes only comments is written over."""
    from gpt1.pipeline import regenerate

    for name in ("gpt1", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    for name in ("params.yaml", "dvc.yaml", "README.md", "docs/pipeline.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    dvc_yaml = tmp_path / "dvc.yaml"
    edited = dvc_yaml.read_text().replace("cmd: gpt1 bpe\n", "cmd: gpt1 bpe --my-option\n")
    dvc_yaml.write_text(edited)
    with pytest.raises(SystemExit, match="was edited by hand .* make it in gpt1/pipeline/stage_table.py's rows"):
        regenerate.main(tmp_path)
    assert dvc_yaml.read_text() == edited
    dvc_yaml.write_text((ROOT / "dvc.yaml").read_text().replace("stages:\n", "# my note\nstages:\n"))
    regenerate.main(tmp_path)
    assert dvc_yaml.read_text() == (ROOT / "dvc.yaml").read_text()
