"""docs/coders.md's own coder through the workflow (the shared run): the coding job codes
every dumped tensor with it beside the built-ins the config names, its rows carry its own
bits, and L5 draws it in a colour of its own (a coder the palette does not know is not
dropped)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import doc_blocks


def doc_block(language: str) -> str:
    return doc_blocks("coders.md", language)[0]


@pytest.mark.slow
def test_the_documented_coder_codes_through_the_workflow(shared_run: Path) -> None:
    """The shared run codes the mlp's dumps with every built-in and docs/coders.md's coders
    (conftest.shared_config), its own class ``fixed`` among them."""
    coders = yaml.safe_load(doc_block("yaml"))["lossless"]["coding"]["coders"]
    config = yaml.safe_load((shared_run / "tiny.yaml").read_text())
    assert coders[-1] in config["lossless"]["coding"]["coders"]  # the documented entry
    rows = pd.read_csv(shared_run / "results/lossless/mlp/run0/coding.tsv", sep="\t")
    names = [c if isinstance(c, str) else c["name"] for c in coders]
    assert set(names) <= set(rows["coder"])
    mine = rows[
        (rows["coder"] == "fixed") & (rows["accounting"] == "exact") & (rows["scaling"] == "none")
    ]  # scaling amax adds its exponent's bits
    assert len(mine) and (mine["total_bits"] > 0).all()
    # its own format: an 8-bit width, then that many bits per symbol (width >= 1)
    assert ((mine["total_bits"] - 8) % mine["numel"] == 0).all()
    assert (shared_run / "results/figures/L5_mlp.png").stat().st_size > 10_000
