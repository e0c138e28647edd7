"""`gpt1 generate`: sample text from a language model, the quickest sanity check of a pretraining run.

Any model the pipeline holds: a pretraining checkpoint or final model (Transformer or LSTM, our
safetensors), or released GPT-1 weights (an HF folder or OpenAI's npy folder, read as `import-weights`
does; pair them with the released BPE via --bpe). Sampling is ancestral with a temperature and an optional
top-k cut; temperature 0 is greedy decoding. A seeded CPU generator draws the samples, so a seed gives the
same text on every run. The model never sees more than its positions: the Transformer reads the last
n_positions tokens; the LSTM, which has no such limit, is cut the same way so both read the same window.
"""

from __future__ import annotations

import math

from pathlib import Path
from typing import Sequence

import torch

from gpt1.errors import UserError
from gpt1.files.text_files import read_stdin
from gpt1.model.lm import LanguageModel, load_model
from gpt1.tokenizer.bpe import Gpt1Bpe

DEFAULT_WINDOW = 512  # the LSTM's reading window when it has no Transformer positions to match


def load_language_model(path: Path, device: str | torch.device = "cpu") -> LanguageModel:
    """Our safetensors checkpoint, or a folder of released weights (HF or OpenAI's layout)."""
    path = Path(path)
    if path.is_dir():
        from gpt1.model.weights import import_weights  # released weights only: numpy readers and their checks

        return import_weights(path).to(device).eval()
    return load_model(path, device)


def window(model: LanguageModel) -> int:
    return getattr(model.config, "n_positions", DEFAULT_WINDOW)


def next_token(logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator) -> int:
    """One token from the last position's logits (V,): argmax at temperature 0 or top_k 1, else a draw."""
    if temperature == 0 or top_k == 1:
        return int(logits.argmax())
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probabilities = torch.softmax(logits, dim=-1)
    return int(torch.multinomial(probabilities.cpu(), 1, generator=generator))


@torch.inference_mode()
def sample(model: LanguageModel, prompt: Sequence[int], max_new_tokens: int, temperature: float = 1.0,
           top_k: int | None = None, seed: int = 0, allowed: int | None = None) -> list[int]:
    """The new tokens only. `allowed`: draw among the first `allowed` ids (the BPE's text tokens, so the
    fine-tuning special tokens, whose rows pretraining never trained, are never sampled)."""
    if not prompt:
        raise UserError("generation needs at least one prompt token")
    if max_new_tokens < 0 or not math.isfinite(temperature) or temperature < 0:
        raise UserError(f"--max-new-tokens and --temperature must be finite numbers >= 0 (got {max_new_tokens}, "
                        f"{temperature})")
    if top_k is not None and top_k < 1:
        raise UserError("--top-k must be >= 1 (or left out for no cut)")
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    tokens, limit = list(prompt), window(model)
    for _ in range(max_new_tokens):
        inputs = torch.tensor([tokens[-limit:]], device=device)
        logits = model.lm_logits(model.hidden_states(inputs)[0, -1])
        if allowed is not None:
            logits = logits[:allowed]
        tokens.append(next_token(logits, temperature, top_k, generator))
    return tokens[len(prompt):]


def generate_text(model: LanguageModel, bpe: Gpt1Bpe, prompt: str, max_new_tokens: int, temperature: float,
                  top_k: int | None, seed: int) -> str:
    """The prompt's continuation as text. The prompt follows the document separator, as every pretraining
    document does; an empty prompt starts a document from nothing."""
    if model.config.vocab_size not in (len(bpe.encoder), bpe.vocab_size):  # without or with the special tokens
        raise UserError(f"the model has {model.config.vocab_size} token embeddings but the BPE has "
                        f"{len(bpe.encoder)} tokens; pass the BPE the model was trained with (--bpe)")
    ids = list(bpe.document_start()) + bpe.encode(prompt)
    if not ids:
        raise UserError("the BPE has no document separator and the prompt is empty: give a --prompt")
    new = sample(model, ids, max_new_tokens, temperature, top_k, seed, allowed=len(bpe.encoder))
    return bpe.decode(new)


def main(args) -> None:
    prompt = read_stdin() if args.prompt == "-" else args.prompt
    model = load_language_model(args.model)
    text = generate_text(model, Gpt1Bpe.load(args.bpe), prompt.strip(), args.max_new_tokens, args.temperature,
                         args.top_k, args.seed)
    print(text)
