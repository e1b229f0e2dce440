# Paper Y: the central warm start, federated training with compressed updates, the Y5
# distortion study, the one-round paired study, figures Y1-Y8, tables T3-T6. Each rule runs
# the script of the same name, which makes one library call.

localrules:
    figures_Y1_Y3,
    figure_Y4,
    figure_Y5,
    figure_Y6,
    figure_Y7,
    figure_Y8,
    table_T3,
    table_T4,
    table_T5,
    table_T6,
    table_verdicts,


rule warm_start_common:
    input:
        data=CIFAR10_CACHE,
    output:
        state=WARM_START_COMMON_FILE,
    params:
        settings=warm_start_common_settings,
    log:
        "results/logs/lossy/{model}/warm_start/common.log",
    benchmark:
        "results/benchmarks/warm_start/{model}/common.tsv"
    threads: LOSSY.threads
    resources:
        mem_mb=rule_resource("warm_start", "mem_mb"),
        runtime=rule_resource("warm_start", "runtime"),
        gpu=rule_resource("warm_start", "gpu"),
        device=DEVICE,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/warm_start.py"


rule warm_start:
    input:
        unpack(warm_start_common_input),
        data=CIFAR10_CACHE,
    output:
        state=WARM_START_FILE,
    params:
        settings=warm_start_settings,
    log:
        "results/logs/lossy/{model}/warm_start/ws{ws}.log",
    benchmark:
        "results/benchmarks/warm_start/{model}/ws{ws}.tsv"
    threads: LOSSY.threads
    resources:
        mem_mb=rule_resource("warm_start", "mem_mb"),
        runtime=rule_resource("warm_start", "runtime"),
        gpu=rule_resource("warm_start", "gpu"),
        device=DEVICE,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/warm_start.py"


rule federated:
    input:
        unpack(warm_start_input),
        data=CIFAR10_CACHE,
    output:
        rounds=f"{LOSSY_RUN}/rounds.tsv",
        uplink=f"{LOSSY_RUN}/uplink.tsv",
        # per round, user and update tensor: entries and how many were sent (M22's
        # per-layer kept fractions)
        kept=f"{LOSSY_RUN}/kept.tsv",
        # user 0's last-round update before/after compression: every tensor, so that the
        # tensors Y4 and Y5 show are a figure choice, not a reason to retrain
        snapshot=f"{LOSSY_RUN}/update.safetensors",
    params:
        settings=federated_settings,
        spec=compressor_spec,
        identity=run_identity,
    log:
        f"results/logs/lossy/{{model}}/{VARIANT_WILDCARDS}/seed{{seed}}.log",
    benchmark:
        f"results/benchmarks/federated/{{model}}/{VARIANT_WILDCARDS}/seed{{seed}}.tsv"
    threads: LOSSY.threads
    resources:
        mem_mb=rule_resource("federated", "mem_mb"),
        runtime=rule_resource("federated", "runtime"),
        gpu=rule_resource("federated", "gpu"),
        device=DEVICE,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/federated.py"


rule one_round_study:
    input:
        unpack(warm_start_input),
        data=CIFAR10_CACHE,
    output:
        table="results/lossy/{model}/one_round/ws{ws}.tsv",
    params:
        settings=one_round_settings,
        variants=one_round_variants,
        reference=[LOSSY.reference.name, LOSSY.reference.rate, LOSSY.reference.M],
        seeds=list(LOSSY.one_round_seeds),
        warm_start_seed=lambda wc: None if wc.ws == "none" else int(wc.ws),
    log:
        "results/logs/lossy/{model}/one_round/ws{ws}.log",
    benchmark:
        "results/benchmarks/one_round_study/{model}/ws{ws}.tsv"
    threads: LOSSY.threads
    resources:
        mem_mb=rule_resource("one_round_study", "mem_mb"),
        runtime=rule_resource("one_round_study", "runtime"),
        gpu=rule_resource("one_round_study", "gpu"),
        device=DEVICE,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/one_round_study.py"


