"""params.yaml's `data` section: the corpus parts and tasks by the registry's names (gpt1/data/registry.py) or the
user's own (gpt1/params/user_data.py), the splits, local folders and mirrors; and the tasks fine-tuning scores, which
follow from them."""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import Field, field_validator

from gpt1.params.roles import Role
from gpt1.params.section import Section
from gpt1.params.user_data import CorpusPath, UserName, UserTask, outside_the_pipeline


class MirrorParams(Section):
    url: str = Field(pattern=r"^\S+$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="of the file at url; checked before extraction")

    @field_validator("url")
    @classmethod
    def _over_http(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("a mirror is an http:// or https:// URL; for files on this machine use data.local_paths "
                             "(registered data) or serve the folder over HTTP")
        return url


# Roles (gpt1/params/roles.py): the whole section shapes `prepare` (Params.data); these keys shape more stages too.
USER_FILES = Role(stages=("user-files",))  # the files it names are fingerprinted there
FETCHED = Role(stages=("user-files", "download"))  # what is fetched, and from where


class DataParams(Section):
    # Before corpus and tasks: their validator accepts the names declared here (gpt1/params/user_data.py).
    user_tasks: Annotated[dict[UserName, UserTask], USER_FILES] = Field(
        description="tasks read from the user's own files")
    user_corpus: Annotated[dict[UserName, CorpusPath], USER_FILES] = Field(
        description="corpus parts: a folder or glob of .txt/.jsonl files")
    corpus: Annotated[list[str], FETCHED] = Field(
        min_length=1, description="corpus parts for pretraining (see gpt1/data/registry.py)")
    tasks: Annotated[list[str], Role(
        stages=(*FETCHED.stages, "baselines", "evaluate", "encode-zeroshot", "ablation", "paper-tables"),
        notes=(("user-files", "with data.corpus: only the selected user tasks and corpus parts are read, so "
                              "watched"),))] = Field(
        min_length=1, description="fine-tuning tasks (see gpt1/data/registry.py)")
    corpus_val_fraction: float = Field(gt=0, lt=0.5)
    task_dev_fraction: float = Field(gt=0, lt=0.5)
    task_test_fraction: float = Field(gt=0, lt=0.5)
    min_dedup_chars: int = Field(ge=0, description="paragraphs at least this long are deduplicated")
    local_paths: Annotated[dict[str, Optional[str]], FETCHED]
    mirrors: Annotated[dict[str, MirrorParams], Role(stages=("download",))] = Field(
        description="source name -> another copy")

    @field_validator("mirrors")
    @classmethod
    def _mirrors_replace_downloads(cls, mirrors: dict) -> dict:
        from gpt1.data import registry
        from gpt1.data.sources import LocalFolder

        for name in mirrors:
            source = registry.SOURCES.get(name)
            if source is None or isinstance(source.archive, LocalFolder):
                downloaded = sorted(n for n, s in registry.SOURCES.items() if not isinstance(s.archive, LocalFolder))
                raise ValueError(f"'{name}' is not a downloaded source; allowed: {', '.join(downloaded)}")
        return mirrors

    @field_validator("local_paths")
    @classmethod
    def _local_paths_name_registered_folders(cls, local_paths: dict) -> dict:
        from gpt1.data import registry
        from gpt1.data.sources import LocalFolder

        keys = sorted({s.archive.key for s in registry.SOURCES.values() if isinstance(s.archive, LocalFolder)})
        unknown = sorted(set(local_paths) - set(keys))
        if unknown:
            raise ValueError(f"{', '.join(map(repr, unknown))} is not data you register by hand; allowed: {', '.join(keys)}")
        for key, folder in local_paths.items():
            if folder:
                outside_the_pipeline(folder, key)
        return local_paths

    @field_validator("corpus", "tasks")
    @classmethod
    def _known_and_unique(cls, names: list[str], info) -> list[str]:
        from gpt1.data import registry  # late: the registry imports loaders, which import this package

        registered = registry.CORPORA if info.field_name == "corpus" else registry.TASKS
        known = {**registered, **info.data.get(f"user_{info.field_name}", {})}
        for name in names:
            if name not in known:
                raise ValueError(f"unknown name '{name}'; allowed: {', '.join(sorted(known))}")
            trained = registry.model_of(name) if info.field_name == "tasks" else None
            if trained is not None:
                raise ValueError(f"'{name}' is scored with {trained}'s fine-tuned models and comes with {trained}: "
                                 f"list {trained} (its jobs score both)")
        if len(set(names)) != len(names):
            raise ValueError("names must not repeat")
        return names

    @property
    def scored_tasks(self) -> list[str]:
        """The tasks that preparation, the baselines and the evaluation cover: data.tasks, each followed by the
        tasks scored with its fine-tuned models (mnli brings mnli_mm). Fine-tuning trains data.tasks only."""
        from gpt1.data import registry

        return registry.scored_tasks(self.tasks)

    def model_of(self, task: str) -> str | None:
        """The task of data.tasks whose fine-tuned models `task` is scored with (mnli_mm: mnli), or None."""
        from gpt1.data import registry

        return registry.model_of(task)

    def scored_with(self, task: str) -> list[str]:
        """The tasks scored with `task`'s fine-tuned models (mnli: mnli_mm); reads no key, so a job of one task
        does not depend on the others listed."""
        from gpt1.data import registry

        return registry.scored_with(task)
