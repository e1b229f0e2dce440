"""Verdicts: the primary questions of paper Y's study, answered from the one-round study.

Each question (``lossy.verdicts.questions``, declared in the config before the run) compares
a test rate curve with a reference rate curve at **matched measured bits**: per trajectory
(warm start, seed), the BD-loss of the test curve against the reference
(:func:`gradcomp.lossy.rate_curves.bd_loss`: the mean test-loss difference over the log-bits
range both cover, nats; negative = lower loss for the same bits), and the same for accuracy.
The trajectories' values go through the two-level design (:mod:`gradcomp.lossy.nested`):
interval over the warm starts, each the mean of its seeds.

Each question is answered with one of

- **equivalent**: the TOST of ``|difference| >= margin`` is rejected after Holm's adjustment
  over the questions (the difference lies within the margin; a margin that float noise
  cannot cross keeps this verdict from flipping);
- **better** / **worse**: not equivalent, and the two-sided t-test of ``difference = 0`` is
  rejected after Holm's adjustment over the questions (better = lower loss at equal bits);
- **undecided**: neither.

Each row also states the smallest difference the design detects with the configured power
at level ``alpha / m`` (Holm's first step, m questions: a conservative bound), and the share
of the variance that lies between warm starts (one-way ANOVA). A trajectory whose curves
share no bits range gives no BD-loss; it is counted by dominance (``no_overlap``,
``dominates``, ``dominated``) and left out of the interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gradcomp import reporting
from gradcomp.artifacts import write_text, write_tsv
from gradcomp.lossy.nested import (
    decide,
    min_detectable,
    nested_test,
    tost_p,
    variance_components,
)
from gradcomp.lossy.paired import holm, seed_means
from gradcomp.lossy.rate_curves import bd_loss, curve_points, dominance

__all__ = ["table_verdicts", "verdicts_table"]


def _question_rows(
    points: pd.DataFrame, question: Mapping[str, Any], margin: float
) -> list[dict[str, Any]]:
    rows = []
    for model, at_model in points.groupby("model", sort=True):
        test = at_model[(at_model["curve"] == question["test"]) & (at_model["M"] == question["M"])]
        ref = at_model[
            (at_model["curve"] == question["reference"])
            & (at_model["M"] == question["reference_M"])
        ]
        if test.empty or ref.empty:
            continue
        loss, acc, starts, dom = [], [], [], []
        for (ws, seed), t in test.groupby(["warm_start", "seed"], sort=True):
            r = ref[(ref["warm_start"] == ws) & (ref["seed"] == seed)]
            if r.empty:
                raise ValueError(
                    f"{model}: {question['reference']} has no points on trajectory warm start "
                    f"{ws}, seed {seed}, where {question['test']} has"
                )
            dl = bd_loss(t["bits_coded"], t["test_loss"], r["bits_coded"], r["test_loss"])
            if np.isfinite(dl):
                da = -bd_loss(t["bits_coded"], -t["test_acc"], r["bits_coded"], -r["test_acc"])
                loss.append(dl)
                acc.append(da)
                starts.append(ws)
            else:
                pts = (t["bits_coded"], t["test_loss"], r["bits_coded"], r["test_loss"])
                dom.append(dominance(*pts))
        lt, at = nested_test(loss, starts), nested_test(acc, starts)
        between, within = variance_components(loss, starts)
        rows.append(
            {
                "model": model,
                "question": f"{question['test']} M{question['M']} vs "
                f"{question['reference']} M{question['reference_M']}",
                "test": question["test"],
                "M": question["M"],
                "reference": question["reference"],
                "reference_M": question["reference_M"],
                "test_bits_per_entry_min": float(test["bits_per_entry"].min()),
                "test_bits_per_entry_max": float(test["bits_per_entry"].max()),
                "reference_bits_per_entry_min": float(ref["bits_per_entry"].min()),
                "reference_bits_per_entry_max": float(ref["bits_per_entry"].max()),
                "trajectories": len(loss) + len(dom),
                "units": lt.units,
                "design": lt.design,
                "loss_diff_mean": lt.mean,
                "loss_diff_lo": lt.lo,
                "loss_diff_hi": lt.hi,
                "loss_diff_se": lt.se,
                "df": lt.df,
                "acc_diff_mean": at.mean,
                "acc_diff_lo": at.lo,
                "acc_diff_hi": at.hi,
                "p": lt.p,
                "tost_p": tost_p(lt.mean, lt.se, lt.df, margin),
                "margin": margin,
                "warm_start_share": between / (between + within)
                if np.isfinite(between) and between + within > 0
                else np.nan,
                "no_overlap": len(dom),
                "dominates": int(sum(d > 0 for d in dom)),
                "dominated": int(sum(d < 0 for d in dom)),
            }
        )
    return rows


def verdicts_table(
    paths: Sequence[str | Path],
    *,
    questions: Sequence[Mapping[str, Any]],
    curves: Mapping[str, str],
    margin: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> pd.DataFrame:
    """One row per question and model (module doc); ``questions``: dicts with ``test``,
    ``M``, ``reference``, ``reference_M`` (:class:`gradcomp.study.Question`)."""
    from gradcomp.lossy.tables import one_round_data

    per_seed = seed_means(
        one_round_data(paths), ["bits_coded", "bits_per_entry", "test_loss", "test_acc"]
    )
    points = curve_points(per_seed, curves)
    rows = [row for q in questions for row in _question_rows(points, q, margin)]
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    m = int(np.isfinite(table["p"]).sum())
    table["p_holm"] = holm(table["p"])
    table["tost_p_holm"] = holm(table["tost_p"])
    table["min_detectable"] = [
        min_detectable(se, df, alpha / max(m, 1), power)
        for se, df in zip(table["loss_diff_se"], table["df"], strict=True)
    ]
    table["verdict"] = [
        decide(mean, p, t, alpha)
        for mean, p, t in zip(
            table["loss_diff_mean"], table["p_holm"], table["tost_p_holm"], strict=True
        )
    ]
    return table


def _readable(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: at most ten columns, the rest stays in the TSV."""
    out = pd.DataFrame(
        {
            "question": table["model"] + ": " + table["question"],
            "bits/entry": [
                f"{a:.3g}-{b:.3g} vs {c:.3g}-{d:.3g}"
                for a, b, c, d in zip(
                    table["test_bits_per_entry_min"], table["test_bits_per_entry_max"],
                    table["reference_bits_per_entry_min"], table["reference_bits_per_entry_max"],
                    strict=True,
                )
            ],
        }
    )  # fmt: skip
    for col in ("loss_diff", "acc_diff"):
        for part in ("mean", "lo", "hi"):
            out[f"{col}_{part}"] = table[f"{col}_{part}"]
    out["p_holm"] = table["p_holm"]
    out["tost_p_holm"] = table["tost_p_holm"]
    out["min_detectable"] = table["min_detectable"]
    out["units"] = [
        f"{u} {d}" + (f", {n} without overlap" if n else "")
        for u, d, n in zip(table["units"], table["design"], table["no_overlap"], strict=True)
    ]
    out["verdict"] = table["verdict"]
    return out


