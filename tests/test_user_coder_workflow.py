"""docs/coders.md's own coder through the workflow on a tiny config: the coding job codes
every dumped tensor with it beside the built-ins the config names, its rows carry its own
bits, and L5 draws it in a colour of its own (a coder the palette does not know is not
dropped)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import TINY_CONFIG, doc_blocks, run_snakemake, write_imagefolder_tree


def doc_block(language: str) -> str:
    return doc_blocks("coders.md", language)[0]


@pytest.mark.slow
def test_the_documented_coder_codes_through_the_workflow(tmp_path: Path) -> None:
    work = tmp_path / "wf"
    tree = write_imagefolder_tree(work / "cifar", n_train=100, n_test=20)  # 60 + a 30 pool
    (work / "mycoders.py").write_text(doc_block("python"))  # importable from the workdir
    coders = yaml.safe_load(doc_block("yaml"))["lossless"]["coding"]["coders"]
    config = yaml.safe_load(yaml.safe_dump(TINY_CONFIG))
    config["cifar10"] = str(tree)
    config["lossless"]["runs"] = 1
    config["lossless"]["coding"] = {"coders": coders}
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    coding = "results/lossless/mlp/run0/coding.tsv"
    run_snakemake(work, "--cores", "2", "--configfile", "tiny.yaml",
                  targets=[coding, "results/figures/L5_mlp.png"])  # fmt: skip
    rows = pd.read_csv(work / coding, sep="\t")
    names = [c if isinstance(c, str) else c["name"] for c in coders]
    assert set(names) <= set(rows["coder"])
    mine = rows[
        (rows["coder"] == "fixed") & (rows["accounting"] == "exact") & (rows["scaling"] == "none")
    ]  # scaling amax adds its exponent's bits
    assert len(mine) and (mine["total_bits"] > 0).all()
    # its own format: an 8-bit width, then that many bits per symbol (width >= 1)
    assert ((mine["total_bits"] - 8) % mine["numel"] == 0).all()
    assert (work / "results/figures/L5_mlp.png").stat().st_size > 10_000
