"""Verdicts: the primary questions of paper Y's study, answered from the one-round study.

Each question (``lossy.verdicts.questions``, declared in the config before the run) is about
**one budget**: one test configuration (a compressor entry at one rate R and M, on its kept
set), at the bits it measurably spends, against

- ``exact``: the uncompressed aggregate of the same round: what the configuration loses
  against sending float32;
- ``kept_set``: the reference quantizer's curve on the same kept set at the same bits;
- ``frontier``: the reference's operational curve over every kept set at the same bits,
  chosen out of sample (:mod:`gradcomp.statistics.matched_bits`);
- with ``reference_rate``: **one** reference configuration (that rate at ``reference_M``,
  on the same kept set) at its own bits, whatever they are: a direct paired comparison of
  two configurations, no reading between configurations (``interp_bound`` 0,
  ``interpolation`` ``none``); the row states both bits (``bits_per_entry``,
  ``reference_bits``) and so does its label (:func:`question_label`).

Per trajectory (warm start, seed) the difference is the test's test loss minus the
reference's at matched bits (nats; negative = lower loss for the same bits), known to lie
between two linear contrasts where the reference has to be read between its configurations
or within 0.1% of one, by the reading its own points support (``interpolation``: convex,
concave, either bend, monotone, slope; :mod:`gradcomp.statistics.matched_bits`,
:mod:`gradcomp.statistics.bracket_choice`); the accuracy likewise (positive = better). Both ends
go through the two-level design (:mod:`gradcomp.statistics.nested`): interval over the warm
starts, each the mean of its seeds, and the bracket's width charged
(:func:`gradcomp.statistics.nested.bounded_test`).

The questions form declared **families** (``family``), and each family is adjusted by Holm's
method on its own. Each question is answered with one of

- **equivalent**: the TOST of ``|difference| >= margin`` (both ends inside the margin) is
  rejected after Holm's adjustment over the family;
- **better** / **worse**: not equivalent, and the test of ``difference = 0`` (the whole
  bracket below, or above, 0) is rejected after Holm's adjustment over the family;
- **undecided**: neither (a configuration outside the reference's bits, too, with a note).

Each row also states the bracket's width (``interp_bound``) and the largest step between
the reference configurations it leans on (``step_log2``, log2 bits), the smallest difference
the design detects either way with the configured power at level ``alpha / m`` (Holm's
first step, m questions of the family; wherever the curve lies in the bracket; on the front
beating every candidate: tests/statistics/test_detectable_power.py), the share of the
variance between warm starts (one-way ANOVA), which reference configurations the contrasts
use and which of those are dominated by another configuration of the reference. The
procedure's coverage under nulls and shapes that break a chord, and its power, are checked by
simulation (:mod:`gradcomp.statistics.verdict_simulation`,
``tests/statistics/test_verdict_simulation.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gradcomp.statistics.matched_bits import pareto_front
from gradcomp.statistics.matched_differences import (
    Label,
    frontier_tests,
    kept_set_ends,
    one_configuration_ends,
    step_log2,
    wide,
)
from gradcomp.statistics.max_contrast import MaxContrastTest
from gradcomp.statistics.nested import bounded_test, decide, decided_interval, variance_components
from gradcomp.statistics.paired import holm

__all__ = ["POINT_COLUMNS", "question_label", "verdicts_from_points"]

#: The columns a verdict needs per variant and trajectory (:func:`verdicts_from_points`).
POINT_COLUMNS = ("model", "compressor", "rate", "M", "warm_start", "seed", "bits_per_entry",
                 "test_loss", "test_acc", "exact_loss", "exact_acc")  # fmt: skip


def question_label(
    q: Mapping[str, Any], kept_set: str | None = None, bits: tuple[float, float] | None = None
) -> str:
    """``{test} R{rate} M{M}[ on {kept set}] vs {reference} M{reference_M}, {match}``, or
    ``... vs uncompressed`` for ``match == "exact"``; with a ``reference_rate``, one
    configuration against one: ``{test} R{rate} M{M}[ on {kept set}][ ({bits} bits)] vs
    {reference} R{reference_rate} M{reference_M}[ ({bits} bits)], same kept set`` (``bits``:
    the test's and the reference's measured bits per entry, where known).

    >>> question_label({"test": "ecsqb05", "rate": 1, "M": 2, "reference": "gennorm",
    ...                 "reference_M": 2, "reference_rate": 1, "match": "kept_set"},
    ...                "top-K 45.2%", (0.5, 1.0))
    'ecsqb05 R1 M2 on top-K 45.2% (0.50 bits) vs gennorm R1 M2 (1.00 bits), same kept set'
    """
    where = f" on {kept_set}" if kept_set else ""
    head = f"{q['test']} R{q['rate']} M{q['M']}{where}"
    if q["match"] == "exact":
        return f"{head} vs uncompressed"
    match = q["match"].replace("_", " ")
    if q.get("reference_rate") is not None:
        test_bits, ref_bits = (f" ({b:.2f} bits)" for b in bits) if bits else ("", "")
        reference = f"{q['reference']} R{q['reference_rate']} M{q['reference_M']}"
        return f"{head}{test_bits} vs {reference}{ref_bits}, same {match}"
    return f"{head} vs {q['reference']} M{q['reference_M']}, {match}"


@dataclass(frozen=True)
class _Test:
    """A question's test configuration on one model: its trajectories (in order), the design's
    units, its label and kept set, per-trajectory loss and accuracy, design-mean bits."""

    trajectories: pd.MultiIndex
    units: np.ndarray
    label: str
    kept_set: str
    loss: np.ndarray
    acc: np.ndarray
    bits: float


def _question_rows(
    points: pd.DataFrame, question: Mapping[str, Any], kept_sets, margin: float, label: Label
) -> list[dict[str, Any]]:
    rows = []
    test_label = label(question["test"], question["rate"], question["M"])
    kept_set = kept_sets.get(test_label, "")
    for model, at_model in points.groupby("model", sort=True):
        test = at_model[
            (at_model["compressor"] == question["test"])
            & (at_model["rate"] == question["rate"])
            & (at_model["M"] == question["M"])
        ]
        if test.empty:
            continue
        trajectories = pd.MultiIndex.from_frame(
            test[["warm_start", "seed"]].drop_duplicates().sort_values(["warm_start", "seed"])
        )
        t = wide(test, trajectories, "the test configuration", label)
        # the design's units: warm starts where there are two or more, else trajectories
        units = trajectories.get_level_values("warm_start").to_numpy()
        y = _Test(trajectories, units, test_label, kept_set, t["loss"][test_label],
                  t["acc"][test_label], t["bits"][test_label])  # fmt: skip
        row = _model_row(model, at_model, test, question, y, kept_sets, margin, label)
        if row is not None:
            rows.append(row)
    return rows


def _model_row(model, at_model, test, question, y: _Test, kept_sets, margin, label):
    """One model's verdict row of ``question`` (None: the reference has no configuration)."""
    base = {
        "model": model, "family": question.get("family", "primary"),
        "question": question_label(question, y.kept_set), "test": question["test"],
        "rate": question["rate"], "M": question["M"], "kept_set": y.kept_set,
        "reference": question["reference"], "reference_M": question["reference_M"],
        "match": question["match"],
        "interpolation": question.get("interpolation") or (
            "convex" if question["match"] == "kept_set" else "chord"),
        "test_point": y.label, "bits_per_entry": y.bits, "trajectories": len(y.trajectories),
        "reference_rate": question.get("reference_rate"), "reference_bits": np.nan,
    }  # fmt: skip
    if question["match"] == "exact":
        exact = test.set_index(["warm_start", "seed"]).reindex(y.trajectories)
        d_loss = y.loss - exact["exact_loss"].to_numpy()
        d_acc = y.acc - exact["exact_acc"].to_numpy()
        described = {"reference_points": "uncompressed", "reference_dominated": "",
                     "step_log2": 0.0, "note": ""}  # fmt: skip
        return _bounded_row(base, described, (d_loss, d_loss), (d_acc, d_acc), y, margin)
    if question.get("reference_rate") is not None:
        base["interpolation"] = "none"
        found, why = one_configuration_ends(
            at_model, question, kept_sets, y.kept_set, y.trajectories, y.loss, y.acc, label
        )
        if found is None:
            return _bounded_row(base, *_not_matched(y, why), y, margin)
        loss_ends, acc_ends, used, ref_bits = found
        base["reference_bits"] = ref_bits
        base["question"] = question_label(question, y.kept_set, (y.bits, ref_bits))
        described = {"reference_points": used, "reference_dominated": "",
                     "step_log2": 0.0, "note": ""}  # fmt: skip
        return _bounded_row(base, described, loss_ends, acc_ends, y, margin)
    return _curve_row(base, at_model, question, y, kept_sets, margin, label)