def table_verdicts(
    paths, tsv, md, *, questions, curves, margin: float, alpha: float = 0.05, power: float = 0.8
) -> pd.DataFrame:
    """Write the verdicts as TSV (every column) and Markdown (:func:`_readable`)."""
    if not questions:
        write_tsv(tsv, pd.DataFrame(columns=["model", "question", "verdict"]))
        write_text(
            md, "# Verdicts\n\nNo primary question is declared (lossy.verdicts.questions).\n"
        )
        return pd.DataFrame()
    table = verdicts_table(
        paths, questions=questions, curves=curves, margin=margin, alpha=alpha, power=power
    )
    if table.empty:
        raise ValueError(
            "no verdict could be computed: no question's curves are in the one-round study "
            "(lossy.verdicts.questions, lossy.one_round.variants)"
        )
    m = int(np.isfinite(table["p"]).sum())
    title = (
        f"Verdicts: the {m} primary questions (lossy.verdicts), one-round study at matched "
        "measured bits (BD-loss: test-loss difference in nats over the common log-bits range, "
        "negative = lower loss for the same bits; accuracy likewise, positive = better). "
        "Per trajectory, then mean [95% Student-t interval] over the warm starts, each the "
        "mean of its nested seeds (two-level design). Family: these questions; p (difference "
        f"= 0) and TOST p (|difference| >= {margin:g} nats) each Holm-adjusted. Verdict: "
        f"equivalent if the adjusted TOST p < {alpha:g}, else better / worse if the adjusted "
        f"p < {alpha:g}, else undecided. min_detectable: the difference detected with "
        f"{power:.0%} power at level {alpha:g}/{m} (Holm's first step). Numbers move with the "
        "machine's float noise; the verdicts should not (docs/results.md)."
    )
    reporting.write_table(table, tsv, md, title=title, readable=_readable(table))
    return table
