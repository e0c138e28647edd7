"""`gpt1 fetch-released`: the released GPT-1, from a local folder or the Hugging Face hub, into one folder that
profiles/released.yaml points at: the BPE as the bpe stage imports it (encoder_bpe_40000.json + vocab_40000.bpe),
the weights as a gpt1 checkpoint (weights.safetensors) and MANIFEST.json, the sha256 of every file read and
written.

Either released layout is accepted: OpenAI's `model/` folder (params_shapes.json + params_0..9.npy +
encoder_bpe_40000.json + vocab_40000.bpe) or transformers' (config.json + model.safetensors or pytorch_model.bin +
vocab.json + merges.txt; the same two BPE files under other names, copied byte for byte). Nothing read executes
code (gpt1/model/weights.py). The folder is written whole under a temporary name, then renamed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from gpt1.errors import UserError
from gpt1.files.atomic import atomic_directory, claim_folder
from gpt1.files.digests import sha256_of

log = logging.getLogger(__name__)

HUB_REPOSITORY = "openai-community/openai-gpt"
# The hub's revision the command fetches by default. A branch name: no commit of that repository could be checked
# from here, so every fetch records the commit the hub served and each file's sha256 in MANIFEST.json; pass that
# commit as --revision to fetch the same files again.
HUB_REVISION = "main"
# sha256 of the hub's files, by revision, checked where a revision is listed (none is: see HUB_REVISION).
PINNED_SHA256: dict[str, dict[str, str]] = {}
HUB_FILES = ("config.json", "vocab.json", "merges.txt")
HUB_WEIGHTS = ("model.safetensors", "pytorch_model.bin")  # the first the revision has
DEFAULT_OUT = Path("released")  # outside data/ and results/, where user-provided files are refused
WEIGHTS_FILE = "weights.safetensors"
MANIFEST = "MANIFEST.json"
# transformers' names for OpenAI's two BPE files
HF_BPE_NAMES = {"vocab.json": "encoder_bpe_{merges}.json", "merges.txt": "vocab_{merges}.bpe"}


def main(source: str, out: Path, revision: str = HUB_REVISION, force: bool = False, n_head: int = 12) -> Path:
    """Fetch the released GPT-1 from `source` (a folder, or a hub repository id) into `out`."""
    claim_folder(out, force)
    folder = Path(os.path.expanduser(source))
    if folder.is_dir():
        return write_release(folder, out, {"source": str(folder.resolve())}, n_head)
    if folder.exists() or source.count("/") != 1 or source.startswith((".", "/", "~")):
        raise UserError(f"{source}: neither a folder nor a Hugging Face repository id such as {HUB_REPOSITORY}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.download.", dir=out.parent) as download:
        commit = download_from_hub(source, revision, Path(download))
        origin = {"source": f"hf://{source}", "revision": revision, "commit": commit}
        return write_release(Path(download), out, origin, n_head, PINNED_SHA256.get(commit or revision))


def write_release(folder: Path, out: Path, origin: dict, n_head: int, pinned: dict[str, str] | None = None) -> Path:
    """`folder` in either released layout -> `out`: the BPE pair, a gpt1 checkpoint and MANIFEST.json."""
    from gpt1.model import weights
    from gpt1.model.lm import save_model
    from gpt1.tokenizer.bpe import Gpt1Bpe

    bpe_files = _bpe_files(folder)
    read = {name: sha256_of(folder / name) for name in sorted(_release_files(folder))}
    for name, expected in (pinned or {}).items():
        if read.get(name) != expected:
            raise UserError(f"{folder / name}: sha256 {read.get(name)} is not the pinned {expected}; the download "
                            "is damaged or the revision changed: fetch again")
    model = weights.import_weights(folder, n_head=n_head)
    with atomic_directory(out, mark_owner=True) as staging:
        for source_name, target_name in bpe_files.items():
            shutil.copyfile(folder / source_name, staging / target_name)
        bpe = Gpt1Bpe.load(staging)
        if len(bpe.encoder) != model.config.vocab_size:
            raise UserError(f"{folder}: the BPE has {len(bpe.encoder)} tokens but the weights "
                            f"{model.config.vocab_size} rows: the two come from different releases")
        save_model(model, staging / WEIGHTS_FILE)
        written = {path.name: sha256_of(path) for path in sorted(staging.iterdir())}
        manifest = {**origin, "read": read, "written": written, "merges": len(bpe.merges),
                    "parameters": model.num_parameters()}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    log.info("wrote %s: %d merges, %d parameters (%s)", out, len(bpe.merges), model.num_parameters(),
             origin.get("commit") or origin["source"])
    return out


def _bpe_files(folder: Path) -> dict[str, str]:
    """{file in `folder`: its name in the output} for the two BPE files of either layout."""
    encoders = sorted(path.name for path in folder.glob("encoder_bpe_*.json"))
    if len(encoders) == 1:
        merges_file = encoders[0].replace("encoder_bpe_", "vocab_").replace(".json", ".bpe")
        if (folder / merges_file).is_file():
            return {encoders[0]: encoders[0], merges_file: merges_file}
    if all((folder / name).is_file() for name in HF_BPE_NAMES):
        merges = _count_merges(folder / "merges.txt")
        return {name: target.format(merges=merges) for name, target in HF_BPE_NAMES.items()}
    raise UserError(f"{folder} has no released BPE: expected encoder_bpe_40000.json + vocab_40000.bpe (OpenAI's "
                    "model folder) or vocab.json + merges.txt (transformers')")


def _count_merges(path: Path) -> int:
    """The merges of a merges.txt / vocab_*.bpe file: its lines after the version header, blank ones aside."""
    with open(path, encoding="utf-8") as handle:
        return sum(1 for number, line in enumerate(handle) if number and line.strip("\n"))


def _release_files(folder: Path) -> list[str]:
    return [path.name for path in folder.iterdir() if path.is_file() and not path.name.startswith(".")]


def download_from_hub(repository: str, revision: str, destination: Path) -> str | None:
    """The released files of `repository` at `revision` into `destination` with huggingface_hub (HF_ENDPOINT
    names another endpoint); returns the commit the hub served."""
    try:
        import huggingface_hub
        from huggingface_hub.utils import EntryNotFoundError, HfHubHTTPError
    except ImportError:
        raise UserError("huggingface_hub is not installed: `make install` installs it from requirements/lock.txt "
                        "(tokenizers brings it); or download the release yourself and pass its folder") from None
    endpoint = os.environ.get("HF_ENDPOINT") or None

    def fetch(name: str) -> None:
        huggingface_hub.hf_hub_download(repository, name, revision=revision, local_dir=destination, endpoint=endpoint)

    try:
        metadata = huggingface_hub.get_hf_file_metadata(
            huggingface_hub.hf_hub_url(repository, HUB_FILES[0], revision=revision, endpoint=endpoint))
        for name in HUB_FILES:
            fetch(name)
        for name in HUB_WEIGHTS:
            try:
                fetch(name)
                break
            except EntryNotFoundError:
                continue
        else:
            raise UserError(f"{repository} at {revision} has none of {', '.join(HUB_WEIGHTS)}")
    except (HfHubHTTPError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"could not fetch {repository} at revision {revision} from the Hugging Face hub ({first}); "
                        "check the network (HF_ENDPOINT names a mirror), or download the release and pass its "
                        "folder") from None
    shutil.rmtree(destination / ".cache", ignore_errors=True)  # huggingface_hub's own bookkeeping
    return metadata.commit_hash
