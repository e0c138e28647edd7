"""Every measured figure the README and docs/ quote is held by the measurement file the page cites for it.

A figure is a number with the unit of a measurement: a clock time (41:32), minutes, seconds, hours, GPU-hours,
GB, tokens/s, % MFU, a speed ratio (1.13×). The measurement files are docs/measurements/*.json (written by
tools/measure.py: machine, CPU flags, precision, commit, date) and the JSON the GPU check and the default's
pretraining wrote under docs/results/. A figure's file is the one its sentence cites (a table row counts as a
sentence), or where the sentence cites none, the one its section (the text under its heading) names: by a link, or
by its path from the repository's root in the text or a code span (`docs/measurements/repro.json`); a folder
(`docs/results/gpu/`) names the measurement files directly in it. A page may round a figure, or give seconds in
minutes or hours; it may not quote one that the file it cites does not hold, even if another file does. Code
(spans and blocks) quotes commands, configuration and program output, not measurements, and is left to the tests
of those (tests/test_doc_commands.py, tests/test_plan.py); docs/history/ keeps what was measured once, and
docs/results/ is written by the pipeline.
"""

from __future__ import annotations

import functools
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


def _blank(text: str, patterns: tuple[str, ...]) -> str:
    """`text` with what the patterns match turned into spaces (line breaks kept, so every position stays)."""
    blank = lambda match: re.sub(r"[^\n]", " ", match.group(0))  # noqa: E731
    for pattern in patterns:
        text = re.sub(pattern, blank, text, flags=re.S)
    return text


def prose(text: str) -> str:
    """The page without what it quotes literally: fenced blocks, code spans, HTML comments and link targets
    (line breaks kept, so a figure's line number stays right)."""
    return _blank(text, (r"```.*?```", r"<!--.*?-->", r"`[^`\n]*`", r"\]\([^)]*\)"))


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


# What cites a file: a link's target (relative to the page, as Markdown reads it), or a path from the repository's
# root in the text or a code span.
LINK_TARGET = re.compile(r"\]\(([^)#\s]+)")
ROOT_PATH = re.compile(r"(?<![\w./-])(docs/[\w./-]*[\w/])")
HEADING = re.compile(r"^#{1,6} ", re.M)


def cited_files(text: str, page: Path, start: int = 0, end: int | None = None) -> set[Path]:
    """The measurement files text[start:end] cites: a file of MEASUREMENTS, or a folder for those directly in it.
    Fenced blocks and HTML comments cite nothing."""
    text = _blank(text, (r"```.*?```", r"<!--.*?-->"))[start:end]
    folder = page.parent
    targets = [(folder / match.group(1)).resolve() for match in LINK_TARGET.finditer(text)
               if "://" not in match.group(1)]
    targets += [(ROOT / match.group(1)).resolve() for match in ROOT_PATH.finditer(text)]
    files = set()
    for target in targets:
        files |= {path for path in MEASUREMENTS if path == target or path.parent == target}
    return files


def sentence(text: str, position: int) -> tuple[int, int]:
    """(start, end) of the sentence around `position` in a page: it ends at a full stop before whitespace and no
    lower-case word or number (so not inside "e.g. a" or "et al. 2021"), at a blank line, a heading, a list item or
    a table row (each row a sentence of its own)."""
    words = prose(text)
    ends = [0]
    for match in re.finditer(r"[.!?](?=\s)|\n[ \t]*\n|\n(?=[ \t]*(?:[-*+] |\d+\. |\||#))", words):
        if match.group(0) in ".!?":
            rest = text[match.end():].lstrip()
            if rest[:1].islower() or rest[:1].isdigit():
                continue
        ends.append(match.end())
    ends.append(len(text))
    start = max(end for end in ends if end <= position)
    return start, min(end for end in ends if end > position)


def section(text: str, position: int) -> tuple[int, int]:
    """(start, end) of the text under the heading above `position`, to the next heading (any level)."""
    words = prose(text)
    starts = [0, *(match.start() for match in HEADING.finditer(words)), len(text)]
    return max(s for s in starts if s <= position), min(s for s in starts if s > position)


