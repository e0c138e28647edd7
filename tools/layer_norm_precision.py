"""Whether LayerNorms may return bf16 in training: pretraining under bf16 autocast with the LayerNorms' output in fp32
(what training does) and in bf16 (`gpt1 benchmark --bf16-layer-norm`, faster on a GPU), the same seeds, side by
side, on CPU, before a GPU decides.

    python tools/layer_norm_precision.py layer-norm-precision --tokens data/tokens --updates 300 --seeds 1 2 3

Each run trains the default's model (params.yaml's model section, its vocabulary from the tokens' meta.json) from
the same initialisation and batch order per seed, with AdamW (lr 1e-3 after a linear warmup of a tenth of the
updates, as the default pretrains), and reads the validation loss on fixed windows of the validation split every
--every updates. The verdict is computed, never typed: the bf16 − fp32 difference of the final validation loss,
per seed (paired), is "equal within noise" when its mean lies within two standard errors of 0 over the seeds, and
within the seeds' own spread of the fp32 runs' final loss. It writes docs/measurements/NAME.json beside the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def model_config(tokens: Path):
    import yaml

    from gpt1.model.lm import TransformerConfig

    model = yaml.safe_load((ROOT / "params.yaml").read_text())["model"]
    vocab = json.loads((tokens / "meta.json").read_text())["vocab_size"]
    return TransformerConfig(vocab_size=vocab, n_positions=model["n_positions"], n_layer=model["n_layer"],
                             n_head=model["n_head"], d_model=model["d_model"], d_ff=model["d_ff"],
                             embd_dropout=model["dropout"], resid_dropout=model["dropout"],
                             attn_dropout=model["attn_dropout"])


def train(config, tokens: Path, seed: int, bf16_layer_norm: bool, updates: int, batch: int, every: int,
          eval_tokens: int = 16_384) -> list:
    """[(update, validation loss)] of one run."""
    import torch

    from gpt1.model.lm import GPT1
    from gpt1.train.batches import WindowSampler, evaluation_starts, windows_to_batch

    train_tokens = np.memmap(tokens / "train.bin", dtype=np.uint16, mode="r")
    val_tokens = np.memmap(tokens / "val.bin", dtype=np.uint16, mode="r")
    length = config.n_positions
    sampler = WindowSampler(train_tokens, length, seed)
    val_inputs, val_targets = windows_to_batch(val_tokens, evaluation_starts(val_tokens, length, eval_tokens), length)
    torch.manual_seed(seed)
    model = GPT1(config)
    model.keep_autocast_dtype_in_layer_norms(bf16_layer_norm)
    optimizer = torch.optim.AdamW(model.parameter_groups(0.01), lr=1e-3)
    warmup = max(1, updates // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))

    def validation() -> float:
        model.eval()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            losses = [model(val_inputs[i:i + 32], val_targets[i:i + 32]).float().item()
                      for i in range(0, len(val_inputs), 32)]
        model.train()
        return float(np.mean(losses))

    curve = [(0, validation())]
    for update in range(1, updates + 1):
        inputs, targets = sampler.batch((update - 1) * batch, batch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(inputs, targets)
        if not torch.isfinite(loss):
            raise SystemExit(f"seed {seed}, bf16 LayerNorm {bf16_layer_norm}: the loss is {loss.item()} at update "
                             f"{update}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if update % every == 0 or update == updates:
            curve.append((update, validation()))
    return curve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the file's name in docs/measurements/, without .json")
    parser.add_argument("--tokens", type=Path, default=ROOT / "data" / "tokens", help="a `gpt1 tokenize` output")
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--eval-tokens", type=int, default=16_384, help="validation tokens read at each point")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args(argv)
    config = model_config(args.tokens)
    runs, began = {}, time.perf_counter()
    for seed in args.seeds:
        for name, bf16 in (("fp32", False), ("bf16", True)):
            started = time.perf_counter()
            curve = train(config, args.tokens, seed, bf16, args.updates, args.batch, args.every, args.eval_tokens)
            runs.setdefault(name, {})[seed] = {"curve": [[u, round(v, 5)] for u, v in curve],
                                               "seconds": round(time.perf_counter() - started, 1)}
            print(f"seed {seed} LayerNorm output {name}: {curve[-1][1]:.4f} after {args.updates} updates",
                  file=sys.stderr)
    final = {name: np.array([runs[name][seed]["curve"][-1][1] for seed in args.seeds]) for name in runs}
    differences = final["bf16"] - final["fp32"]
    standard_error = float(np.std(differences, ddof=1) / np.sqrt(len(differences))) if len(differences) > 1 else None
    seed_spread = float(np.std(final["fp32"], ddof=1)) if len(differences) > 1 else None
    equal = (standard_error is not None and abs(differences.mean()) <= 2 * standard_error
             and abs(differences.mean()) <= seed_spread)
    record = {"updates": args.updates, "batch": args.batch, "tokens_per_update": args.batch * config.n_positions,
              "seeds": args.seeds, "eval_tokens": args.eval_tokens, "model": config.__dict__, "runs": runs,
              "final_fp32": final["fp32"].round(5).tolist(), "final_bf16": final["bf16"].round(5).tolist(),
              "mean_difference": round(float(differences.mean()), 5),
              "standard_error": None if standard_error is None else round(standard_error, 5),
              "fp32_seed_sd": None if seed_spread is None else round(seed_spread, 5),
              "verdict": "equal within noise" if equal else "differs",
              "wall_s": round(time.perf_counter() - began, 1), "exit_status": 0,
              "precision": "bf16 autocast (CPU), LayerNorm output fp32 against bf16",
              "commit": measure.commit(), "date": datetime.date.today().isoformat(), "machine": measure.machine()}
    target = measure.FOLDER / f"{args.name}.json"
    measure.write_record(target, record)
    print(json.dumps({key: record[key] for key in ("final_fp32", "final_bf16", "mean_difference", "standard_error",
                                                   "fp32_seed_sd", "verdict")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
