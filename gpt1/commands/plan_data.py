"""What `gpt1 plan` counts besides the GPUs: the data stages' hours and peak memory on the user's cores, and the disk.

The data stages' rates are measured, not assumed: tools/measure_data_scale.py ran user-files, download, prepare, bpe
and tokenize alone at several corpus sizes on 1 and 2 cores and fitted each stage's wall time and peak memory as
fixed + rate x size and as a power of the size (memory: the sum over the stage's processes, its
workers included) (docs/measurements/data-scale.json, which this module reads). Time
is extrapolated along the line (a start-up cost, then a rate per byte); peak memory along the power law through the
largest size measured with the growth between the two largest, since what a stage holds grows with the vocabulary,
which grows as a power of the size below 1 (Heaps' law). A stage's rate on N cores comes
from its 1- and 2-core rates by Amdahl's law: the part that halved on two cores is divided by N, the rest is not;
its memory adds, for each core past the first, what the second core added (a worker process). With one core count
measured, its figures are used for any N.

Disk is counted from the sizes the params give: the prepared corpus (as many bytes as the raw text), the tokens
(2 bytes each: uint16), each pretrained model's kept checkpoints and final weights (fp32) and its resume state
(weights and Adam's two moments), and DVC's cache, which holds a second copy of every output DVC tracks (its default
cache type copies).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpt1.params.schedule import PretrainSchedule

MEASUREMENT = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "data-scale.json"
# The data half run once at books1's full size: the check on how far the fitted lines hold that far out.
FULL_SIZE = MEASUREMENT.with_name("data-scale-books1.json")
STAGES = ("user-files", "download", "prepare", "bpe", "tokenize")
BYTES_PER_TOKEN_ID = 2  # uint16, as `gpt1 tokenize` writes ids below 65,536
FP32 = 4
ADAM_STATE = 3  # weights, first and second moments


@dataclass(frozen=True)
class PowerLaw:
    """A fitted value ∝ size^k: scale x MB^k."""
    scale: float
    k: float

    def at(self, megabytes: float) -> float:
        return self.scale * megabytes ** self.k


@dataclass(frozen=True)
class StageRate:
    """One stage's fitted cost: seconds = fixed + per_mb(cores) x MB, and its peak memory (every process of the
    stage) as a power law of the size, on 1 and on 2 cores where measured."""
    fixed_seconds: float
    per_mb_one_core: float | None
    per_mb_two_cores: float | None
    memory_one_core: PowerLaw | None
    memory_two_cores: PowerLaw | None

    def per_mb(self, cores: int) -> float:
        one, two = self.per_mb_one_core, self.per_mb_two_cores
        if one is None or two is None:
            return max(0.0, one if two is None else two)
        parallel = max(0.0, 2 * (one - two))  # Amdahl: t1 = serial + parallel, t2 = serial + parallel / 2
        return max(0.0, (one - parallel) + parallel / cores)  # a slope of noise (download's) is no negative time

    def peak_gb(self, megabytes: float, cores: int) -> float:
        """Each core past the first adds a worker process, which holds what the second core's added (its own copy of
        the word splitter's vocabulary, say)."""
        one, two = self.memory_one_core, self.memory_two_cores
        if one is None or two is None:
            return (one or two).at(megabytes)
        added = max(0.0, two.at(megabytes) - one.at(megabytes))
        return one.at(megabytes) + (cores - 1) * added


def read_measurement(path: Path) -> dict | None:
    """A measurement file's record, or None where the file is not at hand (a plan goes on without it)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def read_rates(path: Path = MEASUREMENT) -> dict[str, StageRate] | None:
    """The fitted rates of every data stage, or None where the measurement file is not at hand."""
    if (record := read_measurement(path)) is None:
        return None
    fits = record["fits"]
    rates = {}
    for stage in STAGES:
        by_cores = {cores: fits[cores][stage] for cores in ("1", "2") if cores in fits}
        if not by_cores:
            return None
        wall = {cores: fit["wall_s"] for cores, fit in by_cores.items()}
        memory = {cores: PowerLaw(fit["peak_total_rss_gb"]["power_scale"], fit["peak_total_rss_gb"]["k_largest"])
                  for cores, fit in by_cores.items()}
        rates[stage] = StageRate((wall.get("2") or wall["1"])["fixed"], wall.get("1", {}).get("per_mb"),
                                 wall.get("2", {}).get("per_mb"), memory.get("1"), memory.get("2"))
    return rates


@dataclass(frozen=True)
class FullSizeRun:
    """The largest run of FULL_SIZE: its corpus (GB), cores, CPU, the data half's minutes and bpe's peak memory."""
    size_gb: float
    cores: int
    cpu: str
    minutes: float
    peak_gb: float


def full_size_run(path: Path = FULL_SIZE) -> FullSizeRun | None:
    if (record := read_measurement(path)) is None:
        return None
    try:
        run = max(record["runs"], key=lambda run: run["size_mb"])
        return FullSizeRun(run["size_mb"] / 1e3, run["cores"], record["machine"]["cpu"], run["data_half_s"] / 60,
                           max(stage["peak_total_rss_gb"] for stage in run["stages"].values()))
    except (KeyError, ValueError):  # a file from before its runs recorded the data half: the plan goes on without it
        return None


def data_stage_rows(corpus_bytes: int, cores: int, rates: dict[str, StageRate]) -> list[dict]:
    """Each data stage's wall hours and peak memory (GB) on `cores` cores for a corpus of `corpus_bytes`."""
    megabytes = corpus_bytes / 1e6
    return [dict(stage=stage, hours=(rate.fixed_seconds + rate.per_mb(cores) * megabytes) / 3600,
                 peak_gb=rate.peak_gb(megabytes, cores)) for stage, rate in rates.items()]


def disk_rows(params, corpus_bytes: int | None, corpus_tokens: int | None, sizes: dict[str, tuple[int, float]],
              ) -> list[dict]:
    """GB on disk of what the run writes, and the DVC cache's copy of it."""
    rows = []
    if corpus_bytes is not None:
        rows.append(dict(what="prepared corpus (data/corpus)", gb=corpus_bytes / 1e9))
    if corpus_tokens is not None:
        rows.append(dict(what="tokens (data/tokens)", gb=corpus_tokens * BYTES_PER_TOKEN_ID / 1e9))
    for kind, (parameters, _) in sizes.items():
        schedule = PretrainSchedule.of(params.pretrain, kind, corpus_tokens)
        kept = len(schedule.kept_checkpoints) if schedule.known else 1
        weights_gb = parameters * FP32 / 1e9
        rows.append(dict(what=f"{kind}: final weights and {kept} kept checkpoints", gb=weights_gb * (kept + 1)))
        rows.append(dict(what=f"{kind}: resume state (weights, Adam's moments)", gb=weights_gb * ADAM_STATE))
    tracked = sum(row["gb"] for row in rows if "resume state" not in row["what"])  # the resume state is no DVC output
    rows.append(dict(what="DVC cache: a copy of every tracked output above", gb=tracked))
    return rows
