"""Every measured figure the README and docs/ quote is held by a measurement file of the repository.

A figure is a number with the unit of a measurement: a clock time (41:32), minutes, seconds, hours, GPU-hours,
GB, tokens/s, % MFU, a speed ratio (1.13×). The measurement files are docs/measurements/*.json (written by
tools/measure.py: machine, CPU flags, precision, commit, date) and the JSON the GPU check and the default's
pretraining wrote under docs/results/. A page may round a figure, or give seconds in minutes or hours; it may not
quote one that no file holds. Code (spans and blocks) quotes commands, configuration and program output, not
measurements, and is left to the tests of those (tests/test_doc_commands.py, tests/test_plan.py); docs/history/
keeps what was measured once, and docs/results/ is written by the pipeline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MEASUREMENTS = [*sorted((ROOT / "docs" / "measurements").glob("*.json")),
                *sorted((ROOT / "docs" / "results" / "gpu").rglob("*.json")),
                *sorted((ROOT / "docs" / "results").glob("pretrain_*_metrics.json"))]

NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
# unit → how a stored value may be shown in it (values are stored in seconds, GB, tokens/s, fractions or %).
UNITS = {
    "s": (1,), "seconds": (1,), "ms": (1000, 1), "min": (1 / 60, 1), "minutes": (1 / 60, 1),
    "h": (1 / 3600, 1), "hours": (1 / 3600, 1), "GPU-hours": (1 / 3600, 1),
    "GB": (1,), "GiB": (1,), "MB": (1000, 1), "tokens/s": (1,), "%MFU": (100, 1), "×": (1,),
}
FIGURE = re.compile(
    rf"(?<![\w.:/-])(?:(?P<clock>\d{{1,2}}:\d{{2}}(?::\d{{2}})?)(?![\d:])"
    rf"|{NUMBER}\s?(?P<unit>GPU-hours|minutes|seconds|hours|tokens/s|min|ms|GiB|GB|MB|s|h)(?![\w/-])"
    rf"|{NUMBER}\s?%\s?(?P<mfu>MFU)"
    rf"|{NUMBER}(?P<ratio>×))")


def pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md"))
            if not p.relative_to(ROOT / "docs").parts[0] in ("history", "results")]
    return [ROOT / "README.md", *docs]


def prose(text: str) -> str:
    """The page without what it quotes literally: fenced blocks, code spans, HTML comments and link targets
    (line breaks kept, so a figure's line number stays right)."""
    blank = lambda match: re.sub(r"[^\n]", " ", match.group(0))  # noqa: E731
    for pattern in (r"```.*?```", r"<!--.*?-->", r"`[^`\n]*`", r"\]\([^)]*\)"):
        text = re.sub(pattern, blank, text, flags=re.S)
    return text


def figures(text: str) -> list[tuple[int, str, float | str, str, int]]:
    """(line, as printed, value, unit, decimals printed) of each figure in the prose of a page."""
    found = []
    for match in FIGURE.finditer(prose(text)):
        line = text.count("\n", 0, match.start()) + 1
        if match.group("clock"):
            found.append((line, match.group(0), match.group("clock"), "clock", 0))
            continue
        number = next(g for g in match.groups()[1:] if g and g[0].isdigit())
        unit = match.group("unit") or ("%MFU" if match.group("mfu") else "×")
        decimals = len(number.split(".")[1]) if "." in number else 0
        found.append((line, match.group(0), float(number.replace(",", "")), unit, decimals))
    return found


def clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def leaves(value) -> list:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def held(values: list, value, unit: str, decimals: int) -> bool:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if unit == "clock":
        return value in values or any(clock(v) == value for v in numbers)
    tolerance = 0.5 * 10 ** -decimals + 1e-9
    return any(abs(v * scale - value) <= tolerance for v in numbers for scale in UNITS[unit])


@pytest.fixture(scope="module")
def measured() -> list:
    values = []
    for path in MEASUREMENTS:
        values += leaves(json.loads(path.read_text()))
    return values


def test_the_measurement_files_name_machine_precision_commit_and_date():
    written = sorted((ROOT / "docs" / "measurements").glob("*.json"))
    assert written, "docs/measurements/ holds no measurement"
    for path in written:
        record = json.loads(path.read_text())
        missing = {"wall_s", "exit_status", "precision", "commit", "date", "machine"} - set(record)
        assert not missing, f"{path.name} lacks {sorted(missing)} (write it with tools/measure.py)"
        assert {"cpu", "cores", "cpu_flags", "torch_capability"} <= set(record["machine"]), path.name


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_a_page_quotes_is_measured(page, measured):
    unheld = [f"{page.relative_to(ROOT)}:{line}: {printed}"
              for line, printed, value, unit, decimals in figures(page.read_text())
              if not held(measured, value, unit, decimals)]
    assert not unheld, ("figures no measurement file holds (measure them with tools/measure.py into "
                        "docs/measurements/, or quote configuration and output as code):\n" + "\n".join(unheld))


def test_the_check_finds_figures_and_tells_held_from_unheld():
    text = ("The default takes 41:32 (2,491.8 s, 42 min, 0.74 GB) at 27.8 % MFU, 1.13× faster.\n"
            "`runtime: 150 min` is configuration; 3 seeds and 95 % intervals are not figures.\n"
            "```\n12:00 in a block\n```\nIt took 17 min.\n")
    found = figures(text)
    assert [printed for _, printed, *_ in found] == ["41:32", "2,491.8 s", "42 min", "0.74 GB", "27.8 % MFU",
                                                       "1.13×", "17 min"]
    values = [2491.8, 0.74, 0.278, 1.13]
    assert [held(values, *figure[2:]) for figure in found] == [True] * 6 + [False]
    assert found[-1][0] == 6
