"""tests/cluster/slurm.sh's refusals, which need no cluster: it never clears a folder it did not make."""

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "cluster" / "slurm.sh"


def test_start_refuses_a_folder_holding_files_it_did_not_write(tmp_path):
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "notes.txt").write_text("mine")
    done = subprocess.run(["bash", str(SCRIPT), "start", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"slurm.sh: start failed at step 'check STATE_DIR': {tmp_path} holds files this script did not write; "
        "give an empty or new folder"]
    assert (tmp_path / "log" / "notes.txt").read_text() == "mine"


def test_stop_of_a_folder_with_no_cluster_does_nothing(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "stop", str(tmp_path / "absent")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and not (tmp_path / "absent").exists()
