"""Paper Y's tables T3, T4 and T5 on tiny synthetic result files written here, against hand
computations: seeds counted (not seeds x rounds), measured bits per entry, paired
differences by seed, a BD-rate of a curve built to save half the bits."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from gradcomp.artifacts import write_tsv
from gradcomp.lossy.bd_rate_table import t5_table, table_t5
from gradcomp.lossy.federated import ROUND_COLUMNS, UPLINK_COLUMNS
from gradcomp.lossy.one_round import ONE_ROUND_COLUMNS
from gradcomp.lossy.paper_y_tables import one_round_data, t3_table, t4_table, table_t3, table_t4

SEEDS, ROUNDS, ENTRIES = (0, 1, 2), (1, 2), 1000
# test-loss offsets of 'worse' over uniform R2 by seed and round; per-seed means 0.1, 0.3, 0.2
WORSE = {0: (0.0, 0.2), 1: (0.5, 0.1), 2: (0.2, 0.2)}


def uniform_point(rate: int, seed: int, rnd: int) -> tuple[float, float]:
    """(bits_coded, loss increase) of uniform at ``rate``: fewer bits, more loss at R2."""
    bits = rate * ENTRIES + 100 * seed + 10 * rnd
    increase = (0.4 if rate == 2 else 0.1) + 0.05 * seed + 0.01 * rnd
    return bits, increase


def one_round_rows(seed: int) -> list[dict]:
    rows = []
    for rnd in ROUNDS:
        exact_loss = 2.0 + 0.1 * seed + 0.01 * rnd
        head = {"model": "cnn", "warm_start": -1, "seed": seed, "round": rnd, "start_acc": 0.2,
                "start_loss": 2.3, "exact_acc": 0.3, "exact_loss": exact_loss,
                "entries": ENTRIES}  # fmt: skip
        points = []
        for rate in (2, 4):
            bits, increase = uniform_point(rate, seed, rnd)
            points += [
                ("uniform", rate, bits, increase),
                ("half", rate, bits / 2, increase),  # half the bits at every loss
            ]
        bits, increase = uniform_point(2, seed, rnd)
        points.append(("worse", 2, bits, increase + WORSE[seed][rnd - 1]))
        # one rate, inside uniform's loss range on seeds 0 and 1, beyond it on seed 2
        points.append(("point", 3, 2500, 0.3 + 0.05 * seed + 0.01 * rnd + 0.6 * (seed == 2)))
        for name, rate, bits, increase in points:
            rows.append({**head, "compressor": name, "rate": rate, "M": 0, "bits_coded": bits,
                         "bits_fixed": bits + 500, "bits_accounted": bits, "bits_source": "bytes",
                         "test_acc": 0.25, "test_loss": exact_loss + increase})  # fmt: skip
    return rows


def write_study(root: Path, model: str = "cnn") -> list[Path]:
    paths = []
    for seed in SEEDS:
        path = root / "results/lossy" / model / "one_round" / f"seed{seed}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_tsv(path, pd.DataFrame(one_round_rows(seed)), ONE_ROUND_COLUMNS)
        paths.append(path)
    return paths


def test_t4_counts_seeds_and_measures_bits_per_entry(tmp_path):
    """Per variant 3 seeds (not 6 seed x round rows); bits per entry = bits_coded / entries:
    uniform R2 sends 2000 + 100 seed + 10 round bits of 1000 entries, so 2 + 0.1 seed + 0.015
    per seed and 2.115 over seeds. Planted bugs: 'seeds' counting rows; bits_fixed / entries;
    bits per entry of all seeds pooled with each round as a unit (same mean, other
    interval)."""
    t4 = t4_table(write_study(tmp_path), baseline="uniform").set_index(["compressor", "rate"])
    assert (t4["trajectories"] == 3).all() and len(t4) == 6
    assert (t4["units"] == 3).all() and (t4["design"] == "seeds").all()
    row = t4.loc[("uniform", 2)]
    per_seed = np.array([2 + 0.1 * s + 0.015 for s in SEEDS])
    half = scipy.stats.t.ppf(0.975, 2) * per_seed.std(ddof=1) / math.sqrt(3)
    assert row["bits_per_entry_mean"] == pytest.approx(2.115)
    assert row["bits_per_entry_hi"] - row["bits_per_entry_mean"] == pytest.approx(half)
    assert t4.loc[("half", 4), "bits_per_entry_mean"] == pytest.approx(4.115 / 2)
    assert row["fixed_bits_per_entry"] == pytest.approx(2.615)


def test_t4_paired_difference_by_hand(tmp_path):
    """'worse' minus uniform R2 in test loss, per seed 0.1, 0.3, 0.2 (round means): mean 0.2,
    sd 0.1, half-width 4.303 x 0.1 / sqrt(3), p = 1 - |t| / sqrt(2 + t^2) (t with 2 degrees
    of freedom). 'half' loses exactly what uniform does: difference 0, p = 1. Planted bugs:
    the interval over seed x round rows; pairing worse R2 with uniform R4."""
    t4 = t4_table(write_study(tmp_path), baseline="uniform").set_index(["compressor", "rate"])
    row = t4.loc[("worse", 2)]
    se = 0.1 / math.sqrt(3)
    t = 0.2 / se
    assert row["test_loss_vs_uniform_mean"] == pytest.approx(0.2)
    assert row["test_loss_vs_uniform_hi"] - row["test_loss_vs_uniform_mean"] == pytest.approx(
        4.303 * se, rel=1e-3
    )
    assert row["test_loss_vs_uniform_p"] == pytest.approx(1 - t / math.sqrt(2 + t**2))
    assert row["loss_increase_mean"] == pytest.approx(0.4 + 0.05 + 0.015 + 0.2)
    assert t4.loc[("half", 2), "test_loss_vs_uniform_mean"] == pytest.approx(0.0, abs=1e-12)
    assert t4.loc[("half", 2), "test_loss_vs_uniform_p"] == 1.0
    assert np.isnan(t4.loc[("uniform", 2), "test_loss_vs_uniform_mean"])


def test_t5_half_the_bits_is_minus_50_with_a_zero_width_interval(tmp_path):
    """'half' spends half of uniform's bits at every loss increase on every seed: BD-rate
    -50% on each of the 3 seeds, so mean -50 and a zero-width interval. 'worse' (one rate at
    uniform R2's bits with more loss) shares no loss range with uniform: no BD-rate, and
    uniform's R2 point dominates it on every seed, counted as such (not a NaN row). Planted
    bugs: the reference and test swapped (+100%); the baseline's curve taken from another
    seed; a trajectory without a BD-rate dropped silently (dominated 0)."""
    t5 = t5_table(write_study(tmp_path), baseline="uniform").set_index("curve")
    assert set(t5.index) == {"half", "worse", "point"}
    row = t5.loc["half"]
    assert row["rates"] == "half/R2,half/R4" and row["overlap"] == 3 and row["baseline_M"] == 0
    for col in ("bd_rate_mean", "bd_rate_lo", "bd_rate_hi"):
        assert row[col] == pytest.approx(-50.0, abs=1e-9), col
    assert row["verdict"] == "fewer bits"
    # the span of the per-seed means (over rounds 1 and 2: + 15 bits)
    assert row["bits_per_entry_min"] == pytest.approx((2000 + 15) / 2 / ENTRIES)
    assert row["bits_per_entry_max"] == pytest.approx((4000 + 200 + 15) / 2 / ENTRIES)
    worse = t5.loc["worse"]
    assert worse["overlap"] == 0 and worse["trajectories"] == 3 and worse["dominated"] == 3
    assert worse["dominates"] == 0 and not worse["bd_rate_significant"]
    # 3 of 3 seeds point one way: sign test p = 0.25, undecided with 3 seeds
    assert worse["sign_p"] == pytest.approx(0.25) and worse["verdict"] == "undecided"
    point = t5.loc["point"]  # a BD-rate on seeds 0 and 1, seed 2 outside uniform's range
    assert point["overlap"] == 2 and point["trajectories"] == 3
    assert point["dominates"] + point["dominated"] + point["neither"] == 1


def test_t5_leaves_out_a_curve_whose_bits_are_ideal(tmp_path):
    """A curve whose rows say bits_source ideal (the Gaussian channel's mutual information,
    no bytes) gets no T5 row; with bytes it is back. Planted bug: the filter dropped (the
    'half' row stays and is called 'fewer bits' on bits never sent)."""
    paths = write_study(tmp_path)
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        frame["bits_source"] = np.where(frame["compressor"] == "half", "ideal", "bytes")
        write_tsv(path, frame)
    t5 = t5_table(paths, baseline="uniform")
    assert set(t5["curve"]) == {"worse", "point"}
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        frame["bits_source"] = "bytes"
        write_tsv(path, frame)
    assert "half" in set(t5_table(paths, baseline="uniform")["curve"])


def test_one_round_data_refuses_nan_and_bad_files(tmp_path):
    """A NaN test loss raises naming the variant, seed and round; a table without its
    identity columns (warm start; rate) is refused. Planted bug: NaN passed on (dropped by
    pandas' means)."""
    paths = write_study(tmp_path)
    frame = pd.read_csv(paths[1], sep="\t")
    half_r2 = (frame["compressor"] == "half") & (frame["rate"] == 2)
    frame.loc[half_r2 & (frame["round"] == 2), "test_loss"] = np.nan
    write_tsv(paths[1], frame)
    with pytest.raises(ValueError, match=r"half R2 M0 seed 1 round 2 has a NaN"):
        t4_table(paths, baseline="uniform")
    with pytest.raises(ValueError, match=r"half R2 M0 seed 1 round 2 has a NaN"):
        t5_table(paths, baseline="uniform")
    stray = tmp_path / "seed0.tsv"
    write_tsv(stray, pd.DataFrame(one_round_rows(0)).drop(columns="warm_start"))
    with pytest.raises(ValueError, match="not a one-round study table"):
        one_round_data([stray])
    write_tsv(stray, pd.DataFrame(one_round_rows(0)).drop(columns="rate"))
    with pytest.raises(ValueError, match="no rate column"):
        one_round_data([stray])


# --- T3 ------------------------------------------------------------------------------------

UPLINK_BITS = {"payload_huffman_bits": 700, "payload_fixed_bits": 800, "position_bits": 50,
               "side_bits": 20, "huffman_side_bits": 10, "raw_bits": 0}  # fmt: skip


def final_acc(name: str, seed: int) -> float:
    return 0.3 + 0.01 * seed + (0.02 * (seed + 1) if name == "kmeans" else 0.0)


def write_run(root: Path, name: str, seed: int, rounds: int = 2) -> tuple[Path, Path]:
    """One federated run's rounds.tsv (accuracy 0.1 at round 0) and uplink.tsv (2 users)."""
    folder = root / "results/lossy/cnn" / name / "R2_M0" / f"seed{seed}"
    folder.mkdir(parents=True)
    per_round = 1600 * (seed + 1)  # kmeans and uniform send the same bits
    rows = [
        {"round": r, "test_acc": 0.1 if r == 0 else final_acc(name, seed), "test_loss": 2.0,
         "val_acc": 0.2, "train_loss": 2.0, "bits_coded": per_round * (r > 0),
         "bits_fixed": 2 * per_round * (r > 0), "cumulative_bits_coded": per_round * r,
         "cumulative_bits_fixed": 2 * per_round * r, "seconds": 1.0,
         "bits_accounted": per_round * (r > 0), "cumulative_bits_accounted": per_round * r,
         "bits_source": "bytes"}
        for r in range(rounds + 1)
    ]  # fmt: skip
    ident = {"model": "cnn", "compressor": name, "rate": 2, "M": 0, "warm_start": -1,
             "seed": seed}  # fmt: skip
    write_tsv(folder / "rounds.tsv", [{**ident, **r} for r in rows], [*ident, *ROUND_COLUMNS])
    uplink = [
        {**ident, "round": r, "user": u, "n_train": 100, "n_entries": 1000, "n_sent": 452,
         **{k: v * (seed + 1) for k, v in UPLINK_BITS.items()}, "bits_coded": 0,
         "bits_fixed": 0, "bits_accounted": 0, "bits_source": "bytes"}
        for r in range(1, rounds + 1)
        for u in range(2)
    ]  # fmt: skip
    write_tsv(folder / "uplink.tsv", pd.DataFrame(uplink), [*ident, *UPLINK_COLUMNS])
    return folder / "rounds.tsv", folder / "uplink.tsv"


def test_t3_per_bit_accuracy_at_the_final_round_paired_by_seed(tmp_path):
    """Per-bit accuracy = (final acc - round-0 acc) / cumulative coded bits; kmeans gains
    0.02 (seed + 1) more accuracy on the same 3200 (seed + 1) bits, so its paired difference
    is 0.02 / 3200 on every seed (zero spread). Bits by part are summed over users and
    rounds. Planted bugs: round 0 or the first round taken as final; 'seeds' counting rows;
    the uplink summed over one user only."""
    files = [write_run(tmp_path, name, s) for name in ("uniform", "kmeans") for s in SEEDS]
    rounds, uplinks = zip(*files, strict=True)
    t3 = t3_table(rounds, uplinks, {"uniform": "uniform", "kmeans": "kmeans"},
                  baseline="uniform").set_index("compressor")  # fmt: skip
    assert (t3["trajectories"] == 3).all() and (t3["units"] == 3).all()
    per_bit = [(final_acc("uniform", s) - 0.1) / (3200 * (s + 1)) for s in SEEDS]
    assert t3.loc["uniform", "per_bit_acc_coded_mean"] == pytest.approx(np.mean(per_bit))
    assert t3.loc["uniform", "test_acc_mean"] == pytest.approx(0.31)
    assert t3.loc["kmeans", "per_bit_acc_coded_vs_uniform_mean"] == pytest.approx(0.02 / 3200)
    assert t3.loc["kmeans", "per_bit_acc_coded_vs_uniform_lo"] == pytest.approx(0.02 / 3200)
    # 4 uplink rows per run, scaled by seed + 1: mean over seeds x 4 x 700 x 2
    assert t3.loc["kmeans", "payload_huffman_bits"] == pytest.approx(4 * 700 * 2)
    assert t3.loc["kmeans", "cumulative_bits_coded"] == pytest.approx(3200 * 2)


def test_t3_refuses_runs_that_end_at_different_rounds(tmp_path):
    """Planted bug: the global last round keeps only the longer runs (the short one silently
    leaves the table)."""
    files = [write_run(tmp_path, "uniform", s) for s in SEEDS]
    files.append(write_run(tmp_path, "kmeans", 0, rounds=1))
    rounds, uplinks = zip(*files, strict=True)
    with pytest.raises(ValueError, match="end at different rounds"):
        t3_table(rounds, uplinks, {}, baseline="uniform")


def test_t4_equivalence_verdict(tmp_path):
    """With a margin of 0.05 nats: 'half' loses exactly what uniform does on every seed
    (difference 0, no spread), so the TOST rejects and the pair is equivalent, not
    undecided; 'worse' (+0.2 nats, 3 seeds, raw p 0.074) is neither equivalent nor
    significant: undecided. Planted bugs: the verdict taken from the raw difference test
    only ('half' undecided); the TOST against 0 instead of the margin."""
    t4 = t4_table(write_study(tmp_path), baseline="uniform", margin=0.05)
    t4 = t4.set_index(["compressor", "rate"])
    assert t4.loc[("half", 2), "verdict"] == "equivalent"
    assert t4.loc[("half", 2), "test_loss_vs_uniform_tost_p"] == 0.0
    assert t4.loc[("worse", 2), "verdict"] == "undecided"
    assert t4.loc[("worse", 2), "test_loss_vs_uniform_tost_p"] > 0.5
    assert t4.loc[("uniform", 2), "verdict"] == ""  # the baseline is not paired with itself


def markdown_header(path: Path) -> list[str]:
    """The column names of the one table in a Markdown file."""
    header = next(line for line in path.read_text().splitlines() if line.startswith("| "))
    return [cell.strip() for cell in header.strip("|").split("|")]


def test_markdown_views_are_readable_and_the_tsvs_complete(tmp_path):
    """T3, T4 and T5 as the workflow writes them: each Markdown table at most ten columns
    (an interval is one column, ``m [lo, hi]``), every column in the TSV. Planted bug that
    fails it: T3's Markdown written from the whole table (23 columns)."""
    files = [write_run(tmp_path / "runs", name, s) for name in ("uniform", "kmeans") for s in SEEDS]
    rounds, uplinks = zip(*files, strict=True)
    quantizers = {"uniform": "uniform", "kmeans": "kmeans"}
    t3 = table_t3(rounds, uplinks, quantizers, tmp_path / "T3.tsv", tmp_path / "T3.md",
                  baseline="uniform")  # fmt: skip
    study = write_study(tmp_path / "study")
    t4 = table_t4(study, tmp_path / "T4.tsv", tmp_path / "T4.md", baseline="uniform", margin=0.05)
    t5 = table_t5(study, tmp_path / "T5.tsv", tmp_path / "T5.md", baseline="uniform")
    for name, table in (("T3", t3), ("T4", t4), ("T5", t5)):
        header = markdown_header(tmp_path / f"{name}.md")
        assert 5 <= len(header) <= 10, (name, header)
        tsv = pd.read_csv(tmp_path / f"{name}.tsv", sep="\t")
        assert list(tsv.columns) == list(table.columns) and len(tsv.columns) > len(header)
    assert markdown_header(tmp_path / "T3.md") == [
        "variant", "units", "cumulative_bits_coded", "test_acc", "per_bit_acc_coded",
        "per_bit_acc_coded_vs_uniform", "per_bit_acc_coded_vs_uniform_p_holm",
        "per_bit_acc_coded_vs_uniform_significant",
    ]  # fmt: skip
    assert "| cnn kmeans/R2_M0 | 3 seeds |" in (tmp_path / "T3.md").read_text()
