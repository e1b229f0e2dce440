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
beating every candidate: tests/test_detectable_power.py), the share of the
variance between warm starts (one-way ANOVA), which reference configurations the contrasts
use and which of those are dominated by another configuration of the reference. The
procedure's coverage under nulls and shapes that break a chord, and its power, are checked by
simulation (:mod:`gradcomp.statistics.verdict_simulation`, ``tests/test_verdict_simulation.py``).
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
from gradcomp.statistics.bracket_choice import choose, difference_ends
from gradcomp.statistics.matched_bits import bracket_at, frontier_candidates, pareto_front
from gradcomp.statistics.max_contrast import MaxContrastTest, max_contrast_test
from gradcomp.statistics.nested import bounded_test, decide, decided_interval, variance_components
from gradcomp.statistics.paired import holm, seed_means

__all__ = ["POINT_COLUMNS", "question_label", "table_verdicts", "verdicts_from_points",
           "verdicts_table"]  # fmt: skip

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


def _one_configuration_ends(at_model, question, kept_sets, kept_set, trajectories, y_loss, y_acc):
    """Per trajectory, the loss and accuracy differences to the one reference configuration
    (``reference_rate``, ``reference_M``, on ``kept_set``) at its own bits, both ends equal
    (no reading between configurations), with its label and design-mean bits; or None and
    why not."""
    rows = at_model[
        (at_model["curve"] == question["reference"])
        & (at_model["rate"] == question["reference_rate"])
        & (at_model["M"] == question["reference_M"])
    ]
    labels = [variant_label(n, int(r), int(m)) for n, r, m in zip(
        rows["compressor"], rows["rate"], rows["M"], strict=True)]  # fmt: skip
    rows = rows[[kept_sets.get(lb, "") == kept_set for lb in labels]]
    name = f"{question['reference']} R{question['reference_rate']} M{question['reference_M']}"
    if rows.empty:
        return None, f"{name} has no configuration on {kept_set} in the one-round study"
    ref = _wide(rows, trajectories, f"{question['reference']}'s")
    if len(ref["labels"]) > 1:
        return None, f"{name} is more than one configuration on {kept_set}: {ref['labels']}"
    (label,) = ref["labels"]
    d_loss = y_loss - ref["loss"][label]
    d_acc = y_acc - ref["acc"][label]
    return ((d_loss, d_loss), (d_acc, d_acc), label, ref["bits"][label]), ""


def _wide(rows: pd.DataFrame, trajectories: pd.MultiIndex, what: str) -> dict[str, Any]:
    """Label -> per-trajectory arrays (in ``trajectories``' order) and design-mean bits."""
    labels_of = np.array([variant_label(n, int(r), int(m)) for n, r, m in zip(
        rows["compressor"], rows["rate"], rows["M"], strict=True)])  # fmt: skip
    labels = sorted(set(labels_of))
    col = {lb: i for i, lb in enumerate(labels)}
    row = trajectories.get_indexer(pd.MultiIndex.from_frame(rows[["warm_start", "seed"]]))
    j = np.array([col[lb] for lb in labels_of], dtype=np.int64)
    inside = row >= 0
    seen = np.zeros((len(trajectories), len(labels)), dtype=np.int64)
    np.add.at(seen, (row[inside], j[inside]), 1)
    if (seen > 1).any():
        r, c = np.argwhere(seen > 1)[0]
        raise ValueError(f"{what} {labels[c]} appears twice on a trajectory")
    if (seen == 0).any():
        r, c = np.argwhere(seen == 0)[0]
        ws, seed = trajectories[r]
        raise ValueError(
            f"{what} {labels[c]} has no points on trajectory warm start {ws}, seed {seed}, "
            "where the question's test configuration has"
        )
    out: dict[str, Any] = {"labels": labels}
    for key, column in (("loss", "test_loss"), ("acc", "test_acc"), ("bits", "bits_per_entry")):
        values = np.full(seen.shape, np.nan)
        values[row[inside], j[inside]] = rows[column].to_numpy(dtype=np.float64)[inside]
        out[key] = {lb: values[:, i] for i, lb in enumerate(labels)}
    out["bits"] = {lb: float(v.mean()) for lb, v in out["bits"].items()}
    return out