def _curve_row(base, at_model, question, y: _Test, kept_sets, margin, label):
    """The row of a question against the reference's curve on the test's kept set
    (``kept_set``) or over every kept set (``frontier``); None where the reference has no
    configuration but the test's own."""
    ref_rows = at_model[
        (at_model["curve"] == question["reference"]) & (at_model["M"] == question["reference_M"])
    ]
    ref_rows = ref_rows[
        [label(n, int(r), int(m)) != y.label for n, r, m in zip(
            ref_rows["compressor"], ref_rows["rate"], ref_rows["M"], strict=True)]
    ]  # fmt: skip
    if ref_rows.empty:
        return None
    ref = wide(ref_rows, y.trajectories, f"{question['reference']}'s", label)
    front = pareto_front(
        [ref["bits"][lb] for lb in ref["labels"]],
        [ref["loss"][lb].mean() for lb in ref["labels"]],
    )
    dominated = {lb for lb, on in zip(ref["labels"], front, strict=True) if not on}
    if question["match"] == "kept_set":
        found, why = kept_set_ends(
            y.bits, ref, kept_sets, y.kept_set, question, y.loss, y.acc, y.units
        )
    else:
        found, why = frontier_tests(y.bits, ref, question, y.loss, y.acc, y.units)
    if found is None:
        return _bounded_row(base, *_not_matched(y, why), y, margin)
    if question["match"] == "kept_set":
        loss_ends, acc_ends, used, step, base["interpolation"] = found
        described = {
            "reference_points": ",".join(used),
            "reference_dominated": ",".join(lb for lb in used if lb in dominated),
            "step_log2": step, "note": "",
        }  # fmt: skip
        return _bounded_row(base, described, loss_ends, acc_ends, y, margin)
    lt, neg_acc, candidates = found
    binding = candidates[int(np.argmax(lt.estimates))] if lt.contrasts else {}
    used = sorted(binding)
    described = {
        "reference_points": ",".join(used),
        "reference_dominated": ",".join(lb for lb in used if lb in dominated),
        "step_log2": step_log2(binding, ref["bits"]),
        "candidates": lt.contrasts,
        "note": "",
    }
    return _row(base, described, lt, neg_acc, margin, y.units, None)


