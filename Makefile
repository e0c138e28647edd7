# Two entry points (see README): `make repro` runs the main job, `make test` runs the tests.
# Both create .venv and install the project first, so they work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)

LOCK := requirements/lock.txt

.PHONY: install repro trial snakemake test test-slow test-cluster lock clean gpu-bundle gpu-check gpu-science

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	# pip 25+ refuses sdists whose metadata names a direct-URL dependency (bigbench does), even with
	# --no-deps, and `gpt1 download` fetches such archives with `pip download`.
	$(BIN)/pip install --quiet "pip>=23,<25" "uv==0.13.9"

$(BIN)/gpt1: pyproject.toml $(LOCK) | $(BIN)/uv
	# torch first and pinned, by pip (which also reads a machine's own wheel folders and indexes from pip.conf):
	# an unpinned resolve would pull several GB of CUDA packages.
	$(BIN)/pip install --quiet "torch==2.13.0"
	# Everything else exactly as locked, versions and hashes (test and cluster extras included), then the project
	# itself with nothing resolved again. uv is several times faster than pip; pip where uv cannot reach the
	# registry (uv reads its own settings, UV_INDEX_URL, not pip's). uv, unlike pip, writes no bytecode unless asked:
	# without it every process (each pipeline job: DVC, torch's dependencies) compiles those modules again wherever
	# Python may not write its cache (PYTHONDONTWRITEBYTECODE, a read-only install).
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --require-hashes --no-deps -r $(LOCK) \
	  || $(BIN)/pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e . || $(BIN)/pip install --quiet --no-deps -e .
	touch $@

# After a change to pyproject.toml's dependencies: re-resolve the newest versions that satisfy them into the lock
# (tests/test_lock.py fails until then). uv must find torch's CPU build: pip's wheel folder where set
# (PIP_FIND_LINKS), or PyTorch's CPU index in UV_EXTRA_INDEX_URL.
lock: | $(BIN)/uv
	$(BIN)/uv pip compile pyproject.toml --extra test --extra cluster --generate-hashes --python-version 3.11 \
	  --no-emit-package torch --override requirements/torch-cpu.txt \
	  $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS)) --quiet -o $(LOCK)

install: $(BIN)/gpt1

repro: install
	dvc repro

snakemake: install
	snakemake --cores 8

# A first result in minutes: every stage on the trial profile (profiles/trial.yaml says what it is), through
# Snakemake, into the same data/ and results/ as the main job (`make repro` then re-runs what differs). `--quiet
# rules` leaves out each job's block (the last, rule all's, lists every output): what shows is each stage's own
# lines (gpt1 <stage>: ...), Snakemake's progress and a failing job's command, then where the results are.
trial: install
	snakemake --cores 2 --configfile profiles/trial.yaml --quiet rules
	@echo "trial: Table 5 with its intervals in results/ablation.md; Figure 2 in results/layer_transfer.png," \
	  "results/transfer_curve.png and results/zero_shot.png"

# The README's test command: the unit tests and the README's own route end to end (tests/test_pipeline.py, the tiny
# profile through DVC). Two pytest-xdist workers: that pipeline (mostly one process waiting on the next) runs beside
# the unit tests instead of after them; loadfile keeps a file's tests on one worker, so a module-scoped pipeline run
# happens once; --no-loadscope-reorder keeps the order tests/conftest.py gives, the longest files first.
PYTEST := pytest -q -n 2 --dist loadfile --no-loadscope-reorder
test: install
	$(PYTEST) -m "(not slow or readme_route) and not extended"

# The rest of the slow tests, which CI runs too: the paper, released and user-data pipelines, resumption, DDP.
test-slow: install
	$(PYTEST) -m "(slow and not readme_route) or extended"

# The cluster tests on a real one-node SLURM: installed with apt where missing (root), started with its state in a
# fresh /tmp folder, stopped again by the pids it recorded, whatever the tests did.
test-cluster: install
	@state=$$(mktemp -d /tmp/gpt1-slurm.XXXXXX) && \
	trap 'bash tests/cluster/slurm.sh stop '"$$state" EXIT && \
	bash tests/cluster/slurm.sh start "$$state" && \
	. "$$state/env" && GPT1_TEST_CLUSTER="$$state" pytest -q -s -m cluster tests/test_cluster.py

# A GPU run in one command (docs/gpu.md). Here, with the registries: wheels for the GPU machine's Python of the
# locked packages its image lacks, and the GPU profile's prepared data, in gpu-bundle/. There, with no network and
# no .venv (its own python3 with torch), from a checkout holding gpu-bundle/: the GPU tests, the GPU profile to
# Table 5 and the benchmark, into gpu-report/.
gpu-bundle: install
	$(BIN)/python tools/gpu_bundle.py

gpu-check:
	python3 tools/gpu_check.py

# The same run spent on the paper's findings: longer pre-training, Table 5, the gap against pre-training tokens.
gpu-science:
	python3 tools/gpu_check.py --science

# Only what the pipeline writes: data/'s own folders (gpt1/layout.py's DATA_FOLDERS, tests/test_layout.py keeps the
# two in step), never another file in data/, and data/ itself only once it is empty.
DATA_FOLDERS := data/raw data/corpus data/tasks data/bpe data/tokens data/pretrain data/starting_models \
  data/task_tokens data/zero_shot data/training_state data/user_files data/cache

clean:
	rm -rf $(VENV) $(DATA_FOLDERS) logs dvclive .snakemake
	rmdir data 2>/dev/null || true
