# Shared helpers. params.yaml is validated by the same code every `gpt1` stage uses, so Snakemake
# stops on a bad key before it schedules anything.
from gpt1.config import parse_params

PARAMS = parse_params(config, "config (params.yaml + --configfile)")
# Which params.yaml section shapes each pretrained model.
MODEL_SECTION = {"transformer": "model", "lstm": "lstm"}
FINETUNE_KEYS = [
    "seed", "model", "finetune.lr", "finetune.no_pretrain_lr", "finetune.batch_size", "finetune.epochs", "finetune.warmup_fraction",
    "finetune.lm_coef", "finetune.classifier_dropout", "finetune.weight_decay", "finetune.grad_clip",
    "finetune.max_train_examples", "finetune.max_eval_examples", "finetune.device", "finetune.dtype",
]


def code(*modules):
    """The gpt1 source files behind a stage; editing one re-runs it, as the deps in dvc.yaml do."""
    return [f"gpt1/{module}.py" for module in modules]


def P(*keys):
    """Values of dotted params.yaml keys, the same keys that dvc.yaml lists for a stage."""
    values = {}
    for key in keys:
        value = config
        for part in key.split("."):
            value = value[part]
        values[key.replace(".", "__")] = value
    return values


def finetune_runs():
    """One folder per (task, variant), holding a seed<S>/ run for every finetune.seeds (one job writes them all)."""
    return expand("results/finetune/{task}/{variant}", task=config["data"]["tasks"],
                  variant=config["finetune"]["variants"])


def layer_transfer_runs():
    """One folder per (task, k), a seed<S>/ run inside for every analysis.layer_transfer_seeds; k < model.n_layer
    only (validated): the all-blocks point is the finetune stage's full run."""
    analysis = config["analysis"]
    return expand("results/layer_transfer/{task}/layers{layers}", task=analysis["layer_transfer_tasks"],
                  layers=analysis["layer_transfer_layers"])
