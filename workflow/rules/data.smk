rule download:
    input:
        code("download", "sources", "catalog", "registry", "embedded", "paper_tasks", "tasks", "records"),
    output:
        directory("data/raw"),
    params:
        corpus=config["data"]["corpus"],
        tasks=config["data"]["tasks"],
        local_paths=config["data"]["local_paths"],
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/download.log",
    shell:
        "gpt1 download"


rule prepare:
    input:
        "data/raw",
        code("prepare", "registry", "catalog", "sources", "embedded", "paper_tasks", "tasks", "records", "text"),
    output:
        directory("data/tasks"),
        directory("data/corpus"),
    params:
        seed=config["seed"],
        data=config["data"],
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/prepare.log",
    shell:
        "gpt1 prepare"


rule bpe:
    input:
        "data/corpus",
        code("bpe", "text"),
    output:
        directory("data/bpe"),
    params:
        bpe=config["bpe"],
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/bpe.log",
    shell:
        "gpt1 bpe"


rule tokenize:
    input:
        "data/corpus",
        "data/bpe",
        code("encode", "bpe", "text"),
    output:
        directory("data/tokens"),
    conda:
        "../envs/gpt1.yaml"
    log:
        "logs/tokenize.log",
    shell:
        "gpt1 tokenize"
