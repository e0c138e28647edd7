"""The tools that measure how cost grows (tools/measure_data_scale.py, measure_loader.py, measure_dag_overhead.py):
their fits, their rates and their stand-ins, on small inputs; the measurements themselves are long and run by hand
(docs/paper-run.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tool_modules import load_tool


data_scale = load_tool("measure_data_scale")
loader = load_tool("measure_loader")
dag_overhead = load_tool("measure_dag_overhead")
measure = load_tool("measure")


def test_the_fits_recover_a_power_law_and_a_line():
    sizes = [10.0, 30.0, 100.0, 1000.0]
    power = data_scale.fit(sizes, [0.5 * size ** 0.6 for size in sizes])
    assert power["k"] == pytest.approx(0.6) and power["k_largest"] == pytest.approx(0.6)
    assert power["power_at_books1"] == pytest.approx(0.5 * 6_700 ** 0.6, rel=1e-3)
    bent = data_scale.fit(sizes, [1.0, 1.0, 2.0, 2.0 * 10 ** 0.5])  # flat at first, then growing as size^0.5
    assert bent["k_largest"] == pytest.approx(0.5) and bent["k"] < 0.5
    assert bent["power_at_books1"] == pytest.approx(2.0 * 10 ** 0.5 * 6.7 ** 0.5, rel=1e-3)
    line = data_scale.fit(sizes, [12.0 + 0.4 * size for size in sizes])
    assert (line["fixed"], line["per_mb"]) == (pytest.approx(12.0), pytest.approx(0.4))
    assert line["line_at_books1"] == pytest.approx(12.0 + 0.4 * 6_700, rel=1e-3)
    assert 0.85 < line["k_largest"] < 1.0  # the fixed cost still shows between the largest two


def test_fits_are_per_core_count_and_need_two_sizes():
    def run(size_mb, cores, wall):
        stages = {stage: {"wall_s": wall, "peak_rss_gb": 0.1, "peak_total_rss_gb": 0.2} for stage in data_scale.STAGES}
        return {"size_mb": size_mb, "cores": cores, "stages": stages}

    fitted = data_scale.fits([run(10, 2, 5.0), run(100, 2, 50.0), run(10, 1, 9.0)])
    assert list(fitted) == ["2"]  # one size on one core: nothing to fit
    assert fitted["2"]["prepare"]["wall_s"]["k"] == pytest.approx(1.0)
    assert set(fitted["2"]["bpe"]) == {"wall_s", "peak_rss_gb", "peak_total_rss_gb"}


def test_the_loader_rate_counts_the_tokens_of_the_batches_it_drew(tmp_path):
    path = tmp_path / "train.bin"
    loader.random_tokens(path, 100_000, chunk=30_000)
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    assert len(tokens) == 100_000 and tokens.max() < 40_481
    rate, batches = loader.tokens_per_second(tokens, batch=4, length=64, seconds=0.2)
    assert batches > 0 and rate > 0


def test_a_stand_in_writes_each_output_a_file_or_a_folder(tmp_path):
    command = dag_overhead.STAND_IN + " data/tokens results/metrics.json"
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    assert (tmp_path / "data/tokens/x").is_file() and (tmp_path / "results/metrics.json").is_file()


def test_a_scratch_copy_replaces_only_its_own_folder(tmp_path):
    """A measurement's --work may name any folder: an existing one it did not make is refused, never removed."""
    theirs = tmp_path / "theirs"
    (theirs / "notes.txt").parent.mkdir()
    (theirs / "notes.txt").write_text("a user's file")
    with pytest.raises(SystemExit, match="no scratch copy a measurement made"):
        measure.scratch_copy(theirs)
    assert (theirs / "notes.txt").read_text() == "a user's file"
    ours = measure.scratch_copy(tmp_path / "ours")
    assert (ours / "params.yaml").is_file() and not (ours / "data").exists()
    (ours / "stale").write_text("left by the last run")
    assert not (measure.scratch_copy(ours) / "stale").exists()  # its own copy is replaced


