"""A test configuration's per-trajectory differences to its reference at matched bits, by the
question's ``match`` (:mod:`gradcomp.statistics.verdicts`): to one reference configuration at
its own bits, to the reference's curve on the same kept set read as its points support
(:mod:`gradcomp.statistics.bracket_choice`), or to its operational curve over every kept set
(:mod:`gradcomp.statistics.max_contrast`). Losses in nats, bits per entry.

A variant is named by its label, made by the caller's ``label(name, rate, M)`` (the study's
``name/R{rate}_M{M}``): the keys of ``kept_sets`` and of the readers' names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from gradcomp.statistics.bracket_choice import choose, difference_ends
from gradcomp.statistics.matched_bits import bracket_at, frontier_candidates
from gradcomp.statistics.max_contrast import max_contrast_test

__all__ = ["Label", "frontier_tests", "kept_set_ends", "one_configuration_ends", "step_log2",
           "wide"]  # fmt: skip

#: A variant's label from its compressor name, rate and M.
Label = Callable[[str, int, int], str]


def one_configuration_ends(
    at_model, question, kept_sets, kept_set, trajectories, y_loss, y_acc, label: Label
):
    """Per trajectory, the loss and accuracy differences to the one reference configuration
    (``reference_rate``, ``reference_M``, on ``kept_set``) at its own bits, both ends equal
    (no reading between configurations), with its label and design-mean bits; or None and
    why not."""
    rows = at_model[
        (at_model["curve"] == question["reference"])
        & (at_model["rate"] == question["reference_rate"])
        & (at_model["M"] == question["reference_M"])
    ]
    labels = [label(n, int(r), int(m)) for n, r, m in zip(
        rows["compressor"], rows["rate"], rows["M"], strict=True)]  # fmt: skip
    rows = rows[[kept_sets.get(lb, "") == kept_set for lb in labels]]
    name = f"{question['reference']} R{question['reference_rate']} M{question['reference_M']}"
    if rows.empty:
        return None, f"{name} has no configuration on {kept_set} in the one-round study"
    ref = wide(rows, trajectories, f"{question['reference']}'s", label)
    if len(ref["labels"]) > 1:
        return None, f"{name} is more than one configuration on {kept_set}: {ref['labels']}"
    (used,) = ref["labels"]
    d_loss = y_loss - ref["loss"][used]
    d_acc = y_acc - ref["acc"][used]
    return ((d_loss, d_loss), (d_acc, d_acc), used, ref["bits"][used]), ""


def wide(
    rows: pd.DataFrame, trajectories: pd.MultiIndex, what: str, label: Label
) -> dict[str, Any]:
    """Label -> per-trajectory arrays (in ``trajectories``' order) and design-mean bits."""
    labels_of = np.array([label(n, int(r), int(m)) for n, r, m in zip(
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


def kept_set_ends(x, ref, kept, kept_set, question, y_loss, y_acc, units):
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


def frontier_tests(x, ref, question, y_loss, y_acc, units):
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


def step_log2(weights: Mapping[str, float], bits: Mapping[str, float]) -> float:
    """log2 of the bits ratio of a candidate's two configurations (0 for one)."""
    b = [bits[lb] for lb in weights]
    return float(np.log2(max(b) / min(b))) if b else np.nan
