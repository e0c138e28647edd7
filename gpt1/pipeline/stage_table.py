"""The pipeline, declared once: a row per stage. The CLI, the logs, the report, a cluster and dvc.yaml are read or
written from here; the DAG engines (gpt1/pipeline/dag.py, workflow/Snakefile) read dvc.yaml, which
`python -m gpt1.pipeline.regenerate` writes from these rows (gpt1/pipeline/dvc_yaml.py).

A stage is a module of gpt1/stages named as its command (`encode-task` -> gpt1/stages/encode_task.py, which is
also dvc.yaml's stage name) with `main(args, params)`, and its row below (gpt1/pipeline/stage_spec.py says what a
row holds): its command, jobs, data dependencies and outputs, the paths built with gpt1/layout.py, where the
stages build them too. Its code dependencies are derived from its imports, and its params from the settings whose
role in the schema names the stage (`declared_params`). No stage imports this table, so editing a row re-runs only
what the regenerated dvc.yaml changes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpt1 import layout
from gpt1.kinds import KINDS, LSTM, TRANSFORMER
from gpt1.layout import LOGS
from gpt1.methods import FULL
from gpt1.params.files import DEFAULT_PARAMS
from gpt1.params.method_section import job_keys
from gpt1.params.roles import declared
from gpt1.params.schema import Params
from gpt1.pipeline.stage_spec import ITEM, KEY, Entry, OneOff, Out, StageSpec, each, flag

RESULT_FILES = layout.Results()
# The tokenized corpus, for the stages that resolve pretrain.epochs into updates (gpt1/files/tokens_meta.py).
EPOCHS_CORPUS = Entry(layout.TOKENS, "its size resolves pretrain.epochs into updates")
TASK, METHOD = each("task"), each("method")  # the job's values in the matrix stages
# Folders holding every job's output of a stage, which a later stage reads whole.
FINETUNE_RUNS = layout.RESULTS / layout.FINETUNE
LAYER_TRANSFER_RUNS = layout.layer_transfer_task(TASK).parent
TRANSFER_CURVE_RUNS = layout.transfer_curve_task(TASK).parent


def dvclive_plots(kind: str) -> Path:
    """The folder DVCLive writes a pretraining's curves into (<metric>.tsv, e.g. val/loss.tsv)."""
    return layout.pretraining_metrics(kind) / "plots" / "metrics"


