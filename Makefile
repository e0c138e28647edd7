# Two entry points (see README): `make repro` runs the main job, `make test` runs the tests.
# Both create .venv and install the project first, so they work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install repro snakemake test clean

$(BIN)/gpt1: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# pip 25+ refuses sdists whose metadata names a direct-URL dependency (bigbench does), even with
	# --no-deps, and `gpt1 download` fetches such archives with `pip download`.
	$(BIN)/pip install --quiet "pip>=23,<25" uv
	# torch first and pinned, by pip (which also reads a machine's own wheel folders and indexes from pip.conf):
	# an unpinned resolve would pull several GB of CUDA packages.
	$(BIN)/pip install --quiet "torch==2.13.0"
	# The rest with uv, several times faster than pip; pip where uv cannot reach the registry (uv reads its
	# own settings, UV_INDEX_URL, not pip's).
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[test]" || $(BIN)/pip install --quiet -e ".[test]"
	touch $@

install: $(BIN)/gpt1

repro: install
	dvc repro

snakemake: install
	snakemake --cores 8

# Two pytest-xdist workers: the two end-to-end pipelines (mostly one process waiting on the next) run beside
# the unit tests instead of after them; loadfile keeps a file's tests on one worker, so a module-scoped
# pipeline run happens once.
test: install
	pytest -q -n 2 --dist loadfile

clean:
	rm -rf $(VENV) data logs dvclive .snakemake
