"""One command line, `gpt1 <stage>`: the only thing dvc.yaml and the Snakefile call.

Each DAG stage is a module of gpt1/stages with `main(args, params)` and, where the stage takes options,
`add_arguments(parser)`; it is imported only when its command runs, so `gpt1 download` never loads torch.
The other commands (profile, benchmark, plan, import-, export-weights, fetch-released, generate, predict, compare)
are tools, not stages.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path

from gpt1 import layout
from gpt1.pipeline import one_off
from gpt1.params.schema import load_params
from gpt1.kinds import TRANSFORMER
from gpt1.params.trace import trace_if_asked
from gpt1.params.files import DEFAULT_PARAMS
from gpt1.errors import UserError
from gpt1.pipeline.stage_table import STAGES, job_log, module_name


def _profile(args, params) -> None:
    from gpt1.params import profiles

    print(profiles.describe(args.files, args.params, as_yaml=args.yaml))


def _benchmark(args, params) -> None:
    from gpt1.commands import benchmark

    benchmark.main(params, configs=args.configs, batch=args.batch, steps=args.steps, rounds=args.rounds,
                   device=args.device, compile=args.compile, threads=args.threads, dtype=args.dtype,
                   output=args.output, compile_mode=args.compile_mode, lm_loss=args.lm_loss,
                   reference=args.reference, deterministic=args.deterministic, pad_vocab_to=args.pad_vocab_to,
                   breakdown=args.breakdown, dropout=args.dropout)


def _plan(args, params) -> None:
    from gpt1.commands import plan_report

    plan_report.main(params, gpus=args.gpus, throughput=args.throughput, output=args.json)


def _import_weights(args, params) -> None:
    from gpt1.files.atomic import claim_file
    from gpt1.model import safetensors_file, weights
    from gpt1.model.lm import METADATA_KEY, save_model

    claim_file(args.out, args.force, lambda path: safetensors_file.has_entry(path, METADATA_KEY), "a gpt1 checkpoint")
    model = weights.import_weights(args.source, n_head=args.n_head)
    save_model(model, args.out)
    logging.getLogger("gpt1.model.weights").info("wrote %s (%d parameters)", args.out, model.num_parameters())


def _fetch_released(args, params) -> None:
    from gpt1.commands import fetch_released

    fetch_released.main(args.source, args.out, revision=args.revision, force=args.force, n_head=args.n_head)


def _generate(args, params) -> None:
    from gpt1.commands import generate

    generate.main(args)


def _predict(args, params) -> None:
    from gpt1.commands import predict

    predict.main(args)


def _export_weights(args, params) -> None:
    from gpt1.files.atomic import claim_folder

    claim_folder(args.out, args.force)  # before torch's import, which takes seconds: a refusal comes at once
    from gpt1.model import weights
    from gpt1.model.lm import GPT1, load_model

    model = load_model(args.model)
    if not isinstance(model, GPT1):
        raise UserError(f"{args.model} is a {model.kind} model; only the Transformer has the released layouts")
    if args.format == "hf":
        weights.export_hf(model, args.out, args.bpe)
    else:
        weights.export_openai(model, args.out)
    logging.getLogger("gpt1.model.weights").info("wrote %s (%s layout)", args.out, args.format)


def _compare(args, params) -> None:
    from gpt1.files.atomic import atomic_write_text
    from gpt1.eval import compare

    if args.output is not None:
        if args.output.suffix not in (".md", ".csv"):
            raise UserError(f"--output {args.output}: name a .md or a .csv file")
        if args.output.exists() and not args.force:
            raise UserError(f"--output {args.output} exists; choose another name, or --force to replace it")
    with compare.opened(Path.cwd(), [args.a, args.b]) as (first, second):
        table = compare.compare(first, second)
    text = compare.markdown(table, args.a, args.b)
    print(text, end="")
    if args.output is not None:
        atomic_write_text(args.output, compare.csv(table) if args.output.suffix == ".csv" else text)


TOOLS = {
    "profile": (_profile, "print the `dvc exp run -S ...` line that applies profiles (or, --yaml, the composed params)"),
    "benchmark": (_benchmark, "training throughput of our model vs transformers' OpenAIGPTLMHeadModel"),
    "plan": (_plan, "the training work the params ask for (tokens, updates, FLOPs) and its expected GPU-hours and "
             "wall time on N GPUs, from a measured throughput"),
    "import-weights": (_import_weights, "convert released GPT-1 weights (HF folder or OpenAI's npy files)"),
    "fetch-released": (_fetch_released, "the released GPT-1 (a local folder in either released layout, or the "
                       "Hugging Face hub) as the folder profiles/released.yaml points at"),
    "export-weights": (_export_weights, "write a Transformer checkpoint in transformers' or OpenAI's layout"),
    "generate": (_generate, "sample text from a language model (ours, a checkpoint, or released weights)"),
    "predict": (_predict, "run a kept fine-tuned model (results/finetune/<method>/<task>/seed<S>) on examples"),
    "compare": (_compare, "B - A for every method and task two experiments ran, with Table 5's 95 % interval (test "
                "examples and seeds resampled) and a verdict (experiments, git revisions or workspace; nothing "
                "checked out)"),
}
# file tools, which work outside a project, and compare, which reads each side's own params.yaml
NO_PARAMS = ("import-weights", "fetch-released", "export-weights", "generate", "predict", "compare")


def stage_module(command: str):
    return importlib.import_module(f"gpt1.stages.{module_name(command)}")


def log_path(args) -> Path:
    """The job's log file (gpt1/pipeline/stage_table.py), from its command-line arguments."""
    return job_log(args.stage, vars(args))


