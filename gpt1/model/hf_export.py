"""A model as a transformers folder that OpenAIGPTLMHeadModel (and, with the BPE, OpenAIGPTTokenizer) loads:
`gpt1 export-weights --format hf`. Apart from gpt1/model/weights.py, which importing released weights uses, so that
pretraining does not run the BPE's code."""

from __future__ import annotations

import json
from pathlib import Path

from safetensors.torch import save_file

from gpt1.errors import UserError
from gpt1.files.atomic import atomic_directory
from gpt1.model.lm import GPT1
from gpt1.model.weights import hf_config_dict, to_hf_state_dict


def export_hf(model: GPT1, directory: Path | str, bpe_dir: Path | str | None = None) -> None:
    """Write config.json + model.safetensors that OpenAIGPTLMHeadModel.from_pretrained reads; with `bpe_dir`
    also vocab.json + merges.txt for OpenAIGPTTokenizer (GPT-1's encoder_bpe / vocab_*.bpe pair, renamed)."""
    tensors = to_hf_state_dict(model)
    del tensors["lm_head.weight"]  # tied: transformers re-ties it from the token embedding on load
    if bpe_dir is not None:
        from gpt1.tokenizer.bpe import Gpt1Bpe  # spaCy and tokenizers: only when a tokenizer is exported

        bpe = Gpt1Bpe.load(Path(bpe_dir))
        if bpe.vocab_size != model.config.vocab_size:
            raise UserError(f"{bpe_dir} has {bpe.vocab_size} tokens (special tokens included) but the model has "
                            f"{model.config.vocab_size}; export with the BPE the model was trained with")
    with atomic_directory(directory, mark_owner=True) as temporary:
        (temporary / "config.json").write_text(json.dumps(hf_config_dict(model.config), indent=2) + "\n")
        save_file(tensors, str(temporary / "model.safetensors"), metadata={"format": "pt"})
        if bpe_dir is not None:
            bpe.write_vocabulary(temporary / "vocab.json", temporary / "merges.txt")
