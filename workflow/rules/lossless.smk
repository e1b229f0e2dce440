# Paper L: training with per-epoch gradient dumps, fits, lossless coding, figures L1-L5 (and L5b),
# tables T1-T2. Each rule runs the script of the same name, which makes one library call.

# Cheap rules that only derive figures and tables from cached artifacts: run in the main
# Snakemake process, never queued on a cluster.
localrules:
    tensor_positions,
    figure_L1,
    figure_L2,
    figure_L3,
    figure_L4,
    figure_L5,
    table_T1,
    table_T2,

# The coders of coding.tsv, T1 and L5, checked when the study was built (a user's class
# imported then); the jobs get them as plain data and rebuild them without checking again.
CODERS = [c.plain() for c in LOSSLESS.coders]
L5_CODERS = [{"name": name, "color": color} for name, color in LOSSLESS.l5_coders]


rule train_lossless:
    input:
        data=CIFAR10_CACHE,
    output:
        dumps=dump_paths(),
        log_tsv=f"{LOSSLESS_RUN}/train_log.tsv",
        coded=coded_all(),
    params:
        # TrainSettings keywords, with the streamed coding where the model streams
        settings=lambda wc: {**LOSSLESS.train_settings(wc.model, int(wc.run)), **STUDY.model_class(wc.model)},
        # undeclared: checkpoint and finished epochs, so an interrupted job resumes
        state_dir=lambda wc: f"{run_dir(wc.model, wc.run)}/state",
    log:
        "results/logs/lossless/{model}/run{run}/train.log",
    benchmark:
        "results/benchmarks/train_lossless/{model}/run{run}.tsv"
    threads: LOSSLESS.threads
    resources:
        mem_mb=rule_resource("train_lossless", "mem_mb"),
        runtime=rule_resource("train_lossless", "runtime"),
        gpu=rule_resource("train_lossless", "gpu"),
        device=DEVICE,
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
        families=plain(LOSSLESS.fit["families"]),
        floc=LOSSLESS.fit["floc"],
        skip_below=LOSSLESS.fit["skip_below"],
        kinds=plain(LOSSLESS.fit["kinds"]),
        seed=LOSSLESS.fit["seed"],
        zero_atom=LOSSLESS.fit["zero_atom"],
    log:
        "results/logs/lossless/{model}/run{run}/fit.log",
    benchmark:
        "results/benchmarks/fit_lossless/{model}/run{run}.tsv"
    threads: 1
    resources:
        mem_mb=rule_resource("fit_lossless", "mem_mb"),
        runtime=rule_resource("fit_lossless", "runtime"),
        gpu=rule_resource("fit_lossless", "gpu"),
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/fit_lossless.py"


rule code_lossless:
    input:
        dumps=dump_paths(),
        fits=f"{LOSSLESS_RUN}/fits.tsv",
        streamed=coded_all(),
    output:
        coding=f"{LOSSLESS_RUN}/coding.tsv",
    params:
        # the per-tensor settings; the coders come checked (below), and stream says where the
        # rows come from, not what they are: no rerun trigger (gradcomp.study.CODING_CHECKED)
        coding=plain(LOSSLESS.coding),
        coders=CODERS,
    log:
        "results/logs/lossless/{model}/run{run}/code.log",
    benchmark:
        "results/benchmarks/code_lossless/{model}/run{run}.tsv"
    threads: 1
    resources:
        mem_mb=rule_resource("code_lossless", "mem_mb"),
        runtime=rule_resource("code_lossless", "runtime"),
        gpu=rule_resource("code_lossless", "gpu"),
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/code_lossless.py"


# Positions (lower / middle / upper tensor) are labels: changing them reruns this cheap
# rule and the figures, never the fits or the coding.
rule tensor_positions:
    input:
        dump=lambda wc: f"{run_dir(wc.model, 0)}/grads/epoch1.safetensors",
    output:
        positions=POSITIONS_TSV,
    params:
        skip_below=LOSSLESS.fit["skip_below"],
        overrides=lambda wc: plain(LOSSLESS.positions.get(wc.model, {})),
    log:
        "results/logs/lossless/{model}/positions.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/tensor_positions.py"


rule figure_L1:
    input:
        fits=lambda wc: figure_run_file(wc, "fits.tsv"),
        positions=POSITIONS_TSV,
        dump=lambda wc: figure_run_file(wc, f"grads/epoch{LOSSLESS.epochs}.safetensors"),
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/L1_{model}.png", caption="../report/L1.rst", category="Paper L", subcategory="{model}"),
        pdf="results/figures/L1_{model}.pdf",
    params:
        kind=FIGURES.lossless_kind,
        bins=FIGURES.histogram_bins,
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
        positions=POSITIONS_TSV,
        dump=lambda wc: figure_run_file(wc, f"grads/epoch{LOSSLESS.epochs}.safetensors"),
        coding=lambda wc: figure_run_file(wc, "coding.tsv"),
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/L2_{model}.png", caption="../report/L2.rst", category="Paper L", subcategory="{model}"),
        pdf="results/figures/L2_{model}.pdf",
    params:
        kind=FIGURES.lossless_kind,
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


rule figure_L3:
    input:
        fits=lambda wc: model_runs_file(wc, "fits.tsv"),
        positions=POSITIONS_TSV,
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/L3_{model}.png", caption="../report/L3.rst", category="Paper L", subcategory="{model}"),
        pdf="results/figures/L3_{model}.pdf",
    log:
        "results/logs/figures/L3_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_L3.py"


rule figure_L4:
    input:
        fits=lambda wc: model_runs_file(wc, "fits.tsv"),
        positions=POSITIONS_TSV,
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/L4_{model}.png", caption="../report/L4.rst", category="Paper L", subcategory="{model}"),
        pdf="results/figures/L4_{model}.pdf",
    log:
        "results/logs/figures/L4_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_L4.py"


rule figure_L5:
    input:
        coding=lambda wc: model_runs_file(wc, "coding.tsv"),
        positions=POSITIONS_TSV,
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/L5_{model}.png", caption="../report/L5.rst", category="Paper L", subcategory="{model}"),
        pdf="results/figures/L5_{model}.pdf",
        png_b=report("results/figures/L5b_{model}.png", caption="../report/L5b.rst", category="Paper L", subcategory="{model}"),
        pdf_b="results/figures/L5b_{model}.pdf",
    params:
        coders=L5_CODERS,
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
        "../scripts/table_T1.py"


rule table_T2:
    input:
        fits=[f"{run_dir(m, r)}/fits.tsv" for m, r in lossless_runs()],
        positions=[POSITIONS_TSV.format(model=m) for m in LOSSLESS.models],
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
        "../scripts/table_T2.py"
