# What the run cost: every job's benchmark file (results/benchmarks/) in one table. Local: it
# reads small files after everything else has run.

localrules:
    table_costs,


rule table_costs:
    input:
        # every other target, so that the table is made last and sees every benchmark file
        done=lossless_targets() + lossy_targets(),
        summary=CIFAR10_SUMMARY,
    output:
        tsv=report("results/tables/costs.tsv", caption="../report/costs.rst", category="Costs"),
        md="results/tables/costs.md",
    params:
        root="results/benchmarks",
        models=sorted(set(LOSSLESS.models) | set(LOSSY.models)),
    log:
        "results/logs/tables/costs.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_costs.py"
