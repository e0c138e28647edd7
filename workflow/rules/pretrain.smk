rule pretrain:
    input:
        "data/tokens",
        code("pretrain", "batches", "distributed", "encode", "bpe", "text", "weights", "model", "lm_loss", "dropout",
             "precision"),
    output:
        # resume.pt and the unfinished run's checkpoints live beside these, undeclared, so a re-run after
        # an interruption still finds them.
        "data/pretrain/{kind}/model.safetensors",
        directory("data/pretrain/{kind}/checkpoints"),
        "results/pretrain/{kind}/metrics.json",
        directory("results/pretrain/{kind}/plots/metrics"),
    wildcard_constraints:
        kind="transformer|lstm",
    params:
        **P("seed", "pretrain.device", "pretrain.dtype", "pretrain.compile", "pretrain.micro_batch_size",
            "pretrain.tokens_per_update", "pretrain.max_steps", "pretrain.warmup_steps", "pretrain.betas",
            "pretrain.eps", "pretrain.weight_decay", "pretrain.grad_clip", "pretrain.eval_interval",
            "pretrain.eval_tokens", "pretrain.checkpoints", "pretrain.save_interval", "pretrain.init_from"),
        shape=lambda wildcards: config[MODEL_SECTION[wildcards.kind]],
        optimiser=lambda wildcards: config["pretrain"][wildcards.kind],
    threads: workflow.cores  # a training job uses every core (torch threads); GPUs are a resource
    resources:
        gpu=1,
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/pretrain/{kind}.log",
    shell:
        "gpt1 pretrain --model {wildcards.kind}"