def sources(text: str, page: Path, position: int) -> set[Path]:
    """The measurement files cited for the figure at `position`: its sentence's, else its section's."""
    return cited_files(text, page, *sentence(text, position)) or cited_files(text, page, *section(text, position))


def figure_sources(text: str, page: Path) -> list[tuple[int, str, float | str, str, int, set[Path]]]:
    """Each figure of figures(text), with the measurement files cited for it."""
    words = prose(text)
    positions = [match.start() for match in FIGURE.finditer(words)]
    return [(*figure, sources(text, page, position)) for figure, position in zip(figures(text), positions)]


@functools.cache
def file_values(path: Path) -> tuple:
    return tuple(leaves(json.loads(path.read_text())))


@pytest.fixture(scope="module")
def measured() -> list:
    values = []
    for path in MEASUREMENTS:
        values += file_values(path)
    return values


def test_the_measurement_files_name_machine_precision_commit_and_date():
    written = sorted((ROOT / "docs" / "measurements").glob("*.json"))
    assert written, "docs/measurements/ holds no measurement"
    for path in written:
        record = json.loads(path.read_text())
        missing = {"wall_s", "exit_status", "precision", "commit", "date", "machine"} - set(record)
        assert not missing, f"{path.name} lacks {sorted(missing)} (write it with tools/measure.py)"
        assert {"cpu", "cores", "cpu_flags", "torch_capability"} <= set(record["machine"]), path.name


def unheld_figures(text: str, page: Path) -> list[str]:
    """Each figure of the page that the file cited for it does not hold, or for which no file is cited."""
    found = []
    for line, printed, value, unit, decimals, files in figure_sources(text, page):
        where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}:{line}: {printed}"
        if not files:
            found.append(f"{where}: cites no measurement file (name it in the sentence or its section)")
        elif not any(held(list(file_values(path)), value, unit, decimals) for path in files):
            holders = [path for path in MEASUREMENTS if held(list(file_values(path)), value, unit, decimals)]
            cited = ", ".join(str(path.relative_to(ROOT)) for path in sorted(files))
            found.append(f"{where}: not in {cited}" +
                         (f" (but in {', '.join(str(p.relative_to(ROOT)) for p in holders)})" if holders else ""))
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_a_page_quotes_is_measured(page, measured):
    unheld = [f"{page.relative_to(ROOT)}:{line}: {printed}"
              for line, printed, value, unit, decimals in figures(page.read_text())
              if not held(measured, value, unit, decimals)]
    assert not unheld, ("figures no measurement file holds (measure them with tools/measure.py into "
                        "docs/measurements/, or quote configuration and output as code):\n" + "\n".join(unheld))


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_is_held_by_the_file_its_sentence_or_section_cites(page):
    unheld = unheld_figures(page.read_text(), page)
    assert not unheld, ("figures the measurement file their sentence (or else their section) cites does not hold: "
                        "cite the file that measured them, beside the figure:\n" + "\n".join(unheld))


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


def test_a_figure_is_checked_against_the_file_it_cites_not_any_file(tmp_path, monkeypatch):
    """3:50 is trial.json's; cited to repro.json it fails, though another measurement file holds it; a sentence
    without a citation takes its section's; a figure cited nowhere fails; "e.g. a" does not end a sentence; a folder
    cites the files directly in it."""
    measurements = tmp_path / "docs" / "measurements"
    (measurements / "gpu").mkdir(parents=True)
    files = {"trial.json": {"wall_s": 230.1}, "repro.json": {"wall": "41:33"}, "gpu/check.json": {"seconds": 557}}
    for name, record in files.items():
        (measurements / name).write_text(json.dumps(record))
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "MEASUREMENTS", [measurements / name for name in files])
    page = tmp_path / "docs" / "page.md"
    text = ("# Page\n\nThe trial took 3:50 ([trial](measurements/trial.json)). The main job took 41:33, e.g. on an "
            "EPYC (`docs/measurements/repro.json`).\n\n## Wrong\n\nThe trial took 3:50 "
            "(`docs/measurements/repro.json`).\n\n## Section\n\nFiles: `docs/measurements/trial.json`.\n\n"
            "It took 3:50.\n\n| run | took |\n|---|---|\n| main | 41:33 |\n\n## Nowhere\n\nIt took 3:50.\n")
    sources_of = {(line, printed): {path.name for path in files}
                  for line, printed, *_, files in figure_sources(text, page)}
    assert sources_of == {(3, "3:50"): {"trial.json"}, (3, "41:33"): {"repro.json"}, (7, "3:50"): {"repro.json"},
                          (13, "3:50"): {"trial.json"}, (17, "41:33"): {"trial.json"}, (21, "3:50"): set()}
    assert unheld_figures(text, page) == [
        "docs/page.md:7: 3:50: not in docs/measurements/repro.json (but in docs/measurements/trial.json)",
        "docs/page.md:17: 41:33: not in docs/measurements/trial.json (but in docs/measurements/repro.json)",
        "docs/page.md:21: 3:50: cites no measurement file (name it in the sentence or its section)"]
    folder = {measurements / "gpu" / "check.json"}
    assert cited_files("It took 557 s (`docs/measurements/gpu/`).", page) == folder
    assert cited_files("It took 557 s ([the GPU check](measurements/gpu/)).", page) == folder
    assert unheld_figures("It took 557 s ([the GPU check](measurements/gpu/)).", page) == []


