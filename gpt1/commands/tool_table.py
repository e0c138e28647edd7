"""What each tool is, declared once, as gpt1/pipeline/stage_table.py declares the stages: the CLI reads it here.

A tool is a command that is not a pipeline stage: the DAG never runs it. Like a stage, it is a module of gpt1/commands
with `add_arguments(parser)` (its options) and `main(args, params)`, named as its command (`import-weights` ->
gpt1/commands/import_weights.py), and a row below. The CLI imports every tool's module to build its parser, so a tool
module imports nothing heavy (torch, pandas) at its top: `main` imports what the work needs. Where the name is taken
by the module that does a tool's work (gpt1/commands/benchmark.py imports torch and is the library tests and other
code call), the row names the light module that holds the tool's command line instead (`module`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpt1.pipeline.stage_table import module_name


@dataclass(frozen=True)
class ToolSpec:
    help: str
    # reads params.yaml and the --profile files (loaded and validated before `main`, which gets them); False for the
    # file tools, which work outside a project, and compare, which reads each side's own params.yaml (`main` gets None)
    params: bool = True
    # writes logs/<command>.log, as a stage does; False where what the tool prints is its result
    log: bool = True
    module: str | None = None  # its module under gpt1.commands where that is not the command's name


TOOLS: dict[str, ToolSpec] = {  # by command, in the order `gpt1 --help` lists them (after the stages)
    "profile": ToolSpec("print the `dvc exp run -S ...` line that applies profiles (or, --yaml, the composed params)",
                        log=False),
    "benchmark": ToolSpec("training throughput of our model vs transformers' OpenAIGPTLMHeadModel",
                          module="benchmark_cli"),
    "plan": ToolSpec("the training work the params ask for (tokens, updates, FLOPs) and its expected GPU-hours and "
                     "wall time on N GPUs, from a measured throughput", log=False, module="plan_cli"),
    "import-weights": ToolSpec("convert released GPT-1 weights (HF folder or OpenAI's npy files)", params=False),
    "fetch-released": ToolSpec("the released GPT-1 (a local folder in either released layout, or the Hugging Face "
                               "hub) as the folder profiles/released.yaml points at", params=False,
                               module="fetch_released_cli"),
    "export-weights": ToolSpec("write a Transformer checkpoint in transformers' or OpenAI's layout", params=False),
    "generate": ToolSpec("sample text from a language model (ours, a checkpoint, or released weights)", params=False,
                         log=False, module="generate_cli"),
    "predict": ToolSpec("run a kept fine-tuned model (results/finetune/<method>/<task>/seed<S>) on examples",
                        params=False, log=False, module="predict_cli"),
    "compare": ToolSpec("B - A for every method and task two experiments ran, with Table 5's 95 % interval (test "
                        "examples and seeds resampled) and a verdict (experiments, git revisions or workspace; "
                        "nothing checked out)", params=False, log=False),
}


def tool_module_name(command: str) -> str:
    """The dotted module of a tool: `import-weights` -> `gpt1.commands.import_weights`."""
    return f"gpt1.commands.{TOOLS[command].module or module_name(command)}"
