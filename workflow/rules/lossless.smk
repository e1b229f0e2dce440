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
        state_dir=lambda wc: f"{run_dir(wc.model, wc.run)}/state",
    log:
        "results/logs/lossless/{model}/run{run}/train.log",
    threads: LOSSLESS["threads"]
    resources:
        mem_mb=rule_resource("train_lossless", "mem_mb"),
        runtime=rule_resource("train_lossless", "runtime"),
        gpu=rule_resource("train_lossless", "gpu"),
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/train_lossless.py"


rule fit_lossless:
    input:
        dumps=dump_paths(),
    output:
        fits=f"{LOSSLESS_RUN}/fits.tsv",
    params:
        families=LOSSLESS["fit"]["families"],
        floc=LOSSLESS["fit"]["floc"],
        min_entries=LOSSLESS["fit"]["min_entries"],
        kinds=LOSSLESS["fit"]["kinds"],
        seed=LOSSLESS["fit"]["seed"],
        positions=lambda wc: LOSSLESS["positions"].get(wc.model, {}),
    log:
        "results/logs/lossless/{model}/run{run}/fit.log",
    threads: 1
    resources:
        mem_mb=rule_resource("fit_lossless", "mem_mb"),
        runtime=rule_resource("fit_lossless", "runtime"),
        gpu=rule_resource("fit_lossless", "gpu"),
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/fit_lossless.py"


rule figure_L1:
    input:
        fits=lambda wc: figure_run_file(wc, "fits.tsv"),
        dumps=lambda wc: [figure_run_file(wc, f"grads/epoch{e}.safetensors") for e in figure_epochs()],
        summary=CIFAR10_SUMMARY,
    output:
        png=report(
            "results/figures/L1_{model}.png",
            caption="../report/L1.rst",
            category="Paper L",
            subcategory="{model}",
        ),
        pdf="results/figures/L1_{model}.pdf",
    params:
        kind=FIGURES["lossless_kind"],
        bins=FIGURES["histogram_bins"],
    log:
        "results/logs/figures/L1_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_L1.py"


rule figure_L2:
    input:
        fits=lambda wc: figure_run_file(wc, "fits.tsv"),
        dumps=lambda wc: [figure_run_file(wc, f"grads/epoch{LOSSLESS['epochs']}.safetensors")],
        summary=CIFAR10_SUMMARY,
    output:
        png=report(
            "results/figures/L2_{model}.png",
            caption="../report/L2.rst",
            category="Paper L",
            subcategory="{model}",
        ),
        pdf="results/figures/L2_{model}.pdf",
    params:
        kind=FIGURES["lossless_kind"],
    log:
        "results/logs/figures/L2_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_L2.py"


rule figure_L3_L4:
    input:
        fits=lambda wc: [f"{run_dir(wc.model, r)}/fits.tsv" for r in range(LOSSLESS["runs"])],
        summary=CIFAR10_SUMMARY,
    output:
        l3=report(
            "results/figures/L3_{model}.png",
            caption="../report/L3.rst",
            category="Paper L",
            subcategory="{model}",
        ),
        l3_pdf="results/figures/L3_{model}.pdf",
        l4=report(
            "results/figures/L4_{model}.png",
            caption="../report/L4.rst",
            category="Paper L",
            subcategory="{model}",
        ),
        l4_pdf="results/figures/L4_{model}.pdf",
    log:
        "results/logs/figures/L3_L4_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_L3_L4.py"


rule table_T2:
    input:
        fits=[f"{run_dir(m, r)}/fits.tsv" for m, r in lossless_runs()],
    output:
        tsv=report("results/tables/T2.tsv", caption="../report/T2.rst", category="Paper L", subcategory="tables"),
        md="results/tables/T2.md",
    log:
        "results/logs/tables/T2.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_t2.py"


rule code_lossless:
    input:
        dumps=dump_paths(),
        fits=f"{LOSSLESS_RUN}/fits.tsv",
    output:
        coding=f"{LOSSLESS_RUN}/coding.tsv",
    params:
        coding=LOSSLESS["coding"],
    log:
        "results/logs/lossless/{model}/run{run}/code.log",
    threads: 1
    resources:
        mem_mb=rule_resource("code_lossless", "mem_mb"),
        runtime=rule_resource("code_lossless", "runtime"),
        gpu=rule_resource("code_lossless", "gpu"),
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/code_lossless.py"


rule figure_L5:
    input:
        coding=lambda wc: [f"{run_dir(wc.model, r)}/coding.tsv" for r in range(LOSSLESS["runs"])],
        summary=CIFAR10_SUMMARY,
    output:
        png=report(
            "results/figures/L5_{model}.png",
            caption="../report/L5.rst",
            category="Paper L",
            subcategory="{model}",
        ),
        pdf="results/figures/L5_{model}.pdf",
    log:
        "results/logs/figures/L5_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_L5.py"


rule table_T1:
    input:
        coding=[f"{run_dir(m, r)}/coding.tsv" for m, r in lossless_runs()],
    output:
        tsv=report("results/tables/T1.tsv", caption="../report/T1.rst", category="Paper L", subcategory="tables"),
        md="results/tables/T1.md",
    log:
        "results/logs/tables/T1.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_t1.py"
