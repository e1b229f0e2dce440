"""Verdicts: the primary questions of paper Y's study, answered from the one-round study.

Each question (``lossy.verdicts.questions``, declared in the config before the run) compares
a test rate curve with a reference rate curve **at matched measured bits**, one way or the
other (its ``match``, :mod:`gradcomp.lossy.matched_bits`):

- ``kept_set``: each test configuration against the reference's configurations on the same
  kept set (same top-K fraction), interpolated linearly in bits to the test's bits: "with the
  same sparsifier and the same bits, this quantizer loses more or less test loss";
- ``frontier``: each test configuration against the reference's operational curve (the lower
  convex hull of its configurations' mean bits and loss, over every kept set): "against the
  best the reference offers at these bits".

Per trajectory (warm start, seed) the difference is the mean over the matched test
configurations of test loss minus the reference's at matched bits (nats; negative = lower
loss for the same bits), and the same for accuracy (positive = better). The trajectories'
values go through the two-level design (:mod:`gradcomp.lossy.nested`): interval over the
warm starts, each the mean of its seeds.

Each question is answered with one of

- **equivalent**: the TOST of ``|difference| >= margin`` is rejected after Holm's adjustment
  over the questions (the difference lies within the margin);
- **better** / **worse**: not equivalent, and the two-sided t-test of ``difference = 0`` is
  rejected after Holm's adjustment over the questions;
- **undecided**: neither.

Each row also states the smallest difference the design detects with the configured power
at level ``alpha / m`` (Holm's first step, m questions: a conservative bound), the share of
the variance between warm starts (one-way ANOVA), which test configurations were matched
(and why the others were not), which reference configurations the contrasts use and which
of those are dominated by another configuration of the reference. The procedure's coverage
under a null and its power are checked by simulation (:mod:`gradcomp.lossy.verdict_simulation`,
``tests/test_verdict_simulation.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gradcomp import reporting
from gradcomp.artifacts import write_text, write_tsv
from gradcomp.compression.specs import variant_label
from gradcomp.lossy.matched_bits import Matching, match_points, pareto_front, unit_differences
from gradcomp.lossy.nested import (
    decide,
    min_detectable,
    nested_test,
    tost_p,
    units_needed,
    variance_components,
)
from gradcomp.lossy.paired import holm, seed_means

__all__ = ["POINT_COLUMNS", "question_label", "table_verdicts", "verdicts_from_points",
           "verdicts_table"]  # fmt: skip

#: The columns a verdict needs per variant and trajectory (:func:`verdicts_from_points`).
POINT_COLUMNS = ("model", "compressor", "rate", "M", "warm_start", "seed", "bits_per_entry",
                 "test_loss", "test_acc")  # fmt: skip


def question_label(q: Mapping[str, Any]) -> str:
    """``{test} M{M} vs {reference} M{reference_M}, {match}``."""
    return (
        f"{q['test']} M{q['M']} vs {q['reference']} M{q['reference_M']}, "
        f"{q['match'].replace('_', ' ')}"
    )


class _Curve:
    """One curve's configurations on one model: losses and accuracies as (trajectories x
    configurations) arrays in one trajectory order, design-mean bits per entry, kept sets."""

    def __init__(self, rows: pd.DataFrame, trajectories: pd.MultiIndex, kept_sets, what: str):
        rows = rows.assign(label=[variant_label(n, int(r), int(m)) for n, r, m in zip(
            rows["compressor"], rows["rate"], rows["M"], strict=True)])  # fmt: skip
        dup = rows.duplicated(["warm_start", "seed", "label"])
        if dup.any():
            raise ValueError(f"{what} {rows['label'][dup].iloc[0]} appears twice on a trajectory")
        wide = rows.pivot(index=["warm_start", "seed"], columns="label",
                          values=["test_loss", "test_acc", "bits_per_entry"])  # fmt: skip
        wide = wide.reindex(trajectories)
        missing = wide["test_loss"].isna().any()
        if missing.any():
            label = missing[missing].index[0]
            lacks = wide["test_loss"][label].isna()
            ws, seed = lacks[lacks].index[0]
            raise ValueError(
                f"{what} {label} has no points on trajectory warm start {ws}, seed {seed}, "
                "where the question's other curve has"
            )
        self.labels = list(wide["test_loss"].columns)
        self.loss = {lb: wide["test_loss"][lb].to_numpy() for lb in self.labels}
        self.acc = {lb: wide["test_acc"][lb].to_numpy() for lb in self.labels}
        self.bits = {lb: float(wide["bits_per_entry"][lb].mean()) for lb in self.labels}
        self.kept = {}
        for lb in self.labels:
            if lb not in kept_sets:
                raise KeyError(f"{lb} has no kept set (the study's kept_sets lack it)")
            self.kept[lb] = kept_sets[lb]

    def dominated(self) -> list[str]:
        """The configurations another of this curve beats in bits and mean loss."""
        loss = [self.loss[lb].mean() for lb in self.labels]
        front = pareto_front([self.bits[lb] for lb in self.labels], loss)
        return [lb for lb, on in zip(self.labels, front, strict=True) if not on]

    def points(self) -> dict[str, tuple[str, float, float]]:
        """label -> (kept set, bits per entry, mean loss), design means."""
        return {lb: (self.kept[lb], self.bits[lb], float(self.loss[lb].mean()))
                for lb in self.labels}  # fmt: skip


def _differences(test: _Curve, ref: _Curve, match: str):
    """Per trajectory: loss and accuracy differences, and the matching used."""
    test_points = {lb: (test.kept[lb], test.bits[lb]) for lb in test.labels}
    m = match_points(test_points, ref.points(), match)
    return unit_differences(m, test.loss, ref.loss), unit_differences(m, test.acc, ref.acc), m


def _describe(matching: Matching, dominated: Sequence[str]) -> dict[str, Any]:
    used = matching.used
    return {
        "test_points": ",".join(sorted(c.test for c in matching.contrasts)),
        "unmatched": "; ".join(f"{lb}: {why}" for lb, why in sorted(matching.unmatched.items())),
        "reference_points": ",".join(used),
        "reference_dominated": ",".join(lb for lb in used if lb in dominated),
    }


def _question_rows(
    points: pd.DataFrame, question: Mapping[str, Any], kept_sets, margin: float
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
        trajectories = pd.MultiIndex.from_frame(
            test[["warm_start", "seed"]].drop_duplicates().sort_values(["warm_start", "seed"])
        )
        t_curve = _Curve(test, trajectories, kept_sets, "the test curve's")
        r_curve = _Curve(ref, trajectories, kept_sets, f"{question['reference']}'s")
        starts = trajectories.get_level_values("warm_start").to_numpy()
        loss, acc, matching = _differences(t_curve, r_curve, question["match"])
        described = _describe(matching, r_curve.dominated())
        lt, at = nested_test(loss, starts), nested_test(acc, starts)
        between, within = variance_components(loss, starts)
        matched = [t_curve.bits[lb] for lb in described["test_points"].split(",") if lb]
        rows.append(
            {
                "model": model,
                "question": question_label(question),
                "test": question["test"],
                "M": question["M"],
                "reference": question["reference"],
                "reference_M": question["reference_M"],
                "match": question["match"],
                **described,
                "test_dominated": ",".join(t_curve.dominated()),
                "bits_per_entry_min": min(matched) if matched else np.nan,
                "bits_per_entry_max": max(matched) if matched else np.nan,
                "trajectories": len(loss),
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
            }
        )
    return rows


def verdicts_from_points(
    per_seed: pd.DataFrame,
    *,
    questions: Sequence[Mapping[str, Any]],
    curves: Mapping[str, str],
    kept_sets: Mapping[str, str],
    margin: float,
    alpha: float = 0.05,
    power: float = 0.8,
    target: float = 0.02,
) -> pd.DataFrame:
    """One row per question and model (module doc); ``units_for_target``: the units (warm
    starts, at the design's seeds each) that would make ``min_detectable`` at most ``target``
    nats, from the measured spread. ``per_seed``: one row per variant and
    trajectory with :data:`POINT_COLUMNS`; ``questions``: dicts with ``test``, ``M``,
    ``reference``, ``reference_M``, ``match`` (:class:`gradcomp.study.Question`); ``curves``:
    compressor name -> its rate curve (a name not listed is its own); ``kept_sets``: variant
    label (``name/R{rate}_M{M}``) -> its kept set
    (:func:`gradcomp.lossy.matched_bits.kept_set_of`)."""
    points = per_seed.assign(curve=[curves.get(n, n) for n in per_seed["compressor"]])
    rows = [row for q in questions for row in _question_rows(points, q, kept_sets, margin)]
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
    table["units_for_target"] = [
        units_needed(se, n, target, alpha / max(m, 1), power)
        for se, n in zip(table["loss_diff_se"], table["units"], strict=True)
    ]
    table["target"] = target
    table["verdict"] = [
        decide(mean, p, t, alpha)
        for mean, p, t in zip(
            table["loss_diff_mean"], table["p_holm"], table["tost_p_holm"], strict=True
        )
    ]
    return table


def verdicts_table(paths: Sequence[str | Path], **kwargs: Any) -> pd.DataFrame:
    """:func:`verdicts_from_points` of the one-round study tables ``paths`` (their rounds
    averaged per trajectory; variants whose bits are an ideal channel's, not bytes sent, left
    out)."""
    from gradcomp.lossy.tables import one_round_data, sent_bits_only

    data = sent_bits_only(one_round_data(paths))
    per_seed = seed_means(data, ["bits_per_entry", "test_loss", "test_acc"])
    return verdicts_from_points(per_seed, **kwargs)


def _readable(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: at most ten columns, the rest stays in the TSV."""
    out = pd.DataFrame(
        {
            "question": table["model"] + ": " + table["question"],
            "bits/entry": [
                f"{a:.3g}-{b:.3g}" for a, b in zip(
                    table["bits_per_entry_min"], table["bits_per_entry_max"], strict=True)
            ],
        }
    )  # fmt: skip
    for part in ("mean", "lo", "hi"):
        out[f"loss_diff_{part}"] = table[f"loss_diff_{part}"]
    out["p_holm"] = table["p_holm"]
    out["tost_p_holm"] = table["tost_p_holm"]
    out["min_detectable"] = table["min_detectable"]
    out["against"] = [
        r + (f" (dominated: {d})" if d else "")
        for r, d in zip(table["reference_points"], table["reference_dominated"], strict=True)
    ]
    out["units"] = [f"{u} {d}" for u, d in zip(table["units"], table["design"], strict=True)]
    target = table["target"].iloc[0]
    out[f"for_{target:g}"] = table["units_for_target"]
    out["verdict"] = table["verdict"]
    return out


def table_verdicts(
    paths, tsv, md, *, questions, curves, kept_sets, margin: float, alpha: float = 0.05,
    power: float = 0.8, target: float = 0.02,
) -> pd.DataFrame:  # fmt: skip
    """Write the verdicts as TSV (every column) and Markdown (:func:`_readable`)."""
    if not questions:
        write_tsv(tsv, pd.DataFrame(columns=["model", "question", "verdict"]))
        write_text(
            md, "# Verdicts\n\nNo primary question is declared (lossy.verdicts.questions).\n"
        )
        return pd.DataFrame()
    table = verdicts_table(
        paths, questions=questions, curves=curves, kept_sets=kept_sets, margin=margin,
        alpha=alpha, power=power, target=target,
    )  # fmt: skip
    if table.empty:
        raise ValueError(
            "no verdict could be computed: no question's curves are in the one-round study "
            "(lossy.verdicts.questions, lossy.one_round.variants)"
        )
    m = int(np.isfinite(table["p"]).sum())
    title = (
        f"Verdicts: the {m} primary questions (lossy.verdicts), one-round study at matched "
        "measured bits. Per trajectory: the mean over the test curve's matched configurations "
        "of its test loss minus the reference's at the same bits (the mixture of the two "
        "reference configurations that bracket its bits, linear in bits; 'kept set': the "
        "reference's configurations on the same top-K fraction; 'frontier': its operational "
        "curve, the lower convex hull of its configurations' mean bits and loss over every "
        "kept set); nats, negative = lower loss for the same bits. Mean [95% Student-t "
        "interval] over the warm starts, each the mean of its nested seeds "
        "(two-level design). Family: these questions; p (difference = 0) and TOST p "
        f"(|difference| >= {margin:g} nats) each Holm-adjusted. Verdict: equivalent if the "
        f"adjusted TOST p < {alpha:g}, else better / worse if the adjusted p < {alpha:g}, "
        f"else undecided. min_detectable: the difference detected with {power:.0%} power at "
        f"level {alpha:g}/{m} (Holm's first step); for_{target:g}: the warm starts (at this "
        f"design's seeds each) that would detect {target:g} nats. 'against': the reference "
        "configurations "
        "the contrasts use, those another reference configuration beats in bits and loss "
        "marked dominated; unmatched test configurations and the accuracy differences in "
        "verdicts.tsv. Coverage and power of this procedure: docs/results.md."
    )
    reporting.write_table(table, tsv, md, title=title, readable=_readable(table))
    return table
