FINETUNE_INPUTS = [
    "data/tasks",
    "data/bpe",
    "data/pretrain/transformer/model.safetensors",
    "data/pretrain/lstm/model.safetensors",
    *code("finetune", "task_data", "records", "bpe", "text", "transforms", "heads", "metrics", "model", "lm_loss",
          "dropout", "precision"),
]


rule finetune:
    input:
        FINETUNE_INPUTS,
    output:
        directory("results/finetune/{task}/{variant}"),  # seed<S>/ for every finetune.seeds, one process
    wildcard_constraints:
        variant="full|no_pretrain|no_aux_lm|lstm",
    params:
        **P(*FINETUNE_KEYS, "finetune.seeds"),
    threads: workflow.cores  # a training job uses every core (torch threads); GPUs are a resource
    resources:
        gpu=1,
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/finetune/{task}/{variant}.log",
    shell:
        "gpt1 finetune --task {wildcards.task} --variant {wildcards.variant}"


rule layer_transfer:
    input:
        FINETUNE_INPUTS,
    output:
        directory("results/layer_transfer/{task}/layers{layers}"),  # seed<S>/ for every analysis.layer_transfer_seeds
    wildcard_constraints:
        layers=r"\d+",
    params:
        **P(*FINETUNE_KEYS, "analysis.layer_transfer_seeds"),
    threads: workflow.cores  # a training job uses every core (torch threads); GPUs are a resource
    resources:
        gpu=1,
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/layer_transfer/{task}/layers{layers}.log",
    shell:
        "gpt1 layer-transfer --task {wildcards.task} --layers {wildcards.layers}"


rule baselines:
    input:
        "data/tasks",
        code("baselines", "task_data", "records", "metrics"),
    output:
        "results/baselines.json",
    params:
        **P("seed", "data.tasks", "finetune.max_train_examples", "finetune.max_eval_examples"),
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/baselines.log",
    shell:
        "gpt1 baselines"


rule evaluate:
    input:
        finetune_runs(),
        "results/baselines.json",
        code("evaluate", "baselines", "task_data", "records", "metrics"),
    output:
        "results/scores.csv",
        "results/scores_summary.csv",
        "results/metrics.json",
    params:
        **P("data.tasks", "finetune.variants", "finetune.seeds"),
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/evaluate.log",
    shell:
        "gpt1 evaluate"
