"""Stage `layer-figure`: Figure 2 (left), accuracy against the number of pretrained blocks transferred."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from gpt1 import layout
from gpt1.files.atomic import atomic_path
from gpt1.params.schema import Params
from gpt1.eval.layer_transfer import plot_layer_transfer, layer_transfer_rows, layer_transfer_trend

log = logging.getLogger(__name__)


def run_layer_transfer(results_dir: Path, tasks: list[str], layers: list[int], seeds: list[int],
                       all_layers: int) -> pd.DataFrame:
    """Figure 2 (left): results/layer_transfer/<task>/layers<k>/seed<s> for k < all_layers and
    results/finetune/full/<task>/seed<s> for k = all_layers, as a table, a trend table and a figure beside them."""
    files = layout.Results(results_dir)
    frame = layer_transfer_rows(results_dir, tasks, layers, seeds, all_layers)
    table = frame.groupby(["task", "split", "layers"])["accuracy"].agg(["mean", "std"]).reset_index()
    table["std"] = table["std"].fillna(0.0)  # one seed: no spread
    with atomic_path(files.layer_transfer) as temporary:
        table.to_csv(temporary, index=False)  # every digit: a page rounds the value once
    trend = layer_transfer_trend(results_dir, table, seeds, all_layers)
    with atomic_path(files.layer_transfer_trend) as temporary:
        trend.to_csv(temporary, index=False)
    log.info("layer transfer trend:\n%s", trend.to_string())
    plot_layer_transfer(table, tasks, [*layers, all_layers], files.layer_transfer_plot)
    return table


def main(args, params: Params) -> None:
    settings = params.analysis
    run_layer_transfer(layout.RESULTS, settings.layer_transfer_tasks, settings.layer_transfer_layers,
                       settings.layer_transfer_seeds, params.model.n_layer)
