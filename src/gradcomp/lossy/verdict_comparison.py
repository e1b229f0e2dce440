"""Two runs' verdicts on the same declared questions side by side: does a word carry from
one regime to another (the default run's 41% model against the decisive run's 60%+ one)?

Questions are matched by their label (:func:`gradcomp.lossy.verdicts.question_label`), so
only questions both runs declared are compared. Where both runs decide (a word other than
undecided) and the words differ, that is a finding about the regime, not noise to tune
away; where one of them is undecided, the pair says nothing either way.

>>> a = pd.DataFrame({"question": ["q1", "q2"], "verdict": ["better", "undecided"]})
>>> b = pd.DataFrame({"question": ["q1", "q2"], "verdict": ["worse", "better"]})
>>> list(beside(a, b)["agreement"])
['the words differ', 'one undecided']
"""

from __future__ import annotations

import pandas as pd

__all__ = ["AGREEMENTS", "beside"]

#: what a pair of words says, in the order a reader should see them
AGREEMENTS = ("the words differ", "the same word", "one undecided", "both undecided")


def _agreement(first: str, second: str) -> str:
    if first == "undecided" and second == "undecided":
        return AGREEMENTS[3]
    if "undecided" in (first, second):
        return AGREEMENTS[2]
    return AGREEMENTS[1] if first == second else AGREEMENTS[0]


def beside(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """The questions of both verdict tables (columns suffixed ``_1`` / ``_2``, the question
    label shared) with ``agreement``, one of :data:`AGREEMENTS`, sorted by it (differing words
    first), in ``second``'s question order within each."""
    both = second.merge(first, on="question", suffixes=("_2", "_1"), how="inner")
    both["agreement"] = [
        _agreement(a, b) for a, b in zip(both["verdict_1"], both["verdict_2"], strict=True)
    ]
    order = {a: i for i, a in enumerate(AGREEMENTS)}
    return both.sort_values("agreement", key=lambda s: s.map(order), kind="stable").reset_index(
        drop=True
    )
