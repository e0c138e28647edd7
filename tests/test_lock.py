"""The environment is locked: requirements/lock.txt pins every package `make` installs (torch aside, installed by
version so that each machine gets its own build) with hashes, and stays in step with pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"


def locked() -> dict[str, tuple[str, int]]:
    """{package: (version, number of hashes)} of the lock."""
    text = LOCK.read_text()
    entries = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})*)", text, re.MULTILINE)
    return {canonicalize_name(name): (version, hashes.count("--hash=")) for name, version, hashes in entries}


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return [Requirement(text) for text in [*project["dependencies"], *(r for group in extras.values() for r in group)]]


def test_every_declared_dependency_is_locked_at_a_version_it_allows():
    pins = locked()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        if name == "torch":  # one version, the machine's build: `make` installs it by version before the lock
            assert str(requirement.specifier) == "==2.13.0"
            assert name not in pins
            continue
        assert name in pins, f"{requirement} is not in {LOCK.relative_to(ROOT)}: run `make lock`"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{LOCK.relative_to(ROOT)} pins {name}=={version}, which pyproject.toml's {requirement} excludes: run `make lock`")


def test_every_locked_package_is_pinned_with_hashes_and_every_extra_is_locked():
    pins = locked()
    assert len(pins) > 100 and all(count >= 1 for _, count in pins.values()), "a pin without --hash"
    assert LOCK.read_text().count("==") >= len(pins)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    command = LOCK.read_text().splitlines()[1]
    assert all(f"--extra {extra}" in command for extra in extras), f"the lock was made without some of {list(extras)}"
    assert not any(name.startswith("nvidia-cu") or name == "triton" for name in pins)  # CPU torch's needs only
