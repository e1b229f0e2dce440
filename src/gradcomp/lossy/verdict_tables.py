"""The verdicts table (results/tables/verdicts.tsv and .md): the primary questions of paper Y
answered from the one-round study's files by :mod:`gradcomp.statistics.verdicts`, with
variants named by the study's labels (:func:`gradcomp.compression.specs.variant_label`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gradcomp import reporting
from gradcomp.artifacts import write_text, write_tsv
from gradcomp.compression.specs import variant_label
from gradcomp.lossy.paper_y_tables import one_round_data, sent_bits_only
from gradcomp.statistics.paired import seed_means
from gradcomp.statistics.verdicts import verdicts_from_points

__all__ = ["table_verdicts", "verdicts_table"]


def verdicts_table(paths: Sequence[str | Path], **kwargs: Any) -> pd.DataFrame:
    """:func:`~gradcomp.statistics.verdicts.verdicts_from_points` of the one-round study
    tables ``paths`` (their rounds averaged per trajectory; variants whose bits are an ideal
    channel's, not bytes sent, left out), variants labelled by the study's labels."""
    data = sent_bits_only(one_round_data(paths))
    per_seed = seed_means(
        data, ["bits_per_entry", "test_loss", "test_acc", "exact_loss", "exact_acc"]
    )
    return verdicts_from_points(per_seed, label=variant_label, **kwargs)


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
