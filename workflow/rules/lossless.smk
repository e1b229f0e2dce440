# Paper L: training with per-epoch gradient dumps.


rule train_lossless:
    input:
        data=CIFAR10_CACHE,
    output:
        dumps=dump_paths(),
        log_tsv=f"{LOSSLESS_RUN}/train_log.tsv",
    params:
        settings=train_settings,
        # undeclared: checkpoint and finished epochs, so an interrupted job resumes
        state_dir=lambda wc: f"{LOSSLESS_RUN.format(model=wc.model, run=wc.run)}/state",
    log:
        "results/logs/lossless/{model}/run{run}/train.log",
    threads: LOSSLESS["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/train_lossless.py"
