"""What the default's data come to, from a project where the main job has run, into docs/measurements/NAME.json.

    python tools/record_default_data.py default-data --project /path/to/a/clone

It reads what the pipeline wrote: each corpus part's documents and bytes (`data/corpus/stats.json`), each task's
split sizes (`data/tasks/<task>/stats.json`), and, from the downloaded Rotten Tomatoes file, how many snippets the
loader drops for a mean rating of 0. docs/data.md's tables quote this file; tests/test_data_page.py holds them to it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

RT_FILE = Path("data/raw/vader/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt")


def rt_polarity_zero_rated(project: Path) -> int:
    from gpt1.data.packaged import load_rt_polarity

    rows = len((project / RT_FILE).read_text(encoding="utf-8").splitlines())
    return rows - len(load_rt_polarity(project / "data" / "raw")["train"])


def commit_of(project: Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=project, capture_output=True, text=True,
                          check=True).stdout.strip()


def default_data(project: Path) -> dict:
    corpus = json.loads((project / "data/corpus/stats.json").read_text())
    tasks = {folder.name: json.loads((folder / "stats.json").read_text())["examples"]
             for folder in sorted((project / "data/tasks").iterdir()) if (folder / "stats.json").is_file()}
    return {"corpus": {part: {"documents": stats["documents"], "train_bytes": stats["train_bytes"],
                              "val_bytes": stats["val_bytes"]} for part, stats in corpus.items()},
            "tasks": tasks, "rt_polarity_zero_rated": rt_polarity_zero_rated(project)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--project", type=Path, required=True, help="a checkout where `dvc repro` has run")
    args = parser.parse_args(argv)
    missing = [path for path in ("data/corpus/stats.json", "data/tasks", RT_FILE)
               if not (args.project / path).exists()]
    if missing:
        raise SystemExit(f"{args.project} lacks {', '.join(map(str, missing))}: run `dvc repro` there first")
    start = time.monotonic()
    figures = default_data(args.project)
    record = {**figures, "wall_s": round(time.monotonic() - start, 1), "exit_status": 0,
              "precision": "counts (no training)",
              "commit": commit_of(args.project), "date": datetime.date.today().isoformat(),
              "machine": measure.machine()}
    target = measure.FOLDER / f"{args.name}.json"
    measure.write_record(target, record)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