STAGES: dict[str, StageSpec] = {  # by command, in the pipeline's order
    "user-files": StageSpec(
        "fingerprint each stage's code, and the files behind params' paths (user data, import_from, init_from)",
        why="Files behind paths in params live outside the project, where DVC sees only the path strings: this stage "
            "fingerprints them on every run (always_changed) and rewrites a fingerprint only when it changes, so a "
            "replaced file re-runs exactly the stages that read it (gpt1/stages/user_files.py). It checks the user's "
            "own data first: a bad file stops the pipeline before `prepare` is reached, so nothing earlier is removed; "
            "its own fingerprints persist (DVC leaves them in place while it runs).",
        always_changed=True,
        outputs=tuple(Out(layout.user_files_record(setting), cache=False, persist=True)
                      for setting in ("local_paths", "user_data", "import_from", "init_from"))),  # and the code's
    "download": StageSpec(
        "fetch the corpus and task files (sha256-pinned, cached)",
        deps=(layout.user_files_record("local_paths"),),
        outputs=(Out(layout.RAW, note="Cached and pushed like every other output, so that a clone which `dvc "
                                      "pull`s re-runs nothing upstream and needs no internet (and the paper profile's "
                                      "archives outlive their upstream URLs); docs/experiments.md."),)),
    "prepare": StageSpec(
        "clean, deduplicate, decontaminate and split the corpus; split the tasks", work="text",
        deps=(Entry(layout.user_files_record("user_data"), "the files of data.user_tasks and data.user_corpus"),
              layout.RAW),
        outputs=(Out(layout.TASKS), Out(layout.CORPUS))),
    "bpe": StageSpec(
        "train GPT-1's BPE on the training corpus", work="text",
        deps=(layout.user_files_record("import_from"), layout.CORPUS), outputs=(Out(layout.BPE),)),
    "tokenize": StageSpec(
        "encode the corpus splits to memory-mappable token arrays", work="text",
        deps=(layout.CORPUS, layout.BPE), outputs=(Out(layout.TOKENS),)),
    "encode-task": StageSpec(
        "encode one task's fine-tuning examples as BPE ids, once for all its jobs", options=True,
        jobs={"task": "data.tasks"},
        why="A task's fine-tuning samples as BPE ids, once for all its fine-tuning, layer-transfer and curve jobs "
            "(they load neither the BPE nor spaCy, and depend on their own task only); gpt1/model/task_tokens.py.",
        deps=(layout.TASKS, layout.BPE), outputs=(Out(layout.task_tokens(TASK)),)),
    "pretrain": StageSpec(
        "pretrain the Transformer or the LSTM (resumes after interruption)", work="training", options=True,
        jobs={"kind": {TRANSFORMER: "model", LSTM: "lstm"}},  # each kind's section of params
        report="Pretraining",
        deps=(layout.user_files_record("init_from"), layout.TOKENS),
        params=(Entry(ITEM, "the job's model section"), Entry(f"pretrain.{KEY}", "and its optimiser's")),
        outputs=(Out(layout.pretrained_model(KEY), note="resume.pt and the unfinished run's checkpoints live beside "
                     "these, undeclared, so that a re-run after an interruption (which deletes declared outputs first) "
                     "still finds them."),
                 Out(layout.pretraining_checkpoints(KEY)),
                 Out(layout.pretraining_metrics(KEY) / "metrics.json", cache=False, note="DVCLive's summary (sizes, "
                     "device, timings, the last training loss): a file to read, not DVC metrics, so that `dvc exp "
                     "show` lists only the validation loss of each model (headline.json)"),
                 Out(layout.pretraining_headline(KEY), "metrics", cache=False),
                 Out(dvclive_plots(KEY), "plots", cache=False))),
    "starting-model": StageSpec(
        "record the weights a fine-tuning method starts from (path and sha256)", options=True,
        jobs={"method": "finetune.methods"},
        why="The weights each method starts from, by path and sha256 (none for a random start): a finetune job depends "
            "on its method's record, so retraining one model re-runs only the jobs that start from it (the jobs of a "
            "matrix stage share one list of dependencies; gpt1/train/starting_weights.py).",
        deps=tuple(layout.pretrained_model(kind) for kind in KINDS),
        outputs=(Out(layout.starting_model_record(METHOD)),)),
    "finetune": StageSpec(
        "fine-tune one method on one task, every seed, with the paper's input transformations", work="training",
        options=True, jobs={"method": "finetune.methods", "task": "data.tasks"},
        one_off=OneOff(None, lambda given: layout.finetune_run(given["task"], given["method"], given["seed"],
                                                                layout.ONE_OFF)),
        why="One job per (method, task) runs every seed of finetune.seeds: a cluster runs them side by side, a job is "
            "one task's size, and retraining one pretrained model re-runs only the jobs of the methods that start "
            "from it. A task scored with another's models (mnli_mm with mnli's) is scored by that task's job, into "
            "its output.",
        deps=(layout.task_tokens(TASK),
              Entry(layout.starting_model_record(METHOD), "and through it, the weights it starts from")),
        outputs=(Out(layout.finetune_runs(TASK, METHOD)),)),
    "layer-transfer": StageSpec(
        "fine-tune one task with only the first k pretrained blocks transferred, every k and seed", work="training",
        options=True, jobs={"task": "analysis.layer_transfer_tasks"},
        one_off=OneOff("layers", lambda given: layout.layer_transfer_run(given["task"], given["layers"], given["seed"],
                                                                         layout.ONE_OFF)),
        why="One process per task runs every k of analysis.layer_transfer_layers (k < model.n_layer, validated; "
            "layer_figure reuses finetune's full run as k = n_layer) and every seed of analysis.layer_transfer_seeds.",
        deps=(layout.task_tokens(TASK), layout.pretrained_model(TRANSFORMER)),
        outputs=(Out(layout.layer_transfer_task(TASK)),)),
    "transfer-curve": StageSpec(
        "fine-tune one task's full from each pretraining checkpoint, every seed", work="training", options=True,
        jobs={"task": "analysis.transfer_curve_tasks"},
        one_off=OneOff("step", lambda given: layout.transfer_curve_run(given["task"], given["step"], given["seed"],
                                                                       layout.ONE_OFF)),
        why="full fine-tuned from the checkpoints kept after pretraining updates S (analysis.transfer_curve_steps: "
            "kept checkpoints below the last update, validated), every S and every analysis.layer_transfer_seeds in "
            "one process per task; the curve's ends (0 and the last update) are the finetune stage's no_pretrain and "
            "full runs.",
        deps=(layout.task_tokens(TASK), layout.pretraining_checkpoints(TRANSFORMER), EPOCHS_CORPUS),
        outputs=(Out(layout.transfer_curve_task(TASK)),)),
    "baselines": StageSpec(
        "majority-class and TF-IDF + logistic regression baselines",
        deps=(layout.TASKS,), outputs=(Out(RESULT_FILES.baselines),)),
    "evaluate": StageSpec(
        "gather every test metric into results/scores*.csv; the headline into results/metrics.json", report="Table 5",
        deps=(FINETUNE_RUNS, RESULT_FILES.baselines, Entry(layout.TASKS, "each task's spec: its primary metric")),
        outputs=(Out(RESULT_FILES.scores), Out(RESULT_FILES.scores_summary),
                 Out(RESULT_FILES.evaluation_metrics, "metrics", cache=False))),
    "encode-zeroshot": StageSpec(
        "the zero-shot heuristics' candidates as BPE ids, for every checkpoint",
        why="Split from zeroshot so that scoring the checkpoints needs neither the BPE nor spaCy (a GPU machine's "
            "bundle carries the candidates), and a new checkpoint re-scores without re-encoding.",
        deps=(layout.RAW, layout.TASKS, layout.BPE),
        outputs=(Out(layout.zero_shot_tasks()),)),
    "zeroshot": StageSpec(
        "zero-shot heuristics over the pretraining checkpoints (Figure 2, right)", report="Figure 2",
        deps=(layout.zero_shot_tasks(), *(layout.pretraining_checkpoints(kind) for kind in KINDS),
              *(layout.pretrained_model(kind) for kind in KINDS), EPOCHS_CORPUS),
        outputs=(Out(RESULT_FILES.zero_shot), Out(RESULT_FILES.zero_shot_trend, cache=False),
                 Out(RESULT_FILES.zero_shot_plot, "plots", cache=False))),
    "ablation": StageSpec(
        "Table 5 and full vs the baselines: results/ablation*.csv, ablation.md", report="Table 5",
        deps=(RESULT_FILES.scores_summary, FINETUNE_RUNS, RESULT_FILES.baselines, layout.TASKS),
        outputs=tuple(Out(path, cache=False) for path in (
            RESULT_FILES.ablation, RESULT_FILES.ablation_std, RESULT_FILES.ablation_intervals,
            RESULT_FILES.ablation_markdown, RESULT_FILES.ablation_baselines))),
    "paper-tables": StageSpec(
        "the paper's Tables 2-4 beside ours: results/paper_tables.csv and .md", report="Tables 2-4",
        why="The paper's Tables 2-4 beside `full`'s test scores, with their intervals (every seed's run is read)",
        deps=(FINETUNE_RUNS, layout.TASKS),
        outputs=(Out(RESULT_FILES.paper_tables, cache=False), Out(RESULT_FILES.paper_tables_markdown, cache=False))),
    "layer-figure": StageSpec(
        "Figure 2 (left): results/layer_transfer.csv, _trend.csv and .png", report="Figure 2",
        deps=(LAYER_TRANSFER_RUNS, Entry(FINETUNE_RUNS, "k = model.n_layer (every block) is the finetune stage's full "
                                                        "run, read rather than re-trained")),
        outputs=(Out(RESULT_FILES.layer_transfer, cache=False), Out(RESULT_FILES.layer_transfer_trend, cache=False),
                 Out(RESULT_FILES.layer_transfer_plot, "plots", cache=False))),
    "transfer-figure": StageSpec(
        "transfer over pretraining: results/transfer_curve.csv, _trend.csv and .png",
        report="Transfer over pretraining",
        deps=(TRANSFER_CURVE_RUNS, Entry(FINETUNE_RUNS, "the curve's ends: no_pretrain (0 updates) and full (the last "
                                                        "update), read rather than re-trained"), layout.TASKS,
              EPOCHS_CORPUS),
        outputs=(Out(RESULT_FILES.transfer_curve, cache=False), Out(RESULT_FILES.transfer_curve_trend, cache=False),
                 Out(RESULT_FILES.transfer_curve_plot, "plots", cache=False))),
}