#: Per-trajectory (low, high) ends of a difference.
_Ends = tuple[np.ndarray, np.ndarray]


def _not_matched(y: _Test, why: str) -> tuple[dict[str, Any], _Ends, _Ends]:
    """NaN ends and the note of a question its reference cannot answer."""
    nan = np.full(len(y.trajectories), np.nan)
    described = {"reference_points": "", "reference_dominated": "",
                 "step_log2": np.nan, "note": f"not matched: {why}"}  # fmt: skip
    return described, (nan, nan), (nan, nan)


def _bounded_row(
    base: dict[str, Any],
    described: dict[str, Any],
    loss_ends: _Ends,
    acc_ends: _Ends,
    y: _Test,
    margin: float,
) -> dict[str, Any]:
    """The row of two-level tests of the loss and accuracy ends (charging the bracket)."""
    lt = bounded_test(*loss_ends, y.units)
    at = bounded_test(*acc_ends, y.units)
    return _row(base, described, lt, at, margin, y.units, loss_ends)


def _row(base, described, lt, at, margin, units, loss_ends) -> dict[str, Any]:
    """One verdict row from the loss test ``lt`` and the accuracy test ``at`` (for a
    :class:`~gradcomp.statistics.max_contrast.MaxContrastTest` of the negated accuracy, its
    interval turned back)."""
    if isinstance(at, MaxContrastTest):
        acc = {"acc_diff_mean": -at.mean, "acc_diff_lo": -at.hi, "acc_diff_hi": -at.lo}
    else:
        acc = {"acc_diff_mean": at.mean, "acc_diff_lo": at.lo, "acc_diff_hi": at.hi}
    share = np.nan
    if loss_ends is not None:
        between, within = variance_components(0.5 * (loss_ends[0] + loss_ends[1]), units)
        if np.isfinite(between) and between + within > 0:
            share = between / (between + within)
    return {
        **base,
        **described,
        "units": lt.units,
        "design": lt.design,
        "loss_diff_mean": lt.mean,
        "loss_diff_lo": lt.lo,
        "loss_diff_hi": lt.hi,
        "interp_bound": lt.bound,
        "loss_diff_se": lt.se,
        "df": lt.df,
        "critical": getattr(lt, "q", np.nan),
        "_test": lt,
        **acc,
        "p": lt.p,
        "tost_p": lt.tost(margin),
        "margin": margin,
        "warm_start_share": share,
    }


