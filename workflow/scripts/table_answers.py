"""Snakemake script: both papers' questions answered in one table (results/tables/answers.md)."""

from pathlib import Path

from gradcomp.answers import markdown_of
from gradcomp.artifacts import write_text
from gradcomp.logutil import log_to_file

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to_file(sm.log[0])
write_text(sm.output.md, markdown_of(Path(sm.input.verdicts).parent, docs=sm.params.docs))
