"""Paper scale before a cluster pays for it: the whole workflow under config/paper.yaml with
config/smoke-paper.yaml on top (every model, compressor kind, rate, M, dump pattern and
position of the paper; a handful of images, epochs, rounds and seeds), from a clean
directory on a synthetic image-folder tree. Its 31 heavy jobs took 615 CPU-seconds (cost
table of a CI run, the other test worker beside it: 16.5 minutes of wall time there), so
about 5-6 minutes on 2 free cores by the CPU-seconds (not timed alone)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, assert_drawn_figure, run_snakemake, write_imagefolder_tree
from gradcomp.lossless.dumps import read_dump

pytestmark = pytest.mark.slow

PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())
SMOKE = yaml.safe_load((REPO / "config/smoke-paper.yaml").read_text())
PAPER_MODELS = PAPER["lossless"]["models"]
# Read here from paper.yaml itself, not through the workflow's own variant expansion: one
# variant per rate x M of each entry (no rates: one variant; no M: M = 0).
ENTRIES = PAPER["lossy"]["compressors"]
VARIANTS = sum(len(e.get("rates", [None])) * len(e.get("M", [0])) for e in ENTRIES)
# T5's rate curves: every entry's but the Gaussian channel's, whose bits are an ideal rate
# that no bytes carry (bits_source ideal)
CURVES = {(e["name"], M) for e in ENTRIES for M in e.get("M", [0])
          if e.get("quantizer") != "gaussian_channel"}  # fmt: skip
# The verdicts: one question per rate of each question's test entry (every rate it has)
QUESTIONS = sum(
    len(next(e for e in ENTRIES if e["name"] == q["test"]).get("rates", [None]))
    for q in PAPER["lossy"]["verdicts"]["questions"]
)
# Full runs (T3, Y1-Y3): the variants the overlay's lossy.full_runs names, by entry name or by
# its name/R{rate}_M{M} label.
FULL = SMOKE["lossy"]["full_runs"]
FULL_VARIANTS = sum(
    e["name"] in FULL or f"{e['name']}/R{rate}_M{M}" in FULL
    for e in ENTRIES
    for rate in e.get("rates", [None])
    for M in e.get("M", [0])
)
MAX_WIDTH_PX = 2300  # four 3-inch panels at 130 dpi, axis labels and the references' legend


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("smoke")
    tree = write_imagefolder_tree(
        work / "cifar", n_train=SMOKE["data"]["train_subset"], n_test=SMOKE["data"]["test_subset"]
    )
    t0 = time.monotonic()
    run_snakemake(
        work,
        "--cores", "2",
        "--configfile", str(REPO / "config/paper.yaml"), str(REPO / "config/smoke-paper.yaml"),
        "--config", f"cifar10={tree}",
        timeout=3000,
    )  # fmt: skip
    print(f"paper-scale smoke: {time.monotonic() - t0:.0f} s")
    return work


def read(work: Path, table: str) -> pd.DataFrame:
    return pd.read_csv(work / f"results/tables/{table}.tsv", sep="\t", keep_default_na=False)


def finite(frame: pd.DataFrame, columns) -> bool:
    values = frame[list(columns)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    return bool(np.isfinite(values).all())


def test_every_figure_is_drawn_within_bounds(smoke: Path) -> None:
    """Every figure of both papers, per paper model, exists, is drawn (coloured data, not
    blank) and is at most MAX_WIDTH_PX wide (planted bug: Y6 with one panel per rate in one
    row, which was 3,170 pixels wide at paper scale)."""
    import matplotlib.image

    names = [f"{f}_{m}" for m in PAPER_MODELS for f in ("L1", "L2", "L3", "L4", "L5", "L5b")]
    names += [f"Y{i}_cnn" for i in range(1, 7)] + ["Y7a_cnn"]
    for name in names:
        png = smoke / f"results/figures/{name}.png"
        assert_drawn_figure(png)
        assert matplotlib.image.imread(png).shape[1] <= MAX_WIDTH_PX, name


def test_paper_l_dumps_positions_and_tables(smoke: Path) -> None:
    """Dumps hold exactly paper.yaml's dump_tensors, positions are paper.yaml's, T1 and T2
    cover every paper model with finite values (planted bug: a dump pattern ignored, so a
    model dumps every tensor)."""
    lossless = PAPER["lossless"]
    for model in PAPER_MODELS:
        dump = read_dump(smoke / f"results/lossless/{model}/run0/grads/epoch2.safetensors")
        assert sorted(dump.names) == sorted(lossless["dump_tensors"][model])
        positions = pd.read_csv(smoke / f"results/lossless/{model}/positions.tsv", sep="\t")
        assert (
            dict(zip(positions["position"], positions["tensor"], strict=True))
            == (lossless["positions"][model])
        )
    t1 = read(smoke, "T1")
    assert set(t1["model"]) == set(PAPER_MODELS)
    assert finite(t1, [c for c in t1.columns if c.endswith("_mean")])
    t2 = read(smoke, "T2")
    assert set(t2["model"]) == set(PAPER_MODELS)
    assert set(t2["family"]) == set(lossless["fit"]["families"])
    assert finite(t2, [c for c in t2.columns if c.endswith("_mean")])


def test_paper_y_tables_have_every_variant(smoke: Path) -> None:
    """T3 has one row per variant with full runs (FULL_VARIANTS), T4 one per configured
    variant (VARIANTS, counted from paper.yaml) over the overlay's two one-round seeds, T5
    one row per (compressor, M) curve other than the baseline's; the measured means are
    finite (planted bug: a variant dropped, e.g. the survivors-fit gennormpaper, or NaN
    passed on from an empty round)."""
    t3 = read(smoke, "T3")
    assert len(t3) == FULL_VARIANTS
    assert finite(t3, ["test_acc_mean", "per_bit_acc_coded_mean", "cumulative_bits_coded"])
    t4 = read(smoke, "T4")
    n_seeds = len(SMOKE["lossy"]["one_round"]["seeds"])
    assert len(t4) == VARIANTS and (t4["trajectories"] == n_seeds).all()
    means = [c for c in t4.columns if c.endswith("_mean") and "_vs_" not in c]
    assert finite(t4, means) and finite(t4, [c.replace("_mean", "_lo") for c in means])
    t5 = read(smoke, "T5")
    baseline = PAPER["lossy"]["baseline"]
    expected = {c for c in CURVES if c[0] != baseline}
    assert set(zip(t5["curve"], t5["M"], strict=True)) == expected
    verdicts = read(smoke, "verdicts")  # one per rate of paper.yaml's 10 entries, seeds as units
    assert len(PAPER["lossy"]["verdicts"]["questions"]) == 10
    assert len(verdicts) == QUESTIONS
    assert (verdicts["design"] == "seeds").all()
    rd = pd.read_csv(smoke / "results/lossy/cnn/distortion_study.tsv", sep="\t")
    assert (rd["distortion"] > 0).all()


def test_costs_table_covers_every_heavy_rule(smoke: Path) -> None:
    """The cost table has a row per heavy rule and model, its jobs counted as configured,
    with positive seconds and memory (planted bug: benchmark files of one rule missed)."""
    costs = read(smoke, "costs").set_index(["rule", "model"])
    jobs = costs["jobs"].to_dict()
    for model in PAPER_MODELS:
        for rule in ("train_lossless", "fit_lossless", "code_lossless"):
            assert jobs[(rule, model)] == SMOKE["lossless"]["runs"]
    assert jobs[("federated", "cnn")] == FULL_VARIANTS * len(SMOKE["lossy"]["seeds"])
    # from scratch there is no warm start: one job holds every seed
    assert jobs[("one_round_study", "cnn")] == 1
    assert jobs[("prepare_cifar10", "")] == 1 and jobs[("distortion_study", "cnn")] == 1
    assert (costs["seconds_total"] > 0).all() and (costs["MB_max"] > 0).all()
    assert math.isclose(costs.loc[("all", ""), "seconds_total"],
                        costs.drop(("all", ""))["seconds_total"].sum(), rel_tol=1e-9)  # fmt: skip
