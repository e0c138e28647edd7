"""Stage `layer-figure`: Figure 2 (left), accuracy against the number of pretrained blocks transferred."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from gpt1 import layout
from gpt1.atomic import atomic_path
from gpt1.config import Params
from gpt1.eval.analysis import plot_layer_transfer, layer_transfer_rows, layer_transfer_trend

log = logging.getLogger(__name__)


def run_layer_transfer(results_dir: Path, tasks: list[str], layers: list[int], seeds: list[int], all_layers: int,
                       out_csv: Path, out_trend_csv: Path, out_png: Path) -> pd.DataFrame:
    """Figure 2 (left): results/layer_transfer/<task>/layers<k>/seed<s> for k < all_layers and
    results/finetune/<task>/full/seed<s> for k = all_layers, as a table, a trend table and a figure."""
    frame = layer_transfer_rows(results_dir, tasks, layers, seeds, all_layers)
    table = frame.groupby(["task", "split", "layers"])["accuracy"].agg(["mean", "std"]).reset_index()
    table["std"] = table["std"].fillna(0.0)  # one seed: no spread
    with atomic_path(out_csv) as temporary:
        table.to_csv(temporary, index=False, float_format="%.4f")
    trend = layer_transfer_trend(table, all_layers)
    with atomic_path(out_trend_csv) as temporary:
        trend.to_csv(temporary, index=False, float_format="%.4f")
    log.info("layer transfer trend:\n%s", trend.to_string())
    plot_layer_transfer(table, tasks, [*layers, all_layers], out_png)
    return table


def main(args, params: Params) -> None:
    settings = params.analysis
    results = layout.RESULTS
    run_layer_transfer(results, settings.layer_transfer_tasks, settings.layer_transfer_layers,
                       settings.layer_transfer_seeds, params.model.n_layer, results / "layer_transfer.csv",
                       results / "layer_transfer_trend.csv", results / "layer_transfer.png")
