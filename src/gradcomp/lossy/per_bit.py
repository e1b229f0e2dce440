"""Paper Y's per-bit accuracy: the accuracy a federated run gains per uplink bit.

Per-bit accuracy after round t = (test accuracy at t - test accuracy of the initial model) /
cumulative uplink bits of all users up to t; "coded" charges the Huffman-coded payload,
"fixed" the fixed-rate one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gradcomp.lossy.run_files import RUN_IDENTITY

__all__ = ["per_bit_accuracy", "read_rounds"]


def per_bit_accuracy(rows: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Paper Y's per-bit accuracy of each round.

    ``(test_acc[t] - test_acc[0]) / cumulative_bits[t]``, the accuracy gained
    since the initial model (round 0) per uplink bit of all users up to round
    ``t``, for the coded (``per_bit_acc_coded``) and fixed-rate
    (``per_bit_acc_fixed``) totals; in accuracy fraction per bit, NaN where no
    bit was sent yet. ``rows`` are round rows (:attr:`FederatedResult.rounds`
    or the rounds TSV read back) and must include round 0. Returns the rows
    sorted by round with the two columns added.
    """
    df = pd.DataFrame(rows).sort_values("round").reset_index(drop=True)
    base = df.loc[df["round"] == 0, "test_acc"]
    if base.empty:
        raise ValueError("per_bit_accuracy needs the round-0 row (the initial model's accuracy)")
    gain = df["test_acc"] - float(base.iloc[0])
    for kind in ("coded", "fixed"):
        bits = df[f"cumulative_bits_{kind}"].astype("float64")
        df[f"per_bit_acc_{kind}"] = (gain / bits.where(bits > 0)).astype("float64")
    return df


def read_rounds(paths: Sequence[str | Path], quantizers: dict[str, str]) -> pd.DataFrame:
    """All runs' rounds (with their identity columns, :data:`RUN_IDENTITY`) with per-bit
    accuracy and the ``quantizer`` column.

    ``quantizers`` maps compressor name -> quantizer kind (from the config).
    """
    frames = []
    for path in paths:
        rows = pd.read_csv(path, sep="\t")
        missing = [c for c in RUN_IDENTITY if c not in rows.columns]
        if missing:
            raise ValueError(f"{path} is not a federated run's rounds table (no {missing})")
        rows = per_bit_accuracy(rows)
        rows["quantizer"] = rows["compressor"].map(lambda c: quantizers.get(c, c))
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)
