rule zeroshot:
    input:
        "data/raw",
        "data/tasks",
        "data/bpe",
        "data/pretrain/transformer/checkpoints",
        "data/pretrain/lstm/checkpoints",
        "data/pretrain/transformer/model.safetensors",
        "data/pretrain/lstm/model.safetensors",
        code("zeroshot", "zeroshot_scoring", "zeroshot_tasks", "registry", "paper_tasks", "tasks", "bpe", "text", "records", "task_data", "embedded", "catalog", "sources", "model", "lm_loss", "dropout"),
    output:
        "results/zero_shot.csv",
        "results/zero_shot_trend.csv",
        "results/zero_shot.png",
    params:
        **P("seed", "data.tasks", "finetune.max_eval_examples", "finetune.device", "pretrain.max_steps", "model.n_positions"),
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/zeroshot.log",
    shell:
        "gpt1 zeroshot"


rule ablation:
    input:
        "results/scores.csv",
        finetune_runs(),
        "results/baselines.json",
        "data/tasks",
        code("analysis", "intervals", "records"),
    output:
        "results/ablation.csv",
        "results/ablation_std.csv",
        "results/ablation_intervals.csv",
        "results/ablation.md",
        "results/ablation_baselines.csv",
    params:
        **P("data.tasks", "finetune.seeds", "finetune.max_train_examples"),
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/ablation.log",
    shell:
        "gpt1 ablation"


rule layer_figure:
    input:
        layer_transfer_runs(),
        # k = model.n_layer is read from the full runs; dvc.yaml depends on all of results/finetune, and so do we
        finetune_runs(),
        code("analysis", "intervals", "records"),
    output:
        "results/layer_transfer.csv",
        "results/layer_transfer_trend.csv",
        "results/layer_transfer.png",
    params:
        **P("analysis", "model.n_layer"),
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/layer_figure.log",
    shell:
        "gpt1 layer-figure"