def _kept_set_ends(x, ref, kept, kept_set, question, y_loss, y_acc, units):
    """Per trajectory (low, high) ends of the loss and accuracy differences to the reference
    curve on ``kept_set`` at ``x`` bits, each read as its own points support
    (:mod:`gradcomp.statistics.bracket_choice`), and what was used; or None and why not."""
    pool = {lb: ref["bits"][lb] for lb in ref["labels"] if kept[lb] == kept_set}
    if not pool:
        return None, f"{question['reference']} has no configuration on {kept_set}"
    b = bracket_at(x, pool, interpolation=question.get("interpolation") or "convex")
    if b is None:
        lo, hi = min(pool.values()), max(pool.values())
        return None, (
            f"{x:.4g} bits lie outside {question['reference']}'s {lo:.4g}-{hi:.4g} on {kept_set}"
        )
    kind, ends = choose(b, ref["loss"], units)
    acc = difference_ends(y_acc, ref["acc"], choose(b, ref["acc"], units)[1])
    return (difference_ends(y_loss, ref["loss"], ends), acc, b.used(kind), b.step_log2, kind), ""


def _frontier_tests(x, ref, question, y_loss, y_acc, units):
    """Loss and accuracy :class:`~gradcomp.statistics.max_contrast.MaxContrastTest` against the
    reference's operational curve at ``x`` bits, and the candidates; or None and why not."""
    candidates = frontier_candidates(x, ref["bits"])
    if candidates is None:
        lo, hi = min(ref["bits"].values()), max(ref["bits"].values())
        return None, f"{x:.4g} bits lie outside {question['reference']}'s {lo:.4g}-{hi:.4g}"

    def contrasts(y, values, sign):
        return np.column_stack([
            sign * (y - sum(w * values[lb] for lb, w in c.items())) for c in candidates
        ])  # fmt: skip

    loss = max_contrast_test(contrasts(y_loss, ref["loss"], 1.0), units)
    acc = max_contrast_test(contrasts(y_acc, ref["acc"], -1.0), units)
    return (loss, acc, candidates), ""