evaluation_scale = load_tool("measure_evaluation_scale")
layer_norm = load_tool("layer_norm_precision")


def test_the_evaluation_rehearsal_writes_every_run_the_analysis_reads_and_its_intervals_hold(tmp_path, monkeypatch):
    """Every (method, task, seed) run of the paper profile's tasks, as the finetune stage writes it, at a small
    test size here; Table 5's intervals over them hold their bounds' deviation."""
    from gpt1.eval.analysis import method_intervals
    from gpt1.eval.intervals import BOUND_SD, MAX_RESAMPLES
    from gpt1.layout import finetune_run

    monkeypatch.setattr(evaluation_scale, "TEST_ROWS", {"stsb": 120, "mnli": 150, "mnli_mm": 150, "race": 90})
    specs, baselines = evaluation_scale.write_runs(tmp_path)
    assert set(specs) == {"stsb", "mnli", "mnli_mm", "race"} and baselines["race"]["majority"]["label"] == 0.0
    nested = finetune_run("mnli_mm", "lstm", 3, tmp_path, "mnli")  # scored with mnli's models, inside its job
    assert len((nested / "predictions_test.jsonl").read_text().splitlines()) == 150
    intervals = method_intervals(tmp_path, specs, list(evaluation_scale.METHODS), list(evaluation_scale.SEEDS))
    assert set(intervals) == {"no_pretrain", "no_aux_lm", "lstm"}
    assert intervals["no_pretrain"]["mnli"].difference > 5  # the rehearsal's skills: w/o pre-training well behind
    # each bound holds its deviation, or its interval drew the most resamples allowed
    assert all(max(i.low_sd, i.high_sd) <= BOUND_SD or i.resamples == MAX_RESAMPLES
               for by in intervals.values() for i in by.values())


def test_a_child_reports_its_own_peak_memory_not_its_parents(tmp_path):
    """A child started by fork and exec inherits, in ru_maxrss, its parent's image as it was at the exec; the
    rehearsal's parent holds the generated rows, so each part reads its own high-water mark instead."""
    held = bytearray(400 * 10**6)  # the parent's memory, touched
    held[::4096] = b"x" * len(held[::4096])
    code = (f"import sys, resource; sys.path.insert(0, {str(Path(evaluation_scale.__file__).parent)!r}); "
            "import measure_evaluation_scale as tool; "
            "print(tool.own_peak_gb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)")
    own, inherited = map(float, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                               check=True).stdout.split())
    assert inherited >= 0.4 and own < 0.3, (own, inherited)  # ru_maxrss counts the parent's 0.4 GB
    del held


def test_the_rehearsals_sentences_are_synthetic_prose():
    sentences = evaluation_scale.sentences(200)
    assert len(sentences) == 200 and all(s.endswith(".") for s in sentences)
    assert 8 < np.mean([len(s.split()) for s in sentences]) < 40


def test_the_layer_norm_comparison_trains_both_settings_from_the_same_start(tmp_path):
    from gpt1.model.lm import TransformerConfig

    rng = np.random.default_rng(0)
    for split, count in (("train", 20_000), ("val", 2_000)):
        rng.integers(0, 50, count, dtype=np.uint16).tofile(tmp_path / f"{split}.bin")
    config = TransformerConfig(vocab_size=50, n_positions=16, n_layer=1, n_head=2, d_model=16, d_ff=32)
    fp32 = layer_norm.train(config, tmp_path, 1, False, updates=6, batch=4, every=3)
    bf16 = layer_norm.train(config, tmp_path, 1, True, updates=6, batch=4, every=3)
    assert [update for update, _ in fp32] == [0, 3, 6] == [update for update, _ in bf16]
    assert fp32[0][1] == pytest.approx(bf16[0][1], abs=0.05)  # one start; LayerNorm's rounding only
    assert fp32[-1][1] < fp32[0][1]  # it learns the ids' frequencies


