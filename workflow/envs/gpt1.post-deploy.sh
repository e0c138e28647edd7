#!/usr/bin/env bash
# Snakemake runs this once in the conda environment it has just made (gpt1.yaml), from the directory it runs in:
# the project's root. The same install as `make install`: torch by version, from where this pip looks (PyPI's Linux
# wheel brings CUDA's libraries with or without a GPU; PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu gives
# the CPU build), then exactly the versions and hashes of the lock, then the project with nothing resolved again.
set -euo pipefail
lock=requirements/lock.txt
if [ ! -f "$lock" ] || [ ! -f pyproject.toml ]; then
  echo "gpt1.post-deploy.sh: $PWD is not the project's root ($lock not found): run snakemake from the project's root" >&2
  exit 1
fi
torch=$(grep -o '"torch==[^"]*"' pyproject.toml | tr -d '"')
python -m pip install --quiet "pip>=23,<25"
python -m pip install --quiet "$torch"
python -m pip install --quiet --require-hashes --no-deps -r "$lock"
python -m pip install --quiet --no-deps -e .