def _question_rows(
    points: pd.DataFrame, question: Mapping[str, Any], kept_sets, margin: float
) -> list[dict[str, Any]]:
    rows = []
    test_label = variant_label(question["test"], question["rate"], question["M"])
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
        t = _wide(test, trajectories, "the test configuration")
        # the design's units: warm starts where there are two or more, else trajectories
        units = trajectories.get_level_values("warm_start").to_numpy()
        y_loss, y_acc = t["loss"][test_label], t["acc"][test_label]
        x = t["bits"][test_label]
        base = {
            "model": model, "family": question.get("family", "primary"),
            "question": question_label(question, kept_set), "test": question["test"],
            "rate": question["rate"], "M": question["M"], "kept_set": kept_set,
            "reference": question["reference"], "reference_M": question["reference_M"],
            "match": question["match"],
            "interpolation": question.get("interpolation") or (
                "convex" if question["match"] == "kept_set" else "chord"),
            "test_point": test_label, "bits_per_entry": x, "trajectories": len(trajectories),
            "reference_rate": question.get("reference_rate"), "reference_bits": np.nan,
        }  # fmt: skip
        if question["match"] == "exact":
            exact = test.set_index(["warm_start", "seed"]).reindex(trajectories)
            d_loss = y_loss - exact["exact_loss"].to_numpy()
            d_acc = y_acc - exact["exact_acc"].to_numpy()
            loss_ends, acc_ends = (d_loss, d_loss), (d_acc, d_acc)
            described = {"reference_points": "uncompressed", "reference_dominated": "",
                         "step_log2": 0.0, "note": ""}  # fmt: skip
        elif question.get("reference_rate") is not None:
            base["interpolation"] = "none"
            found, why = _one_configuration_ends(
                at_model, question, kept_sets, kept_set, trajectories, y_loss, y_acc
            )
            if found is None:
                nan = np.full(len(trajectories), np.nan)
                loss_ends, acc_ends = (nan, nan), (nan, nan)
                described = {"reference_points": "", "reference_dominated": "",
                             "step_log2": np.nan, "note": f"not matched: {why}"}  # fmt: skip
            else:
                loss_ends, acc_ends, used, ref_bits = found
                base["reference_bits"] = ref_bits
                base["question"] = question_label(question, kept_set, (x, ref_bits))
                described = {"reference_points": used, "reference_dominated": "",
                             "step_log2": 0.0, "note": ""}  # fmt: skip
        else:
            ref_rows = at_model[
                (at_model["curve"] == question["reference"])
                & (at_model["M"] == question["reference_M"])
            ]
            ref_rows = ref_rows[
                [variant_label(n, int(r), int(m)) != test_label for n, r, m in zip(
                    ref_rows["compressor"], ref_rows["rate"], ref_rows["M"], strict=True)]
            ]  # fmt: skip
            if ref_rows.empty:
                continue
            ref = _wide(ref_rows, trajectories, f"{question['reference']}'s")
            front = pareto_front(
                [ref["bits"][lb] for lb in ref["labels"]],
                [ref["loss"][lb].mean() for lb in ref["labels"]],
            )
            dominated = {lb for lb, on in zip(ref["labels"], front, strict=True) if not on}
            if question["match"] == "kept_set":
                found, why = _kept_set_ends(
                    x, ref, kept_sets, kept_set, question, y_loss, y_acc, units
                )
            else:
                found, why = _frontier_tests(x, ref, question, y_loss, y_acc, units)
            if found is None:
                nan = np.full(len(trajectories), np.nan)
                loss_ends, acc_ends = (nan, nan), (nan, nan)
                described = {"reference_points": "", "reference_dominated": "",
                             "step_log2": np.nan, "note": f"not matched: {why}"}  # fmt: skip
            elif question["match"] == "kept_set":
                loss_ends, acc_ends, used, step, base["interpolation"] = found
                described = {
                    "reference_points": ",".join(used),
                    "reference_dominated": ",".join(lb for lb in used if lb in dominated),
                    "step_log2": step, "note": "",
                }  # fmt: skip
            else:
                lt, neg_acc, candidates = found
                binding = candidates[int(np.argmax(lt.estimates))] if lt.contrasts else {}
                used = sorted(binding)
                described = {
                    "reference_points": ",".join(used),
                    "reference_dominated": ",".join(lb for lb in used if lb in dominated),
                    "step_log2": _step(binding, ref["bits"]),
                    "candidates": lt.contrasts,
                    "note": "",
                }
                rows.append(_row(base, described, lt, neg_acc, margin, units, None))
                continue
        lt = bounded_test(*loss_ends, units)
        at = bounded_test(*acc_ends, units)
        rows.append(_row(base, described, lt, at, margin, units, loss_ends))
    return rows


