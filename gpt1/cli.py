"""One command line, `gpt1 <stage>`: the only thing dvc.yaml and the Snakefile call.

Each DAG stage is a module of gpt1/stages with `main(args, params)` and, where the stage takes options,
`add_arguments(parser)`; it is imported only when its command runs, so `gpt1 download` never loads torch.
The other commands (profile, benchmark, import-weights) are tools, not stages.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

from gpt1.config import load_params
from gpt1.params_files import DEFAULT_PARAMS
from gpt1.errors import UserError

LOG_DIR = Path("logs")


def _profile(args, params) -> None:
    from gpt1 import profiles

    print(profiles.describe(args.files, args.params, as_yaml=args.yaml))


def _benchmark(args, params) -> None:
    from gpt1 import benchmark

    benchmark.main(params, configs=args.configs, steps=args.steps, rounds=args.rounds, device=args.device,
                   compile=args.compile, threads=args.threads, dtype=args.dtype)


def _import_weights(args, params) -> None:
    from gpt1.model import weights
    from gpt1.model.lm import save_model

    model = weights.import_weights(args.source, n_head=args.n_head)
    save_model(model, args.out)
    logging.getLogger("gpt1.model.weights").info("wrote %s (%d parameters)", args.out, model.num_parameters())


STAGES = {  # command -> (module of gpt1.stages, which is also the dvc.yaml stage's name, help)
    "user-files": ("user_files", "fingerprint the files behind params' paths (local_paths, import_from, init_from)"),
    "download": ("download", "fetch the corpus and task files (sha256-pinned, cached)"),
    "prepare": ("prepare", "clean, deduplicate, decontaminate and split the corpus; split the tasks"),
    "bpe": ("bpe", "train GPT-1's BPE on the training corpus"),
    "tokenize": ("tokenize", "encode the corpus splits to memory-mappable token arrays"),
    "pretrain": ("pretrain", "pretrain the Transformer or the LSTM language model (resumes after interruption)"),
    "finetune": ("finetune", "fine-tune one (task, variant), every seed, with the paper's input transformations"),
    "layer-transfer": ("layer_transfer", "fine-tune with only the first k pretrained blocks transferred, every seed"),
    "baselines": ("baselines", "majority-class and TF-IDF + logistic regression baselines"),
    "evaluate": ("evaluate", "gather every test metric into results/scores.csv and results/metrics.json"),
    "zeroshot": ("zeroshot", "zero-shot heuristics over the pretraining checkpoints (Figure 2, right)"),
    "ablation": ("ablation", "Table 5 and full vs the baselines: results/ablation*.csv, ablation.md"),
    "layer-figure": ("layer_figure", "Figure 2 (left): results/layer_transfer.csv, _trend.csv and .png"),
}
TOOLS = {
    "profile": (_profile, "print the `dvc exp run -S ...` line that applies profiles (or, --yaml, the composed params)"),
    "benchmark": (_benchmark, "training throughput of our model vs transformers' OpenAIGPTLMHeadModel"),
    "import-weights": (_import_weights, "convert released GPT-1 weights (HF folder or OpenAI's npy files)"),
}


def stage_module(command: str):
    return importlib.import_module(f"gpt1.stages.{STAGES[command][0]}")


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
    texts = {name: text for name, (_, text) in {**STAGES, **TOOLS}.items()}
    parsers = {name: commands.add_parser(name, help=text, description=text) for name, text in texts.items()}
    # Only the stages that take options are imported here (pretrain, finetune, layer-transfer; none loads
    # torch at import time), so building the parser stays cheap.
    for name in ("pretrain", "finetune", "layer-transfer"):
        stage_module(name).add_arguments(parsers[name])
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
    handler = TOOLS[args.stage][0] if args.stage in TOOLS else stage_module(args.stage).main
    try:
        # import-weights converts files and reads no parameters: it must work outside a project too
        params = None if args.stage == "import-weights" else load_params(args.params, args.profile)
        if args.stage != "profile":  # its output is the command's result, and it writes no log
            _configure_logging(args)
        handler(args, params)
    except UserError as error:
        print(f"gpt1 {args.stage}: error: {error}", file=sys.stderr)
        return 2
    except FileNotFoundError as error:
        if args.stage not in STAGES:
            raise
        # A stage's input is the output of an earlier stage (dvc.yaml): it has not run, or its output was removed.
        print(f"gpt1 {args.stage}: error: {error.filename or error} not found; run the stages before "
              f"`{args.stage}` first (`dvc repro {STAGES[args.stage][0]}` runs what it needs)",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
