"""Paper Y's T5: per compressor curve (a compressor and M over its rates), the BD-rate against
the baseline's curve (:mod:`gradcomp.statistics.rate_curves`) on the one-round study.

Every interval is over the design's units (warm starts, each the mean of its seeds;
:mod:`gradcomp.statistics.nested`); the table declares its family (BD-rate and sign tests) and
adjusts their p-values by Holm's method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats

from gradcomp import reporting
from gradcomp.compression.specs import variant_label
from gradcomp.lossy.paper_y_tables import one_round_data, sent_bits_only
from gradcomp.statistics.nested import nested_test, unit_values
from gradcomp.statistics.paired import add_holm, family_size, seed_means
from gradcomp.statistics.rate_curves import bd_rate, curve_points, dominance, drop_dominated

__all__ = ["t5_table", "table_t5"]


def t5_table(
    paths: Sequence[str | Path],
    *,
    baseline: str,
    curves: Mapping[str, str] | None = None,
    metric: str = "loss_increase",
) -> pd.DataFrame:
    """T5 (see the module doc): one row per model, rate curve and M against the baseline's
    curve (``curves``: compressor name -> curve, default its name; the baseline's curve is
    the one ``baseline`` joins, at the row's M when it has it, else its smallest M).

    Variants whose bits are an ideal channel's (:func:`sent_bits_only`) are left out. Each
    curve is first cut to its undominated configurations (design means; a configuration
    another of the same curve beats in bits and loss would only drag the curve up), listed in
    ``dominated_configs`` and ``baseline_dominated_configs``. Per trajectory: the BD-rate where
    the curves share a loss range, else the dominance class
    (:func:`gradcomp.statistics.rate_curves.dominance`). Columns: ``rates`` (the curve's
    variants), ``bits_per_entry_min`` / ``_max`` (measured), ``trajectories``,
    ``overlap`` (with a BD-rate), ``dominates`` / ``dominated`` / ``neither`` (the others),
    ``bd_rate_mean`` / ``_lo`` / ``_hi`` / ``_p`` over the overlapping trajectories (two-level
    design, :mod:`gradcomp.statistics.nested`), ``sign_p`` (two-sided sign test over the units of
    every trajectory's direction: fewer bits by BD-rate or dominance, or more), Holm over
    both columns together (``_p_holm``), and ``verdict``: ``fewer bits`` / ``more bits`` when
    the BD-rate is significant and no trajectory without overlap points the other way (or the
    sign test is significant), else ``undecided``."""
    curves = dict(curves or {})
    per_seed = curve_points(
        seed_means(sent_bits_only(one_round_data(paths)), ["bits_coded", "bits_per_entry", metric]),
        curves,
    )
    base_curve = curves.get(baseline, baseline)
    per_seed, dominated = drop_dominated(per_seed, metric, variant_label)
    rows = []
    for (model, curve, M), pts in per_seed.groupby(["model", "curve", "M"], sort=True):
        if curve == base_curve:
            continue
        base = per_seed[(per_seed["model"] == model) & (per_seed["curve"] == base_curve)]
        if base.empty:
            continue
        base_M = M if M in set(base["M"]) else int(base["M"].min())
        base = base[base["M"] == base_M]
        rows.append(
            {
                "model": model,
                "curve": curve,
                "M": int(M),
                "baseline": base_curve,
                "baseline_M": base_M,
                "rates": ",".join(
                    f"{c}/R{r}"
                    for c, r in sorted(set(zip(pts["compressor"], pts["rate"], strict=True)))
                ),
                "bits_per_entry_min": float(pts["bits_per_entry"].min()),
                "bits_per_entry_max": float(pts["bits_per_entry"].max()),
                "dominated_configs": dominated.get((model, curve, M), ""),
                "baseline_dominated_configs": dominated.get((model, base_curve, base_M), ""),
                **_curve_tests(pts, base, metric),
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table = add_holm(table, ["bd_rate", "sign"])
    table["verdict"] = [_verdict(row) for row in table.itertuples(index=False)]
    return table


def _curve_tests(pts: pd.DataFrame, base: pd.DataFrame, metric: str) -> dict[str, Any]:
    """T5's tests of one curve's points ``pts`` against the baseline curve's ``base`` (one row
    per configuration and trajectory): per trajectory the BD-rate (%) or, without a shared
    loss range, the dominance class; their counts, the BD-rate's two-level interval and the
    sign test of every trajectory's direction."""
    bd, bd_starts, direction, direction_starts, dom = [], [], [], [], []
    for (ws, seed), t in pts.groupby(["warm_start", "seed"], sort=True):
        ref = base[(base["warm_start"] == ws) & (base["seed"] == seed)]
        if len(ref) < 2:
            continue
        args = (t["bits_coded"], t[metric], ref["bits_coded"], ref[metric])
        value = bd_rate(*args)
        if np.isfinite(value):
            bd.append(value)
            bd_starts.append(ws)
            direction.append(float(np.sign(-value)))
        else:
            d = dominance(*args)
            dom.append(d)
            direction.append(float(d))
        direction_starts.append(ws)
    t_bd = nested_test(bd, bd_starts)
    signs, _ = unit_values(direction, direction_starts)
    signs = np.sign(signs)
    nonzero = signs[signs != 0]
    sign_p = (
        float(scipy.stats.binomtest(int((nonzero > 0).sum()), len(nonzero)).pvalue)
        if len(nonzero)
        else np.nan
    )
    return {
        "trajectories": len(direction),
        "overlap": len(bd),
        "dominates": int(sum(d > 0 for d in dom)),
        "dominated": int(sum(d < 0 for d in dom)),
        "neither": int(sum(d == 0 for d in dom)),
        "units": t_bd.units,
        "design": t_bd.design,
        "bd_rate_mean": t_bd.mean,
        "bd_rate_lo": t_bd.lo,
        "bd_rate_hi": t_bd.hi,
        "bd_rate_p": t_bd.p,
        "sign_p": sign_p,
    }


def _verdict(row: Any) -> str:
    """``fewer bits`` / ``more bits`` / ``undecided`` of one T5 row (:func:`t5_table`)."""
    verdict = "undecided"
    if row.bd_rate_significant:
        fewer = row.bd_rate_mean < 0
        against = row.dominated if fewer else row.dominates
        if against == 0:
            verdict = "fewer bits" if fewer else "more bits"
    if verdict == "undecided" and row.sign_significant:
        verdict = "fewer bits" if row.dominates + (row.bd_rate_mean < 0) > 0 else "more bits"
    return verdict


def _t5_readable(table: pd.DataFrame) -> pd.DataFrame:
    """T5's Markdown view: ten columns at most, the rest stays in the TSV."""
    if table.empty:
        return table
    out = pd.DataFrame(
        {
            "curve": [
                f"{m} {c} M{M}" + (f" (dominated, left out: {d})" if d else "")
                for m, c, M, d in zip(table["model"], table["curve"], table["M"],
                                      table["dominated_configs"], strict=True)
            ],
            "bits/entry": [
                f"{a:.3g}-{b:.3g}"
                for a, b in zip(
                    table["bits_per_entry_min"], table["bits_per_entry_max"], strict=True
                )
            ],
            "trajectories": [
                f"{o} of {n} overlap; {d} dominate, {e} dominated, {x} neither"
                for o, n, d, e, x in zip(
                    table["overlap"], table["trajectories"], table["dominates"],
                    table["dominated"], table["neither"], strict=True,
                )
            ],
        }
    )  # fmt: skip
    for part in ("mean", "lo", "hi"):
        out[f"bd_rate_{part}"] = table[f"bd_rate_{part}"]
    out["units"] = [f"{u} {d}" for u, d in zip(table["units"], table["design"], strict=True)]
    for col in ("bd_rate_p_holm", "sign_p_holm", "verdict"):
        out[col] = table[col]
    return out


def table_t5(paths, tsv, md, *, baseline: str, curves=None) -> pd.DataFrame:
    """Write T5 as TSV (every column) and Markdown (:func:`_t5_readable`)."""
    table = t5_table(paths, baseline=baseline, curves=curves)
    family = family_size(table, ["bd_rate", "sign"]) if len(table) else 0
    title = (
        f"T5: BD-rate against {baseline}'s curve (% uplink bits at equal test-loss "
        "increase, one-round study; negative = fewer bits; each curve through its undominated "
        "configurations, the dominated ones (another of the same curve has fewer bits and less "
        "loss) listed in T5.tsv; per trajectory, then mean [95% "
        "Student-t interval] over the design's units (warm starts, each the mean of its "
        "seeds) on the trajectories whose curves share a loss range; the others counted by "
        "dominance; sign_p: sign test of every trajectory's direction over the units; "
        f"family: these {family} tests (BD-rate and sign), Holm-adjusted, significant = "
        "adjusted p < 0.05; every column in T5.tsv)"
    )
    reporting.write_table(table, tsv, md, title=title, readable=_t5_readable(table))
    return table