def _step(weights: Mapping[str, float], bits: Mapping[str, float]) -> float:
    """log2 of the bits ratio of a candidate's two configurations (0 for one)."""
    b = [bits[lb] for lb in weights]
    return float(np.log2(max(b) / min(b))) if b else np.nan


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
    name not listed is its own); ``kept_sets``: variant label (``name/R{rate}_M{M}``) -> its
    kept set (:func:`gradcomp.statistics.matched_bits.kept_set_of`); ``names``: readers' names
    (:meth:`gradcomp.study.lossy.LossySection.display_names`: variant labels and
    ``{name}@M{M}``) for the columns ``test_name`` and ``reference_name`` (the identifiers
    where a name is missing)."""
    points = per_seed.assign(curve=[curves.get(n, n) for n in per_seed["compressor"]])
    rows = [row for q in questions for row in _question_rows(points, q, kept_sets, margin)]
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


def verdicts_table(paths: Sequence[str | Path], **kwargs: Any) -> pd.DataFrame:
    """:func:`verdicts_from_points` of the one-round study tables ``paths`` (their rounds
    averaged per trajectory; variants whose bits are an ideal channel's, not bytes sent, left
    out)."""
    from gradcomp.lossy.paper_y_tables import one_round_data, sent_bits_only

    data = sent_bits_only(one_round_data(paths))
    per_seed = seed_means(
        data, ["bits_per_entry", "test_loss", "test_acc", "exact_loss", "exact_acc"]
    )
    return verdicts_from_points(per_seed, **kwargs)


def _readable(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: at most ten columns, the rest stays in the TSV."""
    out = pd.DataFrame(
        {
            "family": table["family"],
            "question": table["model"] + ": " + table["question"],
            "bits/entry": table["bits_per_entry"],
        }
    )
    out["loss_diff_mean"] = table["loss_diff_mean"]
    out["decided_lo"] = table["decided_lo"]
    out["decided_hi"] = table["decided_hi"]
    out["interp_bound"] = table["interp_bound"]
    out["p_holm"] = table["p_holm"]
    out["min_detectable"] = table["min_detectable"]
    out["verdict"] = [
        v + (f" ({n})" if n else "") for v, n in zip(table["verdict"], table["note"], strict=True)
    ]
    return out


def table_verdicts(
    paths, tsv, md, *, questions, curves, kept_sets, margin: float, alpha: float = 0.05,
    power: float = 0.8, target: float = 0.02, names: Mapping[str, str] | None = None,
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
        alpha=alpha, power=power, target=target, names=names,
    )  # fmt: skip
    if table.empty:
        raise ValueError(
            "no verdict could be computed: no question's test configuration is in the "
            "one-round study (lossy.verdicts.questions, lossy.one_round.variants)"
        )
    families = ", ".join(
        f"{f} ({int(n)})"
        for f, n in table.groupby("family", sort=False)["family_size"].max().items()
    )
    title = (
        "Verdicts: the primary questions (lossy.verdicts), each one test configuration at the "
        "bits it spends (one-round study). Difference: its test loss minus the reference's at "
        "the same bits (uncompressed: the same round's float32 aggregate; kept set: the "
        "reference quantizer's curve on the same top-K fraction; frontier: the reference's "
        "operational curve over every top-K fraction, chosen without the warm start it is "
        "compared on; with a reference rate: that one reference configuration on the same "
        "kept set at its own bits, both bits in the question, no bracket); nats, negative = "
        "lower loss for the same bits. Between two reference "
        "configurations the curve is bracketed as its points allow (interpolation: convex or "
        "concave, the chord and the neighbouring secants; either bend; monotone; slope, within "
        "0.1% of one); interp_bound is that bracket's width, charged in the interval. Mean "
        "(the bracket's middle) [95% interval: the low end's lower and the "
        "high end's upper Student-t limit] over the warm starts, each the mean of its nested "
        f"seeds (two-level design). Holm families, each adjusted on its own: {families}. "
        f"Verdict: equivalent if the adjusted TOST p (|difference| >= {margin:g} nats) < "
        f"{alpha:g}, else better / worse if the adjusted p (difference = 0) < {alpha:g}, "
        f"else undecided. decided_lo / decided_hi: the interval the verdict is decided on, at "
        "the family's Holm-adjusted level (alpha p / p_holm: it excludes 0 exactly when the "
        "adjusted test rejects; for equivalent the TOST interval, inside the margin; for "
        "undecided the hull of both); the unadjusted 95% interval is loss_diff_lo / _hi in "
        f"verdicts.tsv. min_detectable: the difference detected either way with {power:.0%} "
        f"power at level {alpha:g}/m (Holm's first step, m the family's size), interp_bound "
        "included. "
        "The reference configurations used, the bracket's largest step (log2 bits), the "
        "accuracy differences and the warm starts that would detect "
        f"{target:g} nats: verdicts.tsv. Coverage and power of this procedure: docs/results.md."
    )
    reporting.write_table(table, tsv, md, title=title, readable=_readable(table))
    return table
