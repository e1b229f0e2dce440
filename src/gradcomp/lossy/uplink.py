"""The server's side of one round of paper Y: what a user sends and what the server makes of it.

:func:`model_update` forms ``delta_u = w_u - w_c`` over every floating-point state entry
(trainable parameters *and* BatchNorm running statistics, so that the server model stays
consistent; integer buffers are not sent); :func:`send` puts one update through a user's
compressor, encodes it to bytes (:mod:`gradcomp.wire`), decodes them as the
server does, from the bytes alone, and counts its uplink bits; :func:`kept_rows` gives the
share of each tensor's entries that were sent (M22's per-layer kept fractions,
``model_info/``); :func:`aggregate` is FedAvg, ``w <- w_c + sum_u (n_u / n) delta_hat_u``.

Bits in the rows (:data:`UPLINK_COLUMNS`): ``bits_coded`` is what the figures, tables and
verdicts use: 8 x the bytes sent when ``bits_source`` is ``bytes``; for an ideal channel
(``ideal``: its values travel as a stand-in) and a compressor without a byte format
(``self-reported``: a user's class without ``to_bytes`` / ``from_bytes``, or a compressor
given without a receiver) it is the accounted total. ``bits_accounted`` is the by-part
accounting with the entropy code (:class:`~gradcomp.compression.rates.RateBreakdown`, whose
parts are the other columns) and ``bits_fixed`` its fixed-width total.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from gradcomp.compression.inputs import checked_update
from gradcomp.compression.protocol import Compressor
from gradcomp.compression.rates import RATE_FIELDS, RateBreakdown
from gradcomp.wire import (
    Receiver,
    UpdateLayout,
    bits_source,
    check_same_bits,
    encode_update,
)

__all__ = [
    "KEPT_COLUMNS",
    "UPLINK_COLUMNS",
    "Compressor",
    "Sent",
    "aggregate",
    "kept_masks",
    "kept_rows",
    "model_update",
    "send",
    "update_snapshot",
]

#: Columns of the uplink table (one row per user and round).
UPLINK_COLUMNS = (
    "round", "user", "n_train", *RATE_FIELDS, "bits_coded", "bits_fixed", "bits_accounted",
    "bits_source",
)  # fmt: skip
#: Values of ``bits_source``: bytes a receiver decoded, an ideal channel's rate, or the
#: compressor's own accounting.
BITS_SOURCES = ("bytes", "ideal", "self-reported")
#: Columns of the kept table (one row per round, user and update tensor): the tensor's
#: ``entries``, how many of them were ``kept`` (sent) and the ``fraction`` kept / entries.
KEPT_COLUMNS = ("round", "user", "tensor", "entries", "kept", "fraction")


def model_update(
    local: Mapping[str, torch.Tensor], global_state: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``local - global`` for every floating-point state entry, in state-dict order.

    Tensors are float32 (or the entry's dtype) on the CPU in standard
    (contiguous) layout with the entry's shape; integer entries are left out.
    """
    return {
        name: (local[name] - g).contiguous()
        for name, g in global_state.items()
        if g.is_floating_point()
    }


def aggregate(
    global_state: Mapping[str, torch.Tensor],
    updates: Sequence[Mapping[str, torch.Tensor]],
    n_train: Sequence[int],
) -> dict[str, torch.Tensor]:
    """FedAvg: ``w_c + sum_u (n_u / n) delta_hat_u`` per floating-point entry.

    The weighted sum is accumulated in float64 and rounded once to the
    entry's dtype; entries absent from the updates (integer buffers) are
    copied from ``global_state``.
    """
    total = sum(n_train)
    out: dict[str, torch.Tensor] = {}
    for name, g in global_state.items():
        if name not in updates[0]:
            out[name] = g.clone()
            continue
        acc = g.to(torch.float64)
        for update, n_u in zip(updates, n_train, strict=True):
            acc = acc + (n_u / total) * update[name].to(torch.float64)
        out[name] = acc.to(g.dtype)
    return out