# A count: a number of things a measurement counted (tests passed, stages, rows, words, tokens, parameters), with
# an optional scale (3.1 M tokens). A page attributes it to a file when its sentence cites one.
COUNT = re.compile(rf"(?<![\w.:/-]){NUMBER}(?:\s?(?P<scale>M|B|million|billion))?\s"
                   r"(?P<noun>passed|stages|rows|pairs|documents|distinct words|words|tokens|examples|parameters"
                   r"|sentences|books|training pairs|test sets)\b")
SCALES = {None: 1, "M": 1e6, "million": 1e6, "B": 1e9, "billion": 1e9}


def counts(text: str) -> list[tuple[int, str, float, float, int]]:
    """(position, as printed, value, scale, decimals printed) of each count in the prose of a page."""
    found = []
    for match in COUNT.finditer(prose(text)):
        number = match.group(1)
        decimals = len(number.split(".")[1]) if "." in number else 0
        found.append((match.start(), match.group(0), float(number.replace(",", "")), SCALES[match.group("scale")],
                      decimals))
    return found


def count_held(values: list, value: float, scale: float, decimals: int) -> bool:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    tolerance = (0.5 * 10 ** -decimals + 1e-9) * scale
    return any(abs(v - value * scale) <= tolerance for v in numbers)


def unheld_counts(text: str, page: Path) -> list[str]:
    """Each count whose sentence cites measurement files none of which holds it."""
    found = []
    for position, printed, value, scale, decimals in counts(text):
        files = cited_files(text, page, *sentence(text, position))
        if files and not any(count_held(list(file_values(path)), value, scale, decimals) for path in files):
            line = text.count("\n", 0, position) + 1
            cited = ", ".join(str(path.relative_to(ROOT)) for path in sorted(files))
            found.append(f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}:{line}: {printed}: "
                         f"not in {cited}")
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_count_is_held_by_the_file_its_sentence_cites(page):
    unheld = unheld_counts(page.read_text(), page)
    assert not unheld, ("counts the measurement file their sentence cites does not hold: cite the file that "
                        "counted them, or move the count out of that sentence:\n" + "\n".join(unheld))


def test_the_count_check_reads_scales_and_tells_held_from_unheld(tmp_path, monkeypatch):
    measurements = tmp_path / "docs" / "measurements"
    measurements.mkdir(parents=True)
    (measurements / "run.json").write_text(json.dumps({"tokens": 3_072_000, "pytest": {"passed": 1009}}))
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "MEASUREMENTS", [measurements / "run.json"])
    page = tmp_path / "docs" / "page.md"
    text = ("# Page\n\nIt read 3.1 M tokens and 1,009 passed (`docs/measurements/run.json`).\n\n"
            "It read 3.2 M tokens (`docs/measurements/run.json`).\n\nUncited: 7 stages.\n")
    assert [printed for _, printed, *_ in counts(text)] == ["3.1 M tokens", "1,009 passed", "3.2 M tokens", "7 stages"]
    assert unheld_counts(text, page) == ["docs/page.md:5: 3.2 M tokens: not in docs/measurements/run.json"]
