"""The primary questions of the study (``lossy.verdicts``) and how they are decided.

:func:`build_verdicts` turns ``lossy.verdicts`` into :class:`Verdicts`: the margin, error rate
and power, and one :class:`Question` per test rate, each checked against the one-round study's
primary pass (the test compressor and its M and rates, the reference curve, the kept set it
is matched on); every failure is appended to the caller's list naming its key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gradcomp.compression.entries import Variant

__all__ = ["Question", "Verdicts", "build_verdicts"]


@dataclass(frozen=True)
class Question:
    """One primary question (``lossy.verdicts.questions``, one entry per rate): the ``test``
    compressor's configuration at ``rate`` and ``M`` against the ``reference`` curve at
    ``reference_M``, at its bits: on the same kept set, against the reference's front, or
    against the uncompressed aggregate (``match``, :mod:`gradcomp.statistics.matched_bits`), in Holm
    ``family``, the reference read between its configurations by ``interpolation``
    (:data:`gradcomp.statistics.matched_bits.INTERPOLATIONS`). With ``reference_rate`` the
    reference is its one configuration at that rate and ``reference_M`` on the test's kept
    set, each at its own bits (a direct paired comparison: no reading between
    configurations, ``interpolation`` ``"none"``)."""

    test: str
    M: int
    rate: int
    reference: str
    reference_M: int
    match: str
    family: str = "primary"
    interpolation: str = "convex"
    reference_rate: int | None = None

    @property
    def label(self) -> str:
        """:func:`gradcomp.statistics.verdicts.question_label` (without the kept set)."""
        from gradcomp.statistics.verdicts import question_label

        return question_label(dataclasses.asdict(self))


@dataclass(frozen=True)
class Verdicts:
    """How the primary questions are decided (``lossy.verdicts``): the equivalence margin in
    nats, the family-wise error rate, the power the detectable difference is stated at, the
    difference (nats) whose required warm starts each verdict states."""

    margin: float
    alpha: float
    power: float
    target: float
    questions: tuple[Question, ...]


def _interpolation(given: str | None, match: str) -> str:
    """A question's reading of the reference between its configurations: as ``given``, else
    ``convex`` on one kept set (the reference quantizer's curve at any level count) and
    ``chord`` on the front (the operational curve: time sharing between the configurations
    run reaches the chord)."""
    if given not in (None, "auto"):
        return given
    return "convex" if match == "kept_set" else "chord"


def _one_configuration(
    where: str,
    q: Mapping[str, Any],
    reference: str,
    ref_M: int,
    reference_rate: int,
    match: str,
    in_primary: list[Variant],
    kept_sets: Mapping[str, str],
    tests: list[Variant],
) -> str:
    """Why a question against the one configuration ``reference`` R``reference_rate`` M
    ``ref_M`` cannot be asked of the primary pass (``""`` where it can): that rate at that M,
    on each test configuration's kept set, not the test configuration itself."""
    at_M = [v for v in in_primary if v.curve == reference and v.M == ref_M]
    have = sorted({v.rate for v in at_M})
    if reference_rate not in have:
        return (
            f"{where}.reference_rate': {reference} M{ref_M} has no rate {reference_rate} in "
            f"the one-round study's primary pass (it has {have})"
        )
    if match not in ("auto", "kept_set"):
        return (
            f"{where}.match': a question with reference_rate compares one configuration on "
            f"the same kept set (auto or kept_set), not {match}"
        )
    chosen = [v for v in at_M if v.rate == reference_rate]
    for t in tests:
        same = [v for v in chosen if kept_sets[v.label] == kept_sets[t.label]]
        if not same:
            return (
                f"{where}.reference_rate': {reference} R{reference_rate} M{ref_M} has no "
                f"configuration on {t.label}'s kept set {kept_sets[t.label]!r} (it has "
                f"{sorted({kept_sets[v.label] for v in chosen})})"
            )
        if len(same) > 1:
            return (
                f"{where}.reference': {reference} R{reference_rate} M{ref_M} is more than one "
                f"configuration on {kept_sets[t.label]!r} ({sorted(v.label for v in same)}); "
                "name a curve with one there"
            )
        if same[0].label == t.label:
            return f"{where}.reference_rate': {t.label} would be compared with itself"
    return ""


class _Refused(Exception):
    """A question entry that cannot be asked; its message is the error, naming its key."""


def _test_and_rates(where: str, q: Mapping[str, Any], in_primary: list[Variant],
                    names: list[str]) -> tuple[list[Variant], list[int]]:  # fmt: skip
    """A question entry's test variants (of every M) and its rates, each in the primary pass."""
    test = [v for v in in_primary if v.name == q["test"]]
    if not test:
        raise _Refused(
            f"{where}.test': {q['test']!r} is not a compressor of the one-round study's "
            f"primary pass (lossy.one_round.variants gives {names}; with another "
            "lossy.compressors list, set lossy.verdicts.questions to match, or [])"
        )
    Ms = sorted({v.M for v in test})
    if q["M"] not in Ms:
        raise _Refused(f"{where}.M': {q['test']} has no M = {q['M']} ({Ms})")
    have = sorted({v.rate for v in test if v.M == q["M"]})
    rates = have if q.get("rates") is None else list(q["rates"])
    missing = [r for r in rates if r not in have]
    if missing:
        raise _Refused(
            f"{where}.rates': {q['test']} M{q['M']} has no rate {missing} in the one-round "
            f"study's primary pass (it has {have})"
        )
    return test, rates


def _against(where: str, q: Mapping[str, Any], test: list[Variant], rates: list[int],
             in_primary: list[Variant], curves: list[str],
             kept_sets: Mapping[str, str]) -> tuple[int, str, str | None]:  # fmt: skip
    """A question entry's reference M, its match and its interpolation (None: the match's)."""
    reference, reference_rate = q["reference"], q.get("reference_rate")
    if reference == "exact" and reference_rate is not None:
        raise _Refused(
            f"{where}.reference_rate': reference: exact has no rate (the uncompressed "
            "aggregate); leave reference_rate out or name a reference curve"
        )
    if reference == "exact":
        return 0, "exact", q.get("interpolation")
    if reference not in curves:
        raise _Refused(
            f"{where}.reference': {reference!r} is neither 'exact' nor a rate curve of "
            f"the one-round study's primary pass ({curves})"
        )
    ref_Ms = sorted({v.M for v in in_primary if v.curve == reference})
    given_M: int | None = q.get("reference_M")
    ref_M = (q["M"] if q["M"] in ref_Ms else ref_Ms[0]) if given_M is None else given_M
    if given_M is not None and ref_M not in ref_Ms:
        raise _Refused(f"{where}.reference_M': {reference} has no M = {ref_M} ({ref_Ms})")
    match = q.get("match", "auto")
    if match == "exact":
        raise _Refused(f"{where}.match': exact goes with reference: exact")
    if reference_rate is not None:
        failure = _one_configuration(
            where, q, reference, ref_M, reference_rate, match, in_primary, kept_sets,
            [v for v in test if v.M == q["M"] and v.rate in rates],
        )  # fmt: skip
        if failure:
            raise _Refused(failure)
        return ref_M, "kept_set", "none"
    if match == "auto":
        own = {kept_sets[v.label] for v in test}
        ref_sets = {kept_sets[v.label] for v in in_primary
                    if v.curve == reference and v.M == ref_M}  # fmt: skip
        match = "kept_set" if own & ref_sets else "frontier"
    return ref_M, match, q.get("interpolation")


def _questions(
    entries: list[dict[str, Any]],
    variants: list[Variant],
    primary: list[str],
    kept_sets: Mapping[str, str],
    errors: list[str],
) -> tuple[Question, ...]:
    """``lossy.verdicts.questions``, one :class:`Question` per test rate; each failure
    appended to ``errors`` naming its key."""
    in_primary = [v for v in variants if v.label in primary]
    names = sorted({v.name for v in in_primary})
    curves = sorted({v.curve for v in in_primary})
    out = []
    for i, q in enumerate(entries):
        where = f"config key 'lossy.verdicts.questions.{i}"
        try:
            test, rates = _test_and_rates(where, q, in_primary, names)
            ref_M, match, interpolation = _against(where, q, test, rates, in_primary, curves,
                                                   kept_sets)  # fmt: skip
        except _Refused as refused:
            errors.append(str(refused))
            continue
        for rate in rates:
            out.append(
                Question(
                    q["test"], q["M"], rate, q["reference"], ref_M, match,
                    family=q.get("family", "primary"),
                    interpolation=_interpolation(interpolation, match),
                    reference_rate=q.get("reference_rate"),
                )
            )  # fmt: skip
    if len({(q.label, q.family) for q in out}) != len(out):
        errors.append("config key 'lossy.verdicts.questions': a question is asked twice")
    return tuple(out)


def build_verdicts(
    c: Mapping[str, Any],
    variants: list[Variant],
    primary: list[str],
    kept_sets: Mapping[str, str],
    errors: list[str],
) -> Verdicts:
    """The :class:`Verdicts` of a ``lossy.verdicts`` section ``c``, its questions asked of the
    one-round study's ``primary`` labels (``kept_sets``: label -> kept set); each failure
    appended to ``errors`` naming its key."""
    return Verdicts(
        margin=c["margin"],
        alpha=c["alpha"],
        power=c["power"],
        target=c["target"],
        questions=_questions(c["questions"], variants, primary, kept_sets, errors),
    )