def verdicts_from_points(
    per_seed: pd.DataFrame,
    *,
    questions: Sequence[Mapping[str, Any]],
    curves: Mapping[str, str],
    kept_sets: Mapping[str, str],
    margin: float,
    label: Label,
    alpha: float = 0.05,
    power: float = 0.8,
    target: float = 0.02,
    names: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per question and model (module doc); ``units_for_target``: the units (warm
    starts, at the design's seeds each) that would make ``min_detectable`` at most ``target``
    nats, from the measured spread (inf where the bracket alone is wider).

    ``per_seed``: one row per variant and trajectory with :data:`POINT_COLUMNS`;
    ``questions``: dicts with ``test`` (a compressor name), ``rate``, ``M``, ``reference``
    (a rate curve; ignored for ``exact``), ``reference_M``, ``match`` (one of
    :data:`gradcomp.statistics.matched_bits.MATCHES`) and optionally ``family`` (default
    ``"primary"``), ``interpolation`` (default ``"convex"``) and ``reference_rate``
    (default None: the reference curve at the test's bits; a rate: that one configuration of
    the reference at its own bits, on the test's kept set)
    (:class:`gradcomp.study.lossy.Question`); ``curves``: compressor name -> its rate curve (a
    name not listed is its own); ``kept_sets``: variant label -> its kept set
    (:func:`gradcomp.statistics.matched_bits.kept_set_of`); ``label``: a variant's label from
    its name, rate and M (the study's ``name/R{rate}_M{M}``, the caller's
    :func:`gradcomp.compression.specs.variant_label`); ``names``: readers' names
    (:meth:`gradcomp.study.lossy.LossySection.display_names`: variant labels and
    ``{name}@M{M}``) for the columns ``test_name`` and ``reference_name`` (the identifiers
    where a name is missing)."""
    points = per_seed.assign(curve=[curves.get(n, n) for n in per_seed["compressor"]])
    rows = [row for q in questions for row in _question_rows(points, q, kept_sets, margin, label)]
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["p_holm"] = np.nan
    table["tost_p_holm"] = np.nan
    table["family_size"] = 0
    for _, idx in table.groupby("family", sort=False).groups.items():
        table.loc[idx, "p_holm"] = holm(table.loc[idx, "p"])
        table.loc[idx, "tost_p_holm"] = holm(table.loc[idx, "tost_p"])
        table.loc[idx, "family_size"] = int(np.isfinite(table.loc[idx, "p"]).sum())
    level = alpha / table["family_size"].clip(lower=1)
    table["min_detectable"] = [
        t.min_detectable(a, power) for t, a in zip(table["_test"], level, strict=True)
    ]
    table["units_for_target"] = [
        t.units_for(target, a, power) for t, a in zip(table["_test"], level, strict=True)
    ]
    table["target"] = target
    table["verdict"] = [
        decide(mean, p, t, alpha)
        for mean, p, t in zip(
            table["loss_diff_mean"], table["p_holm"], table["tost_p_holm"], strict=True
        )
    ]
    table["test_curve"] = [curves.get(t, t) for t in table["test"]]
    table["test_name"] = [(names or {}).get(p, p) for p in table["test_point"]]
    records = table.to_dict("records")
    table["reference_name"] = [_reference_name(r, names or {}) for r in records]
    table["reference_rate"] = pd.Series(
        [int(v) if _has_rate(v) else None for v in table["reference_rate"]],
        index=table.index,
        dtype=object,
    )
    decided = [decided_interval(r, alpha) for r in records]
    table["decided_lo"] = [d[0] for d in decided]
    table["decided_hi"] = [d[1] for d in decided]
    return table.drop(columns="_test")


def _reference_name(row: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """What a question compares with, as a reader names it."""
    if row["match"] == "exact":
        return "the float32 aggregate"
    if _has_rate(row.get("reference_rate")):
        used = str(row.get("reference_points") or "")
        rate, M = int(row["reference_rate"]), int(row["reference_M"])
        name = names.get(used, f"{row['reference']} R{rate} M{M}") if used else (
            f"{row['reference']} R{rate} M{M}")  # fmt: skip
        return f"{name} on the same kept set"
    key = f"{row['reference']}@M{row['reference_M']:g}"
    method = names.get(key, f"{row['reference']} M{row['reference_M']:g}")
    if row["match"] == "kept_set":
        return f"{method} on the same kept set"
    return f"{method} at its best kept set"


def _has_rate(value: Any) -> bool:
    """Whether a row's ``reference_rate`` names one reference configuration (not None, NaN
    or an empty cell read back)."""
    return value is not None and value != "" and not pd.isna(value)
