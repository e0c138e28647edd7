"""One tiny version of params.yaml for every test that needs a whole parameter file.

Tests start from the real params.yaml with profiles/tiny.yaml over it (so a new section or key is exercised
at once, and the tiny profile is the one the tests run), give the model and the LSTM the shapes the unit
tests expect, and update whatever section a test names; layer-transfer depths and seeds, and the transfer
curve's tasks and checkpoints, are cut to fit.
"""

from __future__ import annotations

from pathlib import Path

from gpt1.params.files import compose_raw
from gpt1.params.schedule import log_spaced_updates

ROOT = Path(__file__).resolve().parents[1]
TINY_PROFILE = ROOT / "profiles" / "tiny.yaml"
TINY_MODEL = dict(n_positions=32, n_layer=2, n_head=2, d_model=32, d_ff=64, dropout=0.1, attn_dropout=0.1)
TINY_LSTM = dict(n_layer=1, d_embed=32, d_hidden=48, dropout=0.1)


def tiny_raw_params(**sections: dict) -> dict:
    """params.yaml + profiles/tiny.yaml as a plain dict (it can go to a subprocess or a file) with the unit
    tests' model and LSTM; each keyword updates that section's keys, e.g. `tiny_raw_params(model={"n_layer": 1})`, and
    `methods={"no_pretrain": {"lr": 1e-3}}` the keys of a method's entry."""
    raw, _ = compose_raw(ROOT / "params.yaml", [TINY_PROFILE])
    raw["model"], raw["lstm"] = dict(TINY_MODEL), dict(TINY_LSTM)
    for name, values in sections.items():
        if name == "methods":  # a method's keys update its entry; a new name adds one
            for method, entry in values.items():
                raw[name][method] = {**raw[name].get(method, {}), **entry}
        else:
            raw[name].update(values)
    # Layer transfer trains k < n_layer for seeds the finetune stage runs (k = n_layer is its full run).
    analysis, seeds = raw["analysis"], raw["finetune"]["seeds"]
    analysis["layer_transfer_layers"] = [k for k in analysis["layer_transfer_layers"] if k < raw["model"]["n_layer"]]
    analysis["layer_transfer_layers"] = analysis["layer_transfer_layers"] or [0]
    analysis["layer_transfer_seeds"] = [s for s in analysis["layer_transfer_seeds"] if s in seeds] or seeds[:1]
    pretrain = raw["pretrain"]
    steps = pretrain["transformer"].get("max_steps") or pretrain["max_steps"]
    if steps:  # released weights used as they are keep no checkpoints, and validation leaves the steps alone
        kept = log_spaced_updates(steps, pretrain["checkpoints"])[:-1]
        analysis["transfer_curve_steps"] = [step for step in analysis["transfer_curve_steps"] if step in kept] or kept[:1]
    analysis["transfer_curve_tasks"] = [task for task in analysis["transfer_curve_tasks"] if task in raw["data"]["tasks"]]
    return raw
