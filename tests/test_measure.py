"""tools/measure.py: the figures it writes are the ones the command's run or /usr/bin/time's report give."""

import importlib.util
import json
import sys

import pytest

from tiny import ROOT

spec = importlib.util.spec_from_file_location("measure", ROOT / "tools" / "measure.py")
measure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(measure)

TIME_REPORT = """\
	Command being timed: "make repro"
	User time (seconds): 4387.77
	Elapsed (wall clock) time (h:mm:ss or m:ss): 41:31.81
	Maximum resident set size (kbytes): 737832
	Exit status: 0
"""


def test_a_clock_is_printed_as_time_prints_it():
    assert [measure.clock(s) for s in (0.4, 59.6, 2491.81, 3600, 4000)] == ["0:00", "1:00", "41:32", "1:00:00",
                                                                              "1:06:40"]


def test_pytests_summary_gives_the_counts_and_its_own_time():
    line = "==== 3 failed, 790 passed, 11 skipped, 2 warnings in 1208.31s (0:20:08) ===="
    assert measure.pytest_counts("noise\n" + line) == {"pytest": {
        "failed": 3, "passed": 790, "skipped": 11, "warnings": 2, "seconds": 1208.31, "clock": "20:08"}}
    assert measure.pytest_counts("no summary here") == {}


def test_a_time_report_gives_wall_memory_and_exit(tmp_path):
    (tmp_path / "repro.log").write_text("make output\n" + TIME_REPORT)
    assert measure.from_time_log(tmp_path / "repro.log") == {
        "command": "make repro", "wall_s": 2491.8, "wall": "41:32", "peak_rss_gb": 0.74, "exit_status": 0}


def test_a_timed_command_writes_its_record_with_the_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "FOLDER", tmp_path)
    assert measure.main(["probe", "--note", "a test", "--", "sh", "-c", "echo '1 passed in 0.50s'; exit 3"]) == 3
    record = json.loads((tmp_path / "probe.json").read_text())
    assert record["exit_status"] == 3 and record["pytest"]["passed"] == 1 and record["note"] == "a test"
    assert {"cpu", "cores", "cpu_flags", "torch_capability"} <= set(record["machine"])
    assert not list(tmp_path.glob("*.tmp"))


def test_a_command_and_a_time_report_together_are_refused(tmp_path):
    with pytest.raises(SystemExit):
        measure.main(["probe", "--from-time-log", str(tmp_path / "x.log"), "--", "true"])


def test_sizes_records_each_folders_disk_after_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "FOLDER", tmp_path / "measurements")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link").symlink_to("/etc/hostname")  # a link is not the folder's own bytes
    command = [sys.executable, "-c", "open('data/blob', 'wb').write(b'x' * 25_000_000)"]
    assert measure.main(["footprint", "--sizes", "data", "--", *command]) == 0
    record = json.loads((tmp_path / "measurements" / "footprint.json").read_text())
    assert record["disk_gb"] == {"data": 0.025}
