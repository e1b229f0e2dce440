"""Snakemake script: Y5's rate-distortion study on one real update tensor."""

from gradcomp.atomic import write_text
from gradcomp.federated import read_histograms
from gradcomp.logutil import log_to_file
from gradcomp.rd_study import rate_distortion_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
update = read_histograms(sm.input.histograms)["before"][sm.params.tensor]
table = rate_distortion_table(
    update.double().numpy(),
    rates=sm.params.rates,
    Ms=sm.params.Ms,
    topk=sm.params.topk,
    slip=sm.params.slip,
)
write_text(sm.output.rd, table.to_csv(sep="\t", index=False))
