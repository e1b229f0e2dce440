"""Snakemake script: figure Y5 (M-weighted distortion vs rate with the BA bound)."""

from gradcomp.logutil import log_to_file
from gradcomp.plotting.catalogue import question_title
from gradcomp.plotting.paper_y_distortion import figure_y5, tensor_name
from gradcomp.reporting import figure_source_label

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
figure_y5(
    sm.input.rd,
    sm.output.png,
    title=question_title(
        "Y5",
        sm.wildcards.model,
        f"the kept entries of one update's {tensor_name(sm.params.tensor)}",
        figure_source_label(sm.input.summary),
    ),
)