pretraining_seeds = load_tool("pretraining_seeds")


def _ablation(project: Path, full_avg: float, lstm_low: float) -> Path:
    """The files the pretraining-seeds tool reads from a finished project: Table 5's rows, its intervals and the
    two models' pretraining metrics."""
    (project / "results").mkdir(parents=True)
    (project / "results/ablation.csv").write_text(f"method,avg,sts_b\nfull,{full_avg},20.0\nlstm,38.0,18.0\n")
    verdict = "supported" if lstm_low > 0 else "not supported"
    (project / "results/ablation_intervals.csv").write_text(
        "comparison,column,difference,low,high,verdict\n"
        f"full - lstm,avg,{full_avg - 38.0},{lstm_low},{lstm_low + 4},{verdict}\n"
        "full - lstm,sts_b,2.0,-1.0,5.0,not supported\n"
        "lstm - majority class,sts_b,1.0,-0.5,,not above\n")  # one-sided: no upper bound
    for kind, loss in (("transformer", 4.26), ("lstm", 4.48)):
        (project / f"results/pretrain/{kind}").mkdir(parents=True)
        (project / f"results/pretrain/{kind}/metrics.json").write_text(json.dumps({"val": {"loss": loss}}))
    return project


def test_the_spread_over_pretraining_seeds_gives_each_cells_range_and_every_verdict_seen(tmp_path):
    tables = {"1234": pretraining_seeds.table(_ablation(tmp_path / "a", 42.0, 0.5)),
              "1": pretraining_seeds.table(_ablation(tmp_path / "b", 40.0, -0.4))}
    assert tables["1"]["rows"]["full"] == {"avg": 40.0, "sts_b": 20.0} and tables["1"]["val_loss"]["lstm"] == 4.48
    spread = pretraining_seeds.spread(tables)
    assert spread["rows"]["full"]["avg"] == [40.0, 42.0]
    assert spread["comparisons"]["full - lstm"]["avg"] == {"difference": [2.0, 4.0],
                                                           "verdicts": ["not supported", "supported"]}
    assert spread["comparisons"]["full - lstm"]["sts_b"]["verdicts"] == ["not supported"]
    assert tables["1"]["comparisons"]["lstm - majority class"]["sts_b"]["high"] is None  # JSON's null, not NaN
    json.dumps(tables, allow_nan=False)


bpe_phases = load_tool("measure_bpe_phases")


def test_the_bpe_phases_are_timed_on_the_corpus_and_compared_with_one_core(tmp_path):
    corpus = tmp_path / "train.jsonl"
    texts = ["the cat sat on the mat .", "a dog , a cat and a bird sat there .", "the end \n of the story ."]
    corpus.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts * 20))
    found = bpe_phases.time_phases(corpus, merges=10)
    assert found["words"] == 20 * sum(len(text.split(" ")) for text in texts)
    assert set(found["phases"]) == set(bpe_phases.PHASES)
    for phase in found["phases"].values():  # no CPU seconds where workers do not start by fork
        assert phase["wall_s"] >= 0 and (phase["cpu_s"] is None or phase["cpu_s"] >= 0)

    def run(cores, count, train):
        return {"cores": cores, "wall_s": count + train,
                "phases": {"count_words": {"wall_s": count}, "train_merges": {"wall_s": train}}}

    assert bpe_phases.speedups([run(1, 60.0, 40.0), run(2, 30.0, 32.0)]) == {
        "2": {"count_words": 2.0, "train_merges": 1.25, "both_phases": 1.61}}
    assert bpe_phases.speedups([run(1, 0.0, 0.01), run(2, 0.0, 0.01)])["2"]["count_words"] is None  # too short
    assert bpe_phases.speedups([run(2, 30.0, 32.0)]) == {}  # nothing to compare with
