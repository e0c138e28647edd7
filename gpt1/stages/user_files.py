"""Stage `user-files`: the sha256 of every file behind a path in params.yaml (data.local_paths,
bpe.import_from, pretrain.init_from, and the selected tasks and corpus parts of data.user_tasks and
data.user_corpus: `user_data`).

Those files live outside the project, where DVC and Snakemake see only the path strings: replacing the
released weights behind an unchanged `init_from` would re-run nothing. This stage writes one fingerprint per
setting (data/user_files/<setting>.json, `{}` where it is unset) and the stages that read the files depend on
it. DVC runs it on every `dvc repro` (always_changed) and re-runs a reader only when its fingerprint changed;
Snakemake re-runs it when one of the files is newer than its output. A fingerprint is rewritten only when
its content changes, so an unchanged one never looks new.

It also refreshes each stage's code fingerprint (code_fingerprints/<stage>.txt, gpt1/pipeline/code_fingerprint.py),
which the stage depends on in place of its modules: DVC reaches the other stages only after this one, so a code edit
re-runs exactly the stages that run the edited code, and `dvc repro user_files` followed by `dvc status` names them
before anything expensive runs.

It also checks the user's own data, every file of the selected data.user_tasks and data.user_corpus read as
`prepare` reads them (gpt1/data/user_tasks.py's check_files): a bad file stops the pipeline here, before DVC or
Snakemake removes the outputs of `prepare` to run it, and this stage's own outputs are kept in place while it runs
(dvc.yaml's `persist: true`, Snakemake's `update()`), so every earlier output stays as it was.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gpt1 import layout
from gpt1.files.atomic import write_text_if_changed
from gpt1.params.schema import Params
from gpt1.data.user_paths import corpus_files, corpus_root, selected_paths
from gpt1.data.user_tasks import check_files
from gpt1.files.digests import sha256_of
from gpt1.pipeline import code_fingerprint

log = logging.getLogger(__name__)


def paths_by_setting(params: Params) -> dict[str, dict[str, str]]:
    """{setting: {params key: path}} for the settings that name files outside the project."""
    return {
        "local_paths": {f"data.local_paths.{key}": value for key, value in sorted(params.data.local_paths.items())
                        if value},
        "import_from": {"bpe.import_from": params.bpe.import_from} if params.bpe.import_from else {},
        "init_from": {"pretrain.init_from": params.pretrain.init_from} if params.pretrain.init_from else {},
        "user_data": selected_paths(params.data),
    }


def files_under(key: str, path: str) -> tuple[Path, list[Path]]:
    """The folder the files are named relative to, and the files its reader reads, in a stable order: a user's
    corpus part's own listing (gpt1/data/user_paths.py); otherwise the file itself, or every file below a folder.
    Nothing for a missing path (the stage that reads it says so, in its own terms)."""
    if key.startswith("data.user_corpus."):
        return corpus_root(path), corpus_files(path)
    root = Path(path)
    if root.is_file():
        return root.parent, [root]
    return root, sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def watched_files(params: Params) -> list[str]:
    """Every file the fingerprints cover (Snakemake's inputs of this stage)."""
    return [str(file) for paths in paths_by_setting(params).values() for key, path in paths.items()
            for file in files_under(key, path)[1]]


def fingerprint(paths: dict[str, str]) -> dict[str, dict[str, str]]:
    """{params key: {file below the path: sha256}}; a missing path is recorded as such."""
    prints = {}
    for key, path in paths.items():
        root, files = files_under(key, path)
        prints[key] = {str(file.relative_to(root)): sha256_of(file) for file in files} if files else {
            "<missing>": str(path)}
    return prints


def main(args, params: Params, out: Path = layout.USER_FILES, root: Path = Path(".")) -> None:
    check_files(params.data)
    if changed := code_fingerprint.refresh(root):
        log.info("code changed for %d stage(s), which re-run: %s", len(changed), ", ".join(changed))
    for setting, paths in paths_by_setting(params).items():
        path = layout.user_files_record(setting, out)
        if write_text_if_changed(path, json.dumps(fingerprint(paths), indent=2, sort_keys=True) + "\n"):
            log.info("%s: %d path(s) fingerprinted", path, len(paths))
