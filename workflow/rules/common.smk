# Shared helpers. params.yaml is validated by the same code every `gpt1` stage uses, so Snakemake
# stops on a bad key before it schedules anything.
from gpt1.config import parse_params

PARAMS = parse_params(config, "config (params.yaml + --configfile)")


def code(*modules):
    """The gpt1 source files behind a stage; editing one re-runs it, as the deps in dvc.yaml do."""
    return [f"gpt1/{module}.py" for module in modules]
