"""Two runs' verdicts on the same declared questions side by side: does a word carry from
one regime to another (the default run's 41% model against the decisive run's 60%+ one)?

Questions are matched by their label (:func:`gradcomp.statistics.verdicts.question_label`; the
measured bits a question against one reference configuration states, which move between
runs, left out of the match), so only questions both runs declared are compared. Where
both runs decide (a word other than undecided) and the words differ, that is a finding
about the regime, not noise to tune away; where one of them is undecided, the pair says
nothing either way.

>>> a = pd.DataFrame({"question": ["q1", "q2"], "verdict": ["better", "undecided"]})
>>> b = pd.DataFrame({"question": ["q1", "q2"], "verdict": ["worse", "better"]})
>>> list(beside(a, b)["agreement"])
['the words differ', 'one undecided']
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["AGREEMENTS", "beside"]

#: The measured bits in a question's label (``" (0.50 bits)"``): not part of what it asks.
_BITS = re.compile(r" \([\d.]+ bits\)")

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
    key = "_asked"
    both = second.assign(**{key: second["question"].str.replace(_BITS, "", regex=True)}).merge(
        first.assign(**{key: first["question"].str.replace(_BITS, "", regex=True)}).drop(
            columns="question"
        ),
        on=key, suffixes=("_2", "_1"), how="inner",
    ).drop(columns=key)  # fmt: skip
    both["agreement"] = [
        _agreement(a, b) for a, b in zip(both["verdict_1"], both["verdict_2"], strict=True)
    ]
    order = {a: i for i, a in enumerate(AGREEMENTS)}
    return both.sort_values("agreement", key=lambda s: s.map(order), kind="stable").reset_index(
        drop=True
    )
