rule prepare_cifar10:
    output:
        cache=CIFAR10_CACHE,
        summary=CIFAR10_SUMMARY,
    params:
        source=STUDY.data.source,
        train_subset=STUDY.data.train_subset,
        test_subset=STUDY.data.test_subset,
        # the pool is only for the warm start: none drawn when the federation starts from scratch
        pretrain_subset=STUDY.data.pretrain_subset if LOSSY.warm_start else None,
        seed=STUDY.data.subset_seed,
        download_root="results/data/download",
    log:
        "results/logs/data/prepare_cifar10.log",
    benchmark:
        "results/benchmarks/prepare_cifar10/cifar10.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/prepare_cifar10.py"
