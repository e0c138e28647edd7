"""tools/seed_budget.py: it reads each seed's seconds from the log line fine-tuning writes, and estimates the
finetune stage at a seed count from a job's time outside its seeds plus its mean seed."""

import importlib.util
import sys

import pytest

from tiny import ROOT

sys.path.insert(0, str(ROOT / "tools"))
spec = importlib.util.spec_from_file_location("seed_budget", ROOT / "tools" / "seed_budget.py")
seed_budget = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed_budget)


def test_the_seconds_are_read_from_the_line_fine_tuning_logs():
    """The line gpt1/train/finetune.py writes after each seed, rendered from its own format string."""
    source = (ROOT / "gpt1/train/finetune.py").read_text()
    template = source.split('log.info("%s / %s / seed %d: test %s; seconds:', 1)[1].split('", loaded.task', 1)[0]
    line = "%s / %s / seed %d: test %s; seconds:" + template.replace('"\n             "', "")
    rendered = "gpt1 finetune: " + line % ("sts_b", "full", 4, {"pearson": 0.2}, 1.5, 20.25, 3.0)
    assert seed_budget.SEED_SECONDS.findall(rendered) == [("4", "1.5", "20.2", "3.0")]  # one decimal, as logged


def test_the_stage_estimate_keeps_a_jobs_own_overhead_and_scales_its_seeds():
    jobs = [{"wall_s": 40.0, "seed_seconds": {4: 10.0, 5: 12.0}},  # 18 s outside the two seeds, 11 s a seed
            {"wall_s": 15.0, "seed_seconds": {4: 5.0}}]  # 10 s outside, 5 s a seed
    assert seed_budget.stage_seconds(jobs, 3) == pytest.approx(18 + 33 + 10 + 15)
    assert seed_budget.stage_seconds(jobs, 8) == pytest.approx(18 + 88 + 10 + 40)