rule distortion_study:
    input:
        snapshot=y4_snapshot,
    output:
        rd=report(
            "results/lossy/{model}/distortion_study.tsv",
            caption="../report/Y5.rst",
            category="Paper Y",
            subcategory="{model}",
        ),
    params:
        tensor=y5_tensor,
        rates=list(DISTORTION.rates),
        low_bits=list(DISTORTION.low_bits),
        Ms=sorted({v.M for v in LOSSY.variants} | {0}),
        slip=LOSSY.slip,
    log:
        "results/logs/lossy/{model}/distortion_study.log",
    benchmark:
        "results/benchmarks/distortion_study/{model}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/distortion_study.py"


rule figures_Y1_Y3:
    input:
        rounds=lambda wc: lossy_run_files(wc.model, "rounds.tsv"),
        summary=CIFAR10_SUMMARY,
    params:
        compressor_kinds=plain(COMPRESSOR_KINDS),
        curves=plain(LOSSY.curves),
        specs=variant_specs(),
        # Y1's lower panel: each run's accuracy minus this compressor's run of the same seed
        reference=LOSSY.reference.name if LOSSY.reference is not None else None,
    output:
        y1=report("results/figures/Y1_{model}.png", caption="../report/Y1.rst", category="Paper Y", subcategory="{model}"),
        y1_pdf="results/figures/Y1_{model}.pdf",
        y2=report("results/figures/Y2_{model}.png", caption="../report/Y2.rst", category="Paper Y", subcategory="{model}"),
        y2_pdf="results/figures/Y2_{model}.pdf",
        y3=report("results/figures/Y3_{model}.png", caption="../report/Y3.rst", category="Paper Y", subcategory="{model}"),
        y3_pdf="results/figures/Y3_{model}.pdf",
    log:
        "results/logs/figures/Y1_Y3_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figures_Y1_Y3.py"


rule figure_Y4:
    input:
        snapshot=y4_snapshot,
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/Y4_{model}.png", caption="../report/Y4.rst", category="Paper Y", subcategory="{model}"),
        pdf="results/figures/Y4_{model}.pdf",
    params:
        run=lambda wc: dict(
            compressor=DISTORTION.compressor,
            rate=DISTORTION.rate,
            M=DISTORTION.M,
            spec=LOSSY.spec(DISTORTION.compressor, DISTORTION.rate, DISTORTION.M).plain(),
            tensors=y4_tensors(wc),
        ),
        bins=FIGURES.histogram_bins,
    log:
        "results/logs/figures/Y4_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_Y4.py"


rule figure_Y5:
    input:
        rd="results/lossy/{model}/distortion_study.tsv",
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/Y5_{model}.png", caption="../report/Y5.rst", category="Paper Y", subcategory="{model}"),
        pdf="results/figures/Y5_{model}.pdf",
    params:
        tensor=y5_tensor,
    log:
        "results/logs/figures/Y5_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_Y5.py"


rule figure_Y6:
    input:
        tables=lambda wc: one_round_files(wc.model),
        # Y6 marks what the verdicts decide, read from their table (no test of its own)
        verdicts="results/tables/verdicts.tsv",
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/Y6_{model}.png", caption="../report/Y6.rst", category="Paper Y", subcategory="{model}"),
        pdf="results/figures/Y6_{model}.pdf",
    params:
        compressor_kinds=plain(COMPRESSOR_KINDS),
        kept_sets=compressor_kept_sets(),
        curves=plain(LOSSY.curves),
        specs=variant_specs(),
    log:
        "results/logs/figures/Y6_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_Y6.py"


rule table_T4:
    input:
        tables=[f for model in LOSSY.models for f in one_round_files(model)],
    output:
        tsv=report("results/tables/T4.tsv", caption="../report/T4.rst", category="Paper Y", subcategory="tables"),
        md="results/tables/T4.md",
    params:
        compressor_kinds=plain(COMPRESSOR_KINDS),
        baseline=BASELINE,
        pairable=PAIRABLE,
        margin=LOSSY.verdicts.margin,
        alpha=LOSSY.verdicts.alpha,
        kept_sets=plain(LOSSY.kept_sets),
        curves=plain(LOSSY.curves),
    log:
        "results/logs/tables/T4.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_T4.py"


