"""PowerSGD's update in the uplink's byte format (:mod:`gradcomp.wire`): written by
:func:`encode_low_rank`, read by :class:`LowRankReceiver`.

One record per tensor: P (n x r', row-major) then Q (m x r') as float32, or the raw tensor's
entries as float32; the receiver knows r' from the spec's rank and the shape
(:meth:`~gradcomp.compression.powersgd.PowerSGD.matrix_rank`), and needs no state: P and Q
are both sent. NaN or infinite numbers are refused
(:class:`~gradcomp.wire.records.NonFiniteDecodeError`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from gradcomp.coding.fields import FieldWriter
from gradcomp.compression.powersgd import LowRank, PowerSGD
from gradcomp.wire.records import (
    Agreed,
    UpdateLayout,
    check_finite,
    read_records,
    sender_agreed,
    write_records,
)

__all__ = ["LowRankReceiver", "encode_low_rank"]


def encode_low_rank(compressor: PowerSGD, payload: Mapping[str, Any], ctx) -> bytes:
    """The bytes of a :class:`~gradcomp.compression.powersgd.PowerSGD`'s payload (see the
    module doc)."""
    layout = UpdateLayout.from_items((n, c[0], c[1]) for n, c in ctx.items())
    records = []
    for p in payload.values():
        w = FieldWriter()
        for part in (p.raw,) if p.raw is not None else (p.p, p.q):
            w.array(part.detach().cpu().reshape(-1).numpy(), "f4")
        records.append(w.getvalue())
    return write_records(compressor, layout, records, sender_agreed(compressor))


class LowRankReceiver:
    """Decodes PowerSGD's bytes for updates of ``layout``; ``ranks``: a fresh
    :class:`~gradcomp.compression.powersgd.PowerSGD` of the spec's rank (its
    :meth:`~gradcomp.compression.powersgd.PowerSGD.matrix_rank` only)."""

    def __init__(self, ranks: PowerSGD, layout: UpdateLayout, agreed: Agreed):
        self.ranks, self.layout, self.agreed = ranks, layout, agreed

    @classmethod
    def of(cls, spec: Mapping[str, Any], layout: UpdateLayout, *, rnd: int) -> LowRankReceiver:
        """The receiver of a spec's updates of ``layout`` (it needs the rank alone)."""
        return cls(PowerSGD(spec["rate"]), layout, Agreed.of(spec, rnd))

    def decode(self, data) -> dict[str, torch.Tensor]:
        wheres = [f"tensor {n!r}" for n in self.layout.names]
        out = {}
        for r, (name, shape, dtype) in zip(
            read_records(data, PowerSGD, self.layout, wheres, self.agreed),
            self.layout,
            strict=True,
        ):
            rank = self.ranks.matrix_rank(shape)
            if rank:
                n, m = shape[0], math.prod(shape[1:])
                p = torch.from_numpy(r.array("f4", n * rank, "P")).reshape(n, rank)
                q = torch.from_numpy(r.array("f4", m * rank, "Q")).reshape(m, rank)
                sent = LowRank(p=p, q=q)
            else:
                sent = LowRank(raw=torch.from_numpy(r.array("f4", math.prod(shape), "values")))
            r.finish()
            for field, part in (("P", sent.p), ("Q", sent.q), ("values", sent.raw)):
                if part is not None:
                    check_finite(part, r.where, field)
            out[name] = sent.matrix().reshape(shape).to(dtype)
            check_finite(out[name], r.where)  # P Q^T beyond the dtype's range
        return out