def declared_params(command: str, params: type[Params] = Params) -> tuple[str | Entry, ...]:
    """The settings whose role in the schema names stage `command` (gpt1/params/roles.py), in the schema's order,
    then the fields of the one method's entry its job reads (gpt1/params/method_section.py): its own method's where
    its jobs differ by method, else full's."""
    method = METHOD if "method" in STAGES[command].jobs else FULL
    keys = tuple(key if role.note(command) is None else Entry(key, role.note(command))
                 for key, role in declared(params) if command in role.stages)
    return keys + job_keys(command, method)


# A row lists only the params its jobs differ by; every setting declares the stages it shapes in the schema and is
# added from there, so a new one reaches every stage it shapes with no row edited.
STAGES = {command: replace(spec, params=(*spec.params, *declared_params(command))) for command, spec in STAGES.items()}


def loss_plot(split: str) -> dict:
    """Both models' pretraining loss on one split (val, train) by update: DVCLive's loss.tsv has columns step, loss."""
    return {"template": "linear", "x": "step",
            "y": {str(dvclive_plots(kind) / split / "loss.tsv"): "loss" for kind in KINDS}}


# dvc.yaml's top-level plots: what `dvc plots show` draws besides the plots the stages declare.
PLOTS = (
    {"Pretraining validation loss": loss_plot("val")},
    {"Pretraining training loss": loss_plot("train")},
    Entry({"Table 5, test average per method (x100, mean over seeds)": {
        "template": "bar_horizontal", "x": "avg", "y": {str(RESULT_FILES.ablation): "method"}}},
        "The figures are declared as their stages' plots (listed here too, `dvc plots show` would draw them twice)."),
)
METRICS = Entry(
    (RESULT_FILES.evaluation_metrics, *(layout.pretraining_headline(kind) for kind in KINDS)),
    "What `dvc exp show` and `dvc metrics diff` compare, kept to a handful so that the table reads at a glance: "
    "Table 5's average per method and full's score per task (evaluate), each model's pretraining validation loss. "
    "Every other number is in files beside them (results/scores*.csv, results/pretrain/*/metrics.json) and in the "
    "plots.")