rule table_T3:
    input:
        rounds=[f for model in LOSSY.models for f in lossy_run_files(model, "rounds.tsv")],
        uplink=[f for model in LOSSY.models for f in lossy_run_files(model, "uplink.tsv")],
    params:
        compressor_kinds=plain(COMPRESSOR_KINDS),
        baseline=BASELINE,
        pairable=PAIRABLE,
        kept_sets=plain(LOSSY.kept_sets),
        curves=plain(LOSSY.curves),
    output:
        tsv=report("results/tables/T3.tsv", caption="../report/T3.rst", category="Paper Y", subcategory="tables"),
        md="results/tables/T3.md",
    log:
        "results/logs/tables/T3.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_T3.py"


rule figure_Y7:
    input:
        tables=lambda wc: one_round_files(wc.model),
        summary=CIFAR10_SUMMARY,
    output:
        png_a=report("results/figures/Y7a_{model}.png", caption="../report/Y7a.rst", category="Paper Y", subcategory="{model}"),
        pdf_a="results/figures/Y7a_{model}.pdf",
        png_b=report("results/figures/Y7b_{model}.png", caption="../report/Y7b.rst", category="Paper Y", subcategory="{model}"),
        pdf_b="results/figures/Y7b_{model}.pdf",
        png_c=report("results/figures/Y7c_{model}.png", caption="../report/Y7c.rst", category="Paper Y", subcategory="{model}"),
        pdf_c="results/figures/Y7c_{model}.pdf",
    params:
        compressor_kinds=plain(COMPRESSOR_KINDS),
        baseline=BASELINE,
        curves=plain(LOSSY.curves),
        kept_sets=compressor_kept_sets(),
        specs=variant_specs(),
    log:
        "results/logs/figures/Y7_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_Y7.py"


rule figure_Y8:
    input:
        tables=lambda wc: one_round_files(wc.model),
        summary=CIFAR10_SUMMARY,
    output:
        png=report("results/figures/Y8_{model}.png", caption="../report/Y8.rst", category="Paper Y", subcategory="{model}"),
        pdf="results/figures/Y8_{model}.pdf",
    params:
        compressor_kinds=plain(COMPRESSOR_KINDS),
        baseline=BASELINE,
        curves=plain(LOSSY.curves),
        kept_sets=compressor_kept_sets(),
        specs=variant_specs(),
    log:
        "results/logs/figures/Y8_{model}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_Y8.py"


rule table_T5:
    input:
        tables=[f for model in LOSSY.models for f in one_round_files(model)],
    output:
        tsv=report("results/tables/T5.tsv", caption="../report/T5.rst", category="Paper Y", subcategory="tables"),
        md="results/tables/T5.md",
    params:
        baseline=BASELINE,
        curves=plain(LOSSY.curves),
    log:
        "results/logs/tables/T5.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_T5.py"


rule table_T6:
    input:
        rd=expand("results/lossy/{model}/distortion_study.tsv", model=LOSSY.models),
    output:
        tsv=report("results/tables/T6.tsv", caption="../report/T6.rst", category="Paper Y", subcategory="tables"),
        md="results/tables/T6.md",
    log:
        "results/logs/tables/T6.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_T6.py"


rule table_verdicts:
    input:
        tables=[f for model in LOSSY.models for f in one_round_files(model)],
    output:
        tsv=report("results/tables/verdicts.tsv", caption="../report/verdicts.rst", category="Paper Y", subcategory="tables"),
        md="results/tables/verdicts.md",
    params:
        questions=verdict_questions(),
        curves=plain(LOSSY.curves),
        kept_sets=plain(LOSSY.kept_sets),
        margin=LOSSY.verdicts.margin,
        alpha=LOSSY.verdicts.alpha,
        power=LOSSY.verdicts.power,
        target=LOSSY.verdicts.target,
        names=LOSSY.display_names(),
    log:
        "results/logs/tables/verdicts.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_verdicts.py"
