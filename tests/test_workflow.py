"""End-to-end: the Snakemake workflow on a tiny config (tiny data made here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, write_imagefolder_tree
from gradcomp.dumps import read_dump

pytestmark = pytest.mark.slow

SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]

TINY = {
    "data": {"train_subset": 60, "test_subset": 20},
    "lossless": {
        "models": ["mlp"],
        "runs": 2,
        "epochs": 2,
        "threads": 1,
        "batch_size": 16,
        "fit": {"families": ["norm", "laplace", "gennorm"], "kinds": ["epoch_avg"]},
    },
    "lossy": {
        "models": ["mlp"],
        "rounds": 2,
        "local_epochs": 1,
        "batch_size": 16,
        "compressors": [
            {"name": "none", "quantizer": "none", "topk": 1.0},
            {"name": "uniform", "quantizer": "uniform", "rates": [2]},
            {
                "name": "gennorm",
                "quantizer": "lloyd",
                "family": "gennorm",
                "rates": [2],
                "M": [0, 2],
            },
        ],
        "histogram_tensors": ["fc1.weight", "fc2.weight"],
    },
    "figures": {
        "y4": {"compressor": "gennorm", "rate": 2, "M": 2},
        "y5_tensor": "fc1.weight",
        "y5_rates": [1, 2],
    },
    "device": "cpu",
}


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [*SNAKEMAKE, "--directory", str(workdir), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=workdir,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


@pytest.fixture(scope="module")
def tiny_workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wf")
    tree = write_imagefolder_tree(work / "cifar", n_train=100, n_test=40)
    config = {**TINY, "cifar10": str(tree)}
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    snakemake(work, "--cores", "2", "--configfile", "tiny.yaml")
    return work


def test_train_rule_writes_dumps_and_logs(tiny_workdir: Path) -> None:
    for run in (0, 1):
        base = tiny_workdir / f"results/lossless/mlp/run{run}"
        dump = read_dump(base / "grads/epoch2.safetensors")
        assert dump.epoch == 2 and dump.metadata["seed"] == str(run)
        assert dump.names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
        assert len((base / "train_log.tsv").read_text().splitlines()) == 3
        assert (base / "state/checkpoint.pt").exists()
        progress = (tiny_workdir / f"results/logs/lossless/mlp/run{run}/train.log").read_text()
        assert "epoch 2/2" in progress and "images/s" in progress


def test_fits_figures_and_t2(tiny_workdir: Path) -> None:
    import pandas as pd

    fits = pd.read_csv(tiny_workdir / "results/lossless/mlp/run0/fits.tsv", sep="\t")
    assert set(fits["family"]) == {"norm", "laplace", "gennorm"}
    assert set(fits["epoch"]) == {1, 2} and set(fits["kind"]) == {"epoch_avg"}
    assert fits.loc[fits["tensor"] == "fc1.weight", "position"].iloc[0] == "lower"
    assert fits["loglik"].notna().all() and (fits["w2"] > 0).all()
    for fig in ("L1", "L2", "L3", "L4", "L5"):
        for ext in ("png", "pdf"):
            assert (tiny_workdir / f"results/figures/{fig}_mlp.{ext}").stat().st_size > 1000
    t2 = pd.read_csv(tiny_workdir / "results/tables/T2.tsv", sep="\t")
    assert set(t2["family"]) == {"norm", "laplace", "gennorm"} and (t2["n"] == 4).all()
    assert "±" in (tiny_workdir / "results/tables/T2.md").read_text()


def test_coding_table_and_t1(tiny_workdir: Path) -> None:
    import pandas as pd

    coding = pd.read_csv(tiny_workdir / "results/lossless/mlp/run1/coding.tsv", sep="\t")
    coders = set(coding["coder"])
    assert {"huffman_gennorm", "huffman_norm", "lz78", "entropy", "fp8"} <= coders
    assert set(coding["accounting"]) == {"exact", "slip"}
    exact = coding[coding["accounting"] == "exact"].set_index(["epoch", "tensor", "coder"])
    fp8 = exact.xs("fp8", level="coder")["bits_per_entry"]
    assert (fp8 == 8.0).all()
    # no i.i.d. magnitude code beats the empirical entropy of its symbols
    entropy = exact.xs("entropy", level="coder")["total_bits"]
    for coder in ("huffman_gennorm", "huffman_norm", "huffman_empirical"):
        assert (exact.xs(coder, level="coder")["total_bits"] >= entropy).all()
    t1 = pd.read_csv(tiny_workdir / "results/tables/T1.tsv", sep="\t")
    assert set(t1["accounting"]) == {"exact", "slip"} and (t1["runs"] == 2).all()


def test_federated_runs_figures_and_t3(tiny_workdir: Path) -> None:
    import pandas as pd

    base = tiny_workdir / "results/lossy/mlp"
    runs = sorted(
        p.parent.parent.relative_to(base).as_posix() for p in base.glob("*/*/seed0/rounds.tsv")
    )
    assert runs == ["gennorm/R2_M0", "gennorm/R2_M2", "none/R32_M0", "uniform/R2_M0"]
    rounds = pd.read_csv(base / "gennorm/R2_M2/seed0/rounds.tsv", sep="\t")
    assert rounds["round"].tolist() == [0, 1, 2]
    uplink = pd.read_csv(base / "gennorm/R2_M2/seed0/uplink.tsv", sep="\t")
    assert len(uplink) == 4 and (uplink["bits_coded"] > 0).all()
    assert rounds["cumulative_bits_coded"].iloc[-1] == uplink["bits_coded"].sum()
    dense = pd.read_csv(base / "none/R32_M0/seed0/uplink.tsv", sep="\t")
    assert dense["bits_fixed"].sum() > uplink["bits_fixed"].sum()
    for fig in ("Y1", "Y2", "Y3", "Y4", "Y5"):
        assert (tiny_workdir / f"results/figures/{fig}_mlp.png").stat().st_size > 1000
    t3 = pd.read_csv(tiny_workdir / "results/tables/T3.tsv", sep="\t")
    assert len(t3) == 4 and t3["per_bit_acc_coded_mean"].notna().all()
    rd = pd.read_csv(base / "rate_distortion.tsv", sep="\t")
    assert set(rd["M"]) == {0, 2} and (rd["distortion"] > 0).all()


def test_rerun_with_nothing_changed_does_nothing(tiny_workdir: Path) -> None:
    proc = snakemake(tiny_workdir, "--cores", "1", "--configfile", "tiny.yaml", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_bad_config_stops_before_any_job(tiny_workdir: Path) -> None:
    proc = snakemake(
        tiny_workdir,
        "--cores",
        "1",
        "--configfile",
        "tiny.yaml",
        "--config",
        "device=tpu",
        check=False,
    )
    assert proc.returncode != 0
    assert "config key 'device'" in proc.stderr + proc.stdout