def _configure_logging(args) -> None:
    """The job's log file and stderr. Under torchrun only rank 0 writes the file (every rank opening it with "w"
    would truncate it), appending where `gpt1 pretrain` launched the processes and began the log itself."""
    from gpt1.train.launch import LAUNCHED

    stage, rank = args.stage, int(os.environ.get("RANK", "0"))
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter(f"gpt1 {stage}: %(message)s" if rank == 0 else
                                           f"gpt1 {stage} (rank {rank}): %(message)s"))
    handlers: list[logging.Handler] = [console]
    if rank == 0:
        path = log_path(args)
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(path, mode="a" if os.environ.get(LAUNCHED) else "w")
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        handlers.append(file_handler)
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpt1", description=__doc__)
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="parameters file (default: params.yaml)")
    parser.add_argument("--profile", type=Path, action="append", default=[], metavar="FILE",
                        help="a profile merged over the parameters (only the keys it changes); repeat to compose")
    commands = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    texts = {**{name: spec.help for name, spec in STAGES.items()}, **{name: text for name, (_, text) in TOOLS.items()}}
    # argparse %-formats a help string (not a description): a literal % ("95 %") is written %% there.
    parsers = {name: commands.add_parser(name, help=text.replace("%", "%%"), description=text)
               for name, text in texts.items()}
    # Only the stages that take options are imported here (none loads torch at import time), so building the
    # parser stays cheap.
    for name, spec in STAGES.items():
        if spec.options:
            stage_module(name).add_arguments(parsers[name])
        if spec.one_off:
            parsers[name].set_defaults(one_off_option=spec.one_off.option)
    bench = parsers["benchmark"]
    bench.add_argument("--configs", nargs="+", choices=["default", "mid", "paper"], default=None,
                       help="named configs (default: default mid on a CPU, paper on CUDA); paper: 12 x 768, 512 "
                       "positions, vocabulary 40,478, no data folder needed")
    bench.add_argument("--batch", type=int, default=None, help="sequences per step (default: pretrain.micro_batch_size)")
    bench.add_argument("--steps", type=int, default=5, help="timed steps per round")
    bench.add_argument("--rounds", type=int, default=5, help="interleaved rounds per model")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--compile", action="store_true", help="torch.compile both models")
    bench.add_argument("--compile-mode", default=None,
                       help="torch.compile's mode (implies --compile), e.g. reduce-overhead (CUDA graphs) or "
                       "max-autotune-no-cudagraphs")
    bench.add_argument("--lm-loss", choices=["chunked", "dense"], default="chunked",
                       help="our model's LM loss: chunked (never holds the logits) or dense (plain cross-entropy)")
    bench.add_argument("--nondeterministic", dest="deterministic", action="store_false",
                       help="allow CUDA's non-deterministic kernels (training asks for deterministic ones)")
    bench.add_argument("--no-reference", dest="reference", action="store_false",
                       help="time our model alone (to compare settings of ours; no ratio)")
    bench.add_argument("--pad-vocab-to", type=int, default=None, metavar="N",
                       help="pad our output layer's rows to a multiple of N (1: none; default: 64 on CUDA, none on a CPU)")
    bench.add_argument("--breakdown", action="store_true",
                       help="also profile our step: its time in matrix products, attention, optimizer, copies, the rest")
    bench.add_argument("--dropout", type=float, default=None,
                       help="every dropout rate of both models (default: the config's; 0 measures what dropout costs)")
    bench.add_argument("--threads", type=int, default=None, help="torch CPU threads for both models")
    bench.add_argument("--dtype", choices=["auto", "float32", "bfloat16"], default="auto",
                       help="autocast for both models (auto: bf16 on CUDA, fp32 on CPU)")
    bench.add_argument("--output", type=Path, default=None, help="also write the results as JSON here")
    planner = parsers["plan"]
    planner.add_argument("--gpus", type=int, default=1, help="GPUs to spread the work over (default: 1)")
    planner.add_argument("--throughput", type=Path, default=None, metavar="FILE",
                         help="a `gpt1 benchmark --output` JSON to take the FLOP rate from (default: the paper model "
                         "measured on an H200, docs/results/gpu/)")
    planner.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the figures as JSON here")
    parsers["profile"].add_argument("files", type=Path, nargs="+", help="profiles, e.g. profiles/paper.yaml")
    parsers["profile"].add_argument("--yaml", action="store_true", help="print the composed parameters instead")
    importer = parsers["import-weights"]
    importer.add_argument("source", type=Path, help="folder: config.json + model.safetensors/pytorch_model.bin, "
                          "or params_shapes.json + params_0..9.npy")
    importer.add_argument("--out", type=Path, required=True, help="gpt1 checkpoint to write (.safetensors)")
    importer.add_argument("--n-head", type=int, default=12, help="heads (OpenAI's files do not record it)")
    importer.add_argument("--force", action="store_true", help="replace --out even if it is not a gpt1 checkpoint")
    from gpt1.commands.fetch_released import DEFAULT_OUT, HUB_REPOSITORY, HUB_REVISION  # plain constants

    fetcher = parsers["fetch-released"]
    fetcher.add_argument("source", nargs="?", default=HUB_REPOSITORY,
                         help="a folder in OpenAI's layout (params_shapes.json + params_0..9.npy + "
                         "encoder_bpe_40000.json + vocab_40000.bpe) or transformers' (config.json + model.safetensors or pytorch_model.bin + "
                         f"vocab.json + merges.txt), or a Hugging Face repository id (default: {HUB_REPOSITORY})")
    fetcher.add_argument("--out", type=Path, default=DEFAULT_OUT,
                         help=f"folder to write (default: {DEFAULT_OUT}/, which profiles/released.yaml reads)")
    fetcher.add_argument("--revision", default=HUB_REVISION,
                         help=f"the hub's revision: a branch, tag or commit (default: {HUB_REVISION})")
    fetcher.add_argument("--n-head", type=int, default=12, help="heads (OpenAI's files do not record it)")
    fetcher.add_argument("--force", action="store_true", help="replace --out whole even if gpt1 did not write it")
    exporter = parsers["export-weights"]
    exporter.add_argument("--model", type=Path, default=layout.pretrained_model(TRANSFORMER),
                          help="gpt1 Transformer checkpoint (default: the pretrained Transformer)")
    exporter.add_argument("--format", choices=["hf", "openai"], required=True,
                          help="hf: OpenAIGPTLMHeadModel folder (+ tokenizer); openai: params_shapes.json + npy")
    exporter.add_argument("--out", type=Path, required=True,
                          help="folder to write: new, empty, or an earlier export (replaced whole)")
    exporter.add_argument("--force", action="store_true",
                          help="replace --out whole even if it holds files gpt1 did not write")
    exporter.add_argument("--bpe", type=Path, default=layout.BPE,
                          help="hf: the BPE folder whose vocab.json + merges.txt go with the weights")
    sampler = parsers["generate"]
    sampler.add_argument("--model", type=Path, default=layout.pretrained_model(TRANSFORMER),
                         help="gpt1 checkpoint (.safetensors; pretraining checkpoints too) or a released-weights folder")
    sampler.add_argument("--prompt", default="", help="text to continue; - reads it from stdin (default: none)")
    sampler.add_argument("--max-new-tokens", type=int, default=50)
    sampler.add_argument("--temperature", type=float, default=1.0, help="0: greedy decoding")
    sampler.add_argument("--top-k", type=int, default=None, help="sample among the k likeliest tokens only")
    sampler.add_argument("--seed", type=int, default=0, help="the same seed gives the same text")
    sampler.add_argument("--bpe", type=Path, default=layout.BPE,
                         help="the model's BPE folder (the released encoder_bpe_40000.json pair for released weights)")
    predictor = parsers["predict"]
    predictor.add_argument("--run", type=Path, required=True,
                           help="a fine-tuning run folder with model.safetensors, e.g. results/finetune/full/rt_polarity/seed1")
    predictor.add_argument("--input", type=Path, default=Path("-"),
                           help="JSONL in the task's fields (or plain text lines for classification); - is stdin")
    predictor.add_argument("--bpe", type=Path, default=layout.BPE, help="the BPE the run was trained with")
    comparer = parsers["compare"]
    comparer.add_argument("a", metavar="A", help="an experiment name, a git revision or `workspace`")
    comparer.add_argument("b", metavar="B", help="the same for B; the table shows B - A")
    comparer.add_argument("--output", type=Path, default=None, help="also write the table here (.md or .csv)")
    comparer.add_argument("--force", action="store_true", help="replace --output if it exists")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = TOOLS[args.stage][0] if args.stage in TOOLS else stage_module(args.stage).main
    try:
        params = None if args.stage in NO_PARAMS else load_params(args.params, args.profile)
        if args.stage in STAGES and STAGES[args.stage].one_off:
            one_off.one_off(args)  # a half-given one-off is an error before its log (named by both) is opened
        if args.stage not in ("profile", "plan", "generate", "predict", "compare"):  # their output is the result; no log
            _configure_logging(args)
        if args.stage in STAGES:
            trace_if_asked(params)  # GPT1_PARAMS_TRACE set: note the params keys this stage reads
        handler(args, params)
    except UserError as error:
        print(f"gpt1 {args.stage}: error: {error}", file=sys.stderr)
        return error.exit_code
    except FileNotFoundError as error:
        if args.stage not in STAGES:
            raise
        # A stage's input is the output of an earlier stage (dvc.yaml): it has not run, or its output was removed.
        print(f"gpt1 {args.stage}: error: {error.filename or error} not found; run the stages before "
              f"`{args.stage}` first (`dvc repro {module_name(args.stage)}` runs what it needs)",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