def module_name(command: str) -> str:
    """The stage's module under gpt1.stages, also its dvc.yaml name: `encode-task` -> `encode_task`."""
    return command.replace("-", "_")


def _with_code_fingerprints(spec: StageSpec) -> StageSpec:
    """user-files' row with the code fingerprint of every other stage among its outputs: it refreshes them each run
    (gpt1/pipeline/code_fingerprint.py), before DVC reaches the stages that depend on them. Tracked with git (not
    cached), and kept in place while it runs."""
    note = ("Each stage's code fingerprint, refreshed here on every run so that a code edit shows before any stage "
            "runs (gpt1/pipeline/code_fingerprint.py); committed with the code.")
    prints = [Out(layout.code_fingerprint(module_name(command)), cache=False, persist=True)
              for command, row in STAGES.items() if not row.always_changed]
    return replace(spec, outputs=(*spec.outputs, replace(prints[0], note=note), *prints[1:]))


STAGES["user-files"] = _with_code_fingerprints(STAGES["user-files"])

def command_of(stage_name: str) -> str:
    """The command of a dvc.yaml stage (`finetune@full` -> `finetune`)."""
    return stage_name.split("@")[0].replace("_", "-")


def one_off_command(command: str, values: dict) -> str:
    """The command line that runs one seed of a fine-tuning job alone (a one-off run, gpt1/pipeline/one_off.py): the
    params file and profiles it was given, then the options naming its job in the row's order, its one-off option and
    --seed. `values`: the options by name (argparse's dests). The CLI hands it to the stage, which hands it to each
    run's model card; like the log's name, it is the CLI's, so editing it re-runs no stage (a job spells it anew)."""
    spec = STAGES[command]
    chosen = [] if Path(values.get("params") or DEFAULT_PARAMS) == DEFAULT_PARAMS else [f"--params {values['params']}"]
    chosen += [f"--profile {profile}" for profile in values.get("profile") or ()]
    options = (*spec.jobs, *([spec.one_off.option] if spec.one_off.option else []), "seed")
    return " ".join(["gpt1", *chosen, command,
                     *(f"{flag(option)} {values[option]}" for option in options)])


def job_log(command: str, values: dict) -> Path:
    """One log per job, so parallel jobs never share a file (the Snakefile declares the same names): by the options
    that name the job (logs/finetune/full/rt_polarity.log), and a one-off `--seed` run in its own file beside where
    its folder goes (logs/finetune/full/rt_polarity/seed7.log), so it never overwrites the job's log.
    `values`: the command's options by name (None where not given). A tool (`gpt1 benchmark`) logs as a plain stage."""
    spec = STAGES.get(command, StageSpec(help=""))
    if not spec.jobs:
        return LOGS / f"{command}.log"
    if spec.one_off is not None and values.get("seed") is not None:
        run = spec.one_off.run(values).relative_to(layout.ONE_OFF)
        return LOGS / run.with_name(f"{run.name}.log")
    job = LOGS.joinpath(module_name(command), *(str(values[option]) for option in spec.jobs))
    return job.with_name(f"{job.name}.log")
