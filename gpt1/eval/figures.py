"""What the figures share: a test line (solid) and a dev line (dashed) per task, and the write that keeps a figure's
bytes reproducible (no software version in its metadata) and never leaves half a file."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from gpt1.files.atomic import atomic_path


def test_and_dev_lines(axes, table: pd.DataFrame, tasks: list[str], x: str, label: Callable[[str, pd.DataFrame, str], str],
                       scale: float = 1.0) -> None:
    """Per task (one colour each, in `tasks` order) its test and dev rows of `table` (task, split, `x`, mean,
    std) as mean ± std against `x`, the values multiplied by `scale`."""
    for index, task in enumerate(tasks):
        for split, style in (("test", "-"), ("dev", "--")):
            rows = table[(table.task == task) & (table.split == split)]
            axes.errorbar(rows[x], rows["mean"] * scale, yerr=rows["std"] * scale, linestyle=style,
                          color=f"C{index}", marker="o", capsize=2, label=label(task, rows, split))


def save_figure(figure, out_png: Path) -> None:
    import matplotlib.pyplot as plt  # already imported by whoever drew the figure

    figure.tight_layout()
    with atomic_path(out_png) as temporary:
        figure.savefig(temporary, format="png", metadata={"Software": None})
    plt.close(figure)


def not_applicable(tables: list[Path], out_png: Path, reason: str) -> None:
    """An analysis's declared outputs when it does not apply (gpt1/params/applicability.py): each table one
    `not_applicable` column holding the reason, the figure the reason as text, so that whoever opens either
    reads why it is empty."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for path in tables:
        with atomic_path(path) as temporary:
            pd.DataFrame({"not_applicable": [reason]}).to_csv(temporary, index=False)
    figure, axes = plt.subplots(figsize=(6.0, 2.0))
    axes.axis("off")
    axes.text(0.5, 0.5, "not applicable:\n" + textwrap.fill(reason, 70), ha="center", va="center", fontsize=9)
    save_figure(figure, out_png)
