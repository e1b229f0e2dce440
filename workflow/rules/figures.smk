# The figure standard, measured: every figure's row (panels, width, smallest text, legend,
# axes' share, symlog, replicates, identifiers in its text), stored in its PNG when it was
# saved (gradcomp.plotting.standard), read back into one table with each figure's question and
# paper counterpart (gradcomp.plotting.catalogue). Local: it reads the PNGs' metadata.


localrules:
    figure_manifest,


rule figure_manifest:
    input:
        pngs=figure_pngs(),
    output:
        tsv=FIGURE_MANIFEST,
    params:
        # the run's compressor names a reader does not use (uniformk20, signef, ...)
        identifiers=internal_names({v.name: v.spec.plain() for v in LOSSY.variants}),
    log:
        "results/logs/figures/manifest.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/figure_manifest.py"
