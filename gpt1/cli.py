"""One command line, `gpt1 <stage>`: the only thing dvc.yaml and the Snakefile call."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from gpt1.config import DEFAULT_PARAMS, load_params
from gpt1.errors import UserError

LOG_DIR = Path("logs")


def _download(args, params) -> None:
    from gpt1 import download

    download.run(params)


def _prepare(args, params) -> None:
    from gpt1 import prepare

    prepare.run(params)


def _bpe(args, params) -> None:
    from gpt1 import bpe

    if params.bpe.import_from:
        bpe.import_released(Path(params.bpe.import_from), params.bpe.merges)
    else:
        bpe.run(params.bpe.merges)


def _tokenize(args, params) -> None:
    from gpt1 import encode

    encode.run()


def _pretrain(args, params) -> None:
    from gpt1 import pretrain

    pretrain.run(params, args.model)


def _seeds(args, configured: list[int]) -> list[int]:
    """The configured seeds (what the DAG runs, in one process), or the one `--seed` names for a one-off run."""
    return configured if args.seed is None else [args.seed]


def _finetune(args, params) -> None:
    from gpt1 import finetune

    finetune.run_seeds(params, args.task, args.variant, _seeds(args, params.finetune.seeds))


def _layer_transfer(args, params) -> None:
    from gpt1 import finetune

    out = Path("results/layer_transfer") / args.task / f"layers{args.layers}"
    finetune.run_seeds(params, args.task, "full", _seeds(args, params.analysis.layer_transfer_seeds), out_root=out,
                       transfer_layers=args.layers)


def _baselines(args, params) -> None:
    from gpt1 import baselines

    baselines.run(params)


def _evaluate(args, params) -> None:
    from gpt1 import evaluate

    evaluate.run(params)


def _zeroshot(args, params) -> None:
    from gpt1 import zeroshot

    zeroshot.run(params)


def _ablation(args, params) -> None:
    from gpt1 import analysis

    analysis.run_ablation(Path("results/scores.csv"), Path("data/tasks"), Path("results/finetune"), params.data.tasks,
                          params.finetune.seeds, params.finetune.max_train_examples, Path("results/ablation.csv"),
                          Path("results/ablation_std.csv"), Path("results/ablation_intervals.csv"),
                          Path("results/ablation.md"), baselines_json=Path("results/baselines.json"),
                          out_baselines_csv=Path("results/ablation_baselines.csv"))


def _layer_figure(args, params) -> None:
    from gpt1 import analysis

    settings = params.analysis
    analysis.run_layer_transfer(Path("results"), settings.layer_transfer_tasks, settings.layer_transfer_layers,
                                settings.layer_transfer_seeds, params.model.n_layer, Path("results/layer_transfer.csv"),
                                Path("results/layer_transfer_trend.csv"), Path("results/layer_transfer.png"))


def _profile(args, params) -> None:
    from gpt1 import profiles

    print(profiles.describe(args.files, args.params, as_yaml=args.yaml))


def _benchmark(args, params) -> None:
    from gpt1 import benchmark

    benchmark.main(params, configs=args.configs, steps=args.steps, rounds=args.rounds, device=args.device,
                   compile=args.compile, threads=args.threads, dtype=args.dtype)


def _import_weights(args, params) -> None:
    from gpt1 import weights
    from gpt1.model import save_model

    model = weights.import_weights(args.source, n_head=args.n_head)
    save_model(model, args.out)
    logging.getLogger("gpt1.weights").info("wrote %s (%d parameters)", args.out, model.num_parameters())


STAGES = {
    "download": (_download, "fetch the corpus and task files (sha256-pinned, cached)"),
    "prepare": (_prepare, "clean, deduplicate, decontaminate and split the corpus; split the tasks"),
    "bpe": (_bpe, "train GPT-1's BPE on the training corpus"),
    "tokenize": (_tokenize, "encode the corpus splits to memory-mappable token arrays"),
    "pretrain": (_pretrain, "pretrain the Transformer or the LSTM language model (resumes after interruption)"),
    "finetune": (_finetune, "fine-tune one (task, variant), every seed, with the paper's input transformations"),
    "layer-transfer": (_layer_transfer, "fine-tune with only the first k pretrained blocks transferred, every seed"),
    "baselines": (_baselines, "majority-class and TF-IDF + logistic regression baselines"),
    "evaluate": (_evaluate, "gather every test metric into results/scores.csv and results/metrics.json"),
    "zeroshot": (_zeroshot, "zero-shot heuristics over the pretraining checkpoints (Figure 2, right)"),
    "ablation": (_ablation, "Table 5 and full vs the baselines: results/ablation*.csv, ablation.md"),
    "layer-figure": (_layer_figure, "Figure 2 (left): results/layer_transfer.csv, _trend.csv and .png"),
    "profile": (_profile, "print the `dvc exp run -S ...` line that applies profiles (or, --yaml, the composed params)"),
    "benchmark": (_benchmark, "training throughput of our model vs transformers' OpenAIGPTLMHeadModel"),
    "import-weights": (_import_weights, "convert released GPT-1 weights (HF folder or OpenAI's npy files)"),
}


def log_path(args) -> Path:
    """One log per job, so parallel jobs never share a file (the Snakefile's `log:` uses the same names)."""
    if args.stage == "pretrain":
        return LOG_DIR / "pretrain" / f"{args.model}.log"
    if args.stage in ("finetune", "layer-transfer"):
        run = (LOG_DIR / "finetune" / args.task / args.variant if args.stage == "finetune"
               else LOG_DIR / "layer_transfer" / args.task / f"layers{args.layers}")
        # A one-off `--seed` run gets its own file, so it never overwrites the log of the stage's run.
        return run.with_name(f"{run.name}.log") if args.seed is None else run / f"seed{args.seed}.log"
    return LOG_DIR / f"{args.stage}.log"


def _configure_logging(args) -> None:
    stage = args.stage
    path = log_path(args)
    path.parent.mkdir(parents=True, exist_ok=True)
    formatter = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    file_handler = logging.FileHandler(path, mode="w")
    file_handler.setFormatter(formatter)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter(f"gpt1 {stage}: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[file_handler, console], force=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpt1", description=__doc__)
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="parameters file (default: params.yaml)")
    parser.add_argument("--profile", type=Path, action="append", default=[], metavar="FILE",
                        help="a profile merged over the parameters (only the keys it changes); repeat to compose")
    commands = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    parsers = {name: commands.add_parser(name, help=text, description=text) for name, (_, text) in STAGES.items()}
    parsers["pretrain"].add_argument("--model", choices=["transformer", "lstm"], required=True)
    for name in ("finetune", "layer-transfer"):
        parsers[name].add_argument("--task", required=True, help="a task of data.tasks")
        parsers[name].add_argument("--seed", type=int, default=None,
                                   help="run this seed only (default: every seed params.yaml lists)")
    parsers["finetune"].add_argument("--variant", choices=["full", "no_pretrain", "no_aux_lm", "lstm"], required=True)
    parsers["layer-transfer"].add_argument("--layers", type=int, required=True, help="pretrained blocks kept")
    bench = parsers["benchmark"]
    bench.add_argument("--configs", nargs="+", default=None, help="named configs (default: default mid)")
    bench.add_argument("--steps", type=int, default=5, help="timed steps per round")
    bench.add_argument("--rounds", type=int, default=5, help="interleaved rounds per model")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--compile", action="store_true", help="torch.compile both models")
    bench.add_argument("--threads", type=int, default=None, help="torch CPU threads for both models")
    bench.add_argument("--dtype", choices=["auto", "float32", "bfloat16"], default="auto",
                       help="autocast for both models (auto: bf16 on CUDA, fp32 on CPU)")
    parsers["profile"].add_argument("files", type=Path, nargs="+", help="profiles, e.g. profiles/paper.yaml")
    parsers["profile"].add_argument("--yaml", action="store_true", help="print the composed parameters instead")
    importer = parsers["import-weights"]
    importer.add_argument("source", type=Path, help="folder: config.json + model.safetensors/pytorch_model.bin, "
                          "or params_shapes.json + params_0..9.npy")
    importer.add_argument("--out", type=Path, required=True, help="gpt1 checkpoint to write (.safetensors)")
    importer.add_argument("--n-head", type=int, default=12, help="heads (OpenAI's files do not record it)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler, _ = STAGES[args.stage]
    try:
        params = load_params(args.params, args.profile)
        if args.stage != "profile":  # its output is the command's result, and it writes no log
            _configure_logging(args)
        handler(args, params)
    except UserError as error:
        print(f"gpt1 {args.stage}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
