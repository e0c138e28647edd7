"""Snakemake's conda deployment installs what `make install` installs: torch by the version pyproject.toml pins,
then the lock with its hashes and no resolving, then the project (workflow/envs/gpt1.post-deploy.sh, run here with
a stand-in `python` that records its arguments instead of installing)."""

import re
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "workflow" / "envs" / "gpt1.post-deploy.sh"


def _run_script(cwd: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    calls = tmp_path / "calls"
    stub = tmp_path / "bin" / "python"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    stub.chmod(0o755)
    done = subprocess.run(["bash", str(SCRIPT)], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": f"{stub.parent}:/usr/bin:/bin"})
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_the_conda_environment_installs_from_the_lock(tmp_path):
    project = tmp_path / "project"
    (project / "requirements").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", project)
    shutil.copy(ROOT / "requirements" / "lock.txt", project / "requirements")
    done, calls = _run_script(project, tmp_path)
    assert done.returncode == 0, done.stderr
    torch = re.search(r'"(torch==[^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert torch in (ROOT / "Makefile").read_text()  # make install pins the same torch
    assert calls == ["-m pip install --quiet pip>=23,<25", f"-m pip install --quiet {torch}",
                     "-m pip install --quiet --require-hashes --no-deps -r requirements/lock.txt",
                     "-m pip install --quiet --no-deps -e ."]


def test_the_environment_file_leaves_every_package_to_the_lock():
    environment = yaml.safe_load((ROOT / "workflow" / "envs" / "gpt1.yaml").read_text())
    assert all(isinstance(entry, str) for entry in environment["dependencies"])  # no pip: section
    assert sorted(entry.split("=")[0] for entry in environment["dependencies"]) == ["pip", "python"]


def test_outside_the_project_root_it_stops_with_the_fix(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done, calls = _run_script(elsewhere, tmp_path)
    assert done.returncode == 1 and calls == []
    assert "run snakemake from the project's root" in done.stderr
