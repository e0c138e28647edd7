"""How far Table 5 moves with pretraining's own randomness: each model pretrained again with other seeds, every
method that starts from it fine-tuned again, and Table 5 computed from each.

    python tools/pretraining_seeds.py pretraining-seeds --project PATH --seeds 1 2

Table 5's intervals count the test examples and the fine-tuning seeds; each model is pretrained once, so they do
not count how the pretrained weights themselves vary. Run it on a project where `dvc repro ablation` has finished
(`--project`): for each of `--seeds` it copies the project's data/ and results/ into a scratch folder, pretrains the
Transformer and the LSTM there with that seed in place of params.yaml's `seed` (`gpt1 pretrain` with a profile that
sets it: weight init, window order and dropout are the seed's; the data, the BPE and every other setting stay the
project's),
records each method's starting weights (`gpt1 starting-model`), fine-tunes every method that starts from a pretrained
model on every task with every fine-tuning seed (`gpt1 finetune`, into a results/finetune emptied of those
methods' runs; `no_pretrain` does not depend on pretraining and is kept), and runs `gpt1 evaluate` and
`gpt1 ablation`. The project's own run is the first pretraining seed (params.yaml's `seed`).

It writes docs/measurements/NAME.json beside the machine (tools/measure.py's record): per pretraining seed, the
validation loss of each model, Table 5's rows and each comparison's difference, interval and verdict; per cell,
the spread over the pretraining seeds; and each comparison whose verdict changes with the pretraining seed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import FOLDER, clock, machine, write_record  # noqa: E402

# A profile that replaces the project seed, given to the pretrain command alone (through its launcher, as the stage).
SEED_PROFILE = "pretraining-seed.yaml"


def gpt1(project: Path, *arguments: str) -> None:
    done = subprocess.run(["gpt1", *arguments], cwd=project, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"gpt1 {' '.join(arguments)} failed in {project}:\n{done.stderr[-3000:]}")


def rounded(value: float) -> float | None:
    """Two decimals; None for a bound a one-sided check does not have (NaN in the CSV)."""
    return None if pd.isna(value) else round(float(value), 2)


def table(project: Path) -> dict:
    """Table 5 as the ablation stage wrote it: the rows, each comparison's interval, and the models' losses."""
    rows = pd.read_csv(project / "results/ablation.csv", index_col="method")
    intervals = pd.read_csv(project / "results/ablation_intervals.csv")
    losses = {kind: json.loads((project / f"results/pretrain/{kind}/metrics.json").read_text())["val"]["loss"]
              for kind in ("transformer", "lstm")}
    return {"val_loss": {kind: round(loss, 4) for kind, loss in losses.items()},
            "rows": {method: {column: round(float(value), 2) for column, value in row.items()}
                     for method, row in rows.iterrows()},
            "comparisons": {comparison: {row.column: {"difference": rounded(row.difference), "low": rounded(row.low),
                                                      "high": rounded(row.high), "verdict": row.verdict}
                                         for row in group.itertuples()}
                            for comparison, group in intervals.groupby("comparison", sort=False)}}


def pretrained_again(project: Path, seed: int, scratch: Path) -> dict:
    """The project's Table 5 with both models pretrained with `seed`: its table and the seconds it took."""
    from gpt1.params.schema import load_params

    copy = scratch / f"seed-{seed}"
    shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns(".dvc", ".git", ".venv"))
    params = load_params(copy / "params.yaml")
    pretrained = [name for name in params.finetune.methods if params.methods[name].starts_from is not None]
    (copy / SEED_PROFILE).write_text(f"seed: {seed}\n")
    began = time.monotonic()
    for kind in ("transformer", "lstm"):
        for folder in (copy / "data/pretrain" / kind, copy / "results/pretrain" / kind):
            shutil.rmtree(folder)  # the copy's, written by the project's run: no resume from the project's seed
        gpt1(copy, "--profile", SEED_PROFILE, "pretrain", "--kind", kind)
    pretrain_s = time.monotonic() - began
    for method in pretrained:
        gpt1(copy, "starting-model", "--method", method)
        shutil.rmtree(copy / "results/finetune" / method)  # the copy's runs from the project's model: none restored
        for task in params.data.tasks:
            gpt1(copy, "finetune", "--method", method, "--task", task)
    gpt1(copy, "evaluate")
    gpt1(copy, "ablation")
    record = {**table(copy), "pretrain_s": round(pretrain_s, 1), "wall_s": round(time.monotonic() - began, 1)}
    shutil.rmtree(copy)
    return record


def spread(tables: dict[str, dict]) -> dict:
    """Per method and column, the lowest and highest row over the pretraining seeds; per comparison and column,
    the differences' range and every verdict seen."""
    first = next(iter(tables.values()))
    rows = {method: {column: [min(t["rows"][method][column] for t in tables.values()),
                              max(t["rows"][method][column] for t in tables.values())]
                     for column in columns}
            for method, columns in first["rows"].items()}
    comparisons = {comparison: {column: {"difference": [min(t["comparisons"][comparison][column]["difference"]
                                                            for t in tables.values()),
                                                        max(t["comparisons"][comparison][column]["difference"]
                                                            for t in tables.values())],
                                         "verdicts": sorted({t["comparisons"][comparison][column]["verdict"]
                                                             for t in tables.values()})}
                                for column in columns}
                   for comparison, columns in first["comparisons"].items()}
    return {"rows": rows, "comparisons": comparisons}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--project", type=Path, required=True, help="a project where `dvc repro ablation` has run")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="pretraining seeds besides the project's")
    parser.add_argument("--note", default="", help="one sentence on what the project is (its data, its commit)")
    args = parser.parse_args(argv)
    project = args.project.resolve()
    if not (project / "results/ablation_intervals.csv").is_file():
        raise SystemExit(f"{project} has no results/ablation_intervals.csv: run `dvc repro ablation` there first")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    from gpt1.params.schema import load_params

    project_seed = load_params(project / "params.yaml").seed
    if project_seed in args.seeds or len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds: each once, and not the project's own ({project_seed}), which its run already holds")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=project, capture_output=True, text=True)
    began = time.monotonic()
    tables = {str(project_seed): table(project)}
    with tempfile.TemporaryDirectory(prefix="pretraining-seeds-") as scratch:
        for seed in args.seeds:
            tables[str(seed)] = pretrained_again(project, seed, Path(scratch))
            print(f"pretraining seed {seed}: {json.dumps(tables[str(seed)]['rows'])}", file=sys.stderr)
            wall = time.monotonic() - began  # written after each seed: a later failure keeps the seeds done
            record = {"pretraining_seeds": tables, "spread": spread(tables),
                      "verdicts_that_move": sorted(f"{comparison}: {column}"
                                                   for comparison, columns in spread(tables)["comparisons"].items()
                                                   for column, cell in columns.items() if len(cell["verdicts"]) > 1),
                      "note": args.note, "wall_s": round(wall, 1), "wall": clock(wall), "exit_status": 0,
                      "precision": "fp32", "commit": commit.stdout.strip() or None,
                      "date": time.strftime("%Y-%m-%d"), "machine": machine()}
            write_record(FOLDER / f"{args.name}.json", record)
    print(json.dumps(record["verdicts_that_move"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