def _check_reconstruction(
    user: int, update: Mapping[str, torch.Tensor], recon: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    missing = [n for n in update if n not in recon]
    if missing:
        raise KeyError(f"user {user}'s decompressed update lacks {', '.join(missing[:5])}")
    out = {}
    for name, t in update.items():
        r = recon[name]
        if r.shape != t.shape:
            raise ValueError(
                f"user {user}: decompressed {name} has shape {tuple(r.shape)}, "
                f"expected {tuple(t.shape)}"
            )
        out[name] = r.detach().to("cpu")
    return out


def _rate_row(
    rnd: int, user: int, n_train: int, rate: RateBreakdown, source: str, n_bytes: int | None
) -> dict[str, int | str]:
    row: dict[str, int | str] = {"round": rnd, "user": user, "n_train": n_train}
    row.update({f: int(getattr(rate, f)) for f in RATE_FIELDS})
    row["bits_accounted"] = int(rate.total(True))
    row["bits_fixed"] = int(rate.total(False))
    row["bits_coded"] = (
        8 * n_bytes if source == "bytes" and n_bytes is not None else row["bits_accounted"]
    )
    row["bits_source"] = source
    return row


@dataclass
class Sent:
    """One user's update after the uplink: ``recon`` (name -> tensor on the CPU), the uplink
    table ``row`` and the entries the compressor ``kept`` (name -> bool, or None)."""

    recon: dict[str, torch.Tensor]
    row: dict[str, int | str]
    kept: dict[str, torch.Tensor] | None


def send(
    compressor: Compressor,
    update: dict[str, torch.Tensor],
    *,
    rnd: int,
    user: int,
    n_train: int,
    receiver: Callable[[UpdateLayout], Receiver] | None = None,
) -> Sent:
    """Compress ``update`` with ``compressor`` and count its bits (module doc). With a
    ``receiver`` (layout -> the server's :class:`~gradcomp.wire.update.Receiver` of this
    update) and a compressor with a byte format, the update is encoded to bytes, the receiver
    decodes them, and a decode that differs in any bit from the sender's own reconstruction
    raises :class:`~gradcomp.wire.update.DecodeMismatchError`; ``recon`` is the decode."""
    checked_update(update, "the uplink")  # a user's class gets the built-ins' check too
    payload, ctx = compressor.compress(update)
    recon = _check_reconstruction(user, update, compressor.decompress(payload, ctx))
    source = bits_source(compressor) if receiver is not None else "self-reported"
    n_bytes = None
    if source != "self-reported" and receiver is not None:
        data = encode_update(compressor, payload, ctx)
        decoded = receiver(UpdateLayout.of(update)).decode(data)
        check_same_bits(recon, decoded, f"user {user}, round {rnd}")
        recon, n_bytes = decoded, len(data)
    row = _rate_row(rnd, user, n_train, compressor.rate(payload, ctx), source, n_bytes)
    kept = getattr(compressor, "kept_masks", None)
    return Sent(recon, row, kept(payload, ctx) if kept is not None else None)


def kept_masks(
    recon: Mapping[str, torch.Tensor], kept: Mapping[str, torch.Tensor] | None
) -> dict[str, torch.Tensor]:
    """Name -> bool mask (the entry's shape, CPU) of the sent entries: the compressor's
    ``kept`` masks, or, from a compressor without them, the non-zero reconstruction."""
    return {
        n: (kept[n] if kept is not None else r != 0).detach().to("cpu").bool()
        for n, r in recon.items()
    }


def kept_rows(
    rnd: int, user: int, masks: Mapping[str, torch.Tensor]
) -> list[dict[str, int | float | str]]:
    """One :data:`KEPT_COLUMNS` row per tensor of :func:`kept_masks`, in the update's order."""
    rows: list[dict[str, int | float | str]] = []
    for name, mask in masks.items():
        entries, n_kept = mask.numel(), int(mask.sum())
        fraction = n_kept / entries if entries else float("nan")
        rows.append(
            {"round": rnd, "user": user, "tensor": name, "entries": entries, "kept": n_kept,
             "fraction": fraction}
        )  # fmt: skip
    return rows


def update_snapshot(
    update: Mapping[str, torch.Tensor],
    recon: Mapping[str, torch.Tensor],
    kept: Mapping[str, torch.Tensor] | None,
) -> dict[str, dict[str, torch.Tensor]]:
    """``{"before", "after", "kept"}`` of one update (float32, float32, bool; CPU, the
    entries' shapes). Without masks from the compressor, an entry counts as kept when its
    reconstruction is non-zero (:func:`kept_masks`)."""
    masks = kept_masks({n: recon[n] for n in update}, kept)
    return {
        "before": {n: t.detach().to("cpu", torch.float32).clone() for n, t in update.items()},
        "after": {n: recon[n].detach().to("cpu", torch.float32).clone() for n in update},
        "kept": {n: masks[n].clone() for n in update},
    }
