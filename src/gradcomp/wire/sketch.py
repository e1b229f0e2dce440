"""A count sketch's update in the uplink's byte format (:mod:`gradcomp.wire`).

Records, in order: one per sketch (:meth:`~gradcomp.compression.count_sketch.CountSketch.groups`
of the layout), then one per raw tensor (the others, in the layout's order). A sketch's body:
with ``sketch_topk``, k as a u32 (the entries it is unsketched to, which then depend on the
data), then its ``rows x columns`` cells as float32, row-major. A raw tensor's body: its
entries as float32. The receiver rebuilds each sketch's hashes from the user's seed
(:meth:`~gradcomp.compression.count_sketch.CountSketch.hash_of`): the seed is not sent. NaN or
infinite cells or values are refused
(:class:`~gradcomp.wire.records.NonFiniteDecodeError`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from gradcomp.coding.fields import FieldWriter
from gradcomp.compression.count_sketch import CountSketch
from gradcomp.wire.records import (
    Agreed,
    UpdateLayout,
    check_finite,
    read_records,
    sender_agreed,
    write_records,
)

__all__ = ["SketchReceiver", "encode_sketches"]


def _layout(ctx: Mapping[str, Any]) -> UpdateLayout:
    return UpdateLayout.from_items((n, c[0], c[1]) for n, c in ctx.items())


def encode_sketches(sketch: Any, payload: Mapping[str, Any], ctx) -> bytes:
    """The bytes of a :class:`~gradcomp.compression.count_sketch.CountSketch`'s payload (see
    the module doc)."""
    records = []
    for s in payload["sketches"]:
        w = FieldWriter()
        if sketch.topk is not None:
            w.u32(s.k)
        w.array(s.table.detach().cpu().reshape(-1).numpy(), "f4")
        records.append(w.getvalue())
    for t in payload["raw"].values():
        w = FieldWriter()
        w.array(t.detach().cpu().reshape(-1).numpy(), "f4")
        records.append(w.getvalue())
    return write_records(sketch, _layout(ctx), records, sender_agreed(sketch))


class SketchReceiver:
    """Decodes a count sketch's bytes for updates of ``layout``; ``sketch``: a fresh
    :class:`~gradcomp.compression.count_sketch.CountSketch` of the spec, with the user's seed
    (its sizes and hashes only)."""

    def __init__(self, sketch: Any, layout: UpdateLayout, agreed: Agreed):
        self.sketch, self.layout, self.agreed = sketch, layout, agreed
        sizes = {n: math.prod(s) for n, s, _ in layout}
        self.groups = sketch.groups(sizes)
        for names in self.groups:  # before any hash is built
            sketch.check_size(sum(sizes[n] for n in names))
        grouped = {n for g in self.groups for n in g}
        self.raw = [n for n in layout.names if n not in grouped]
        self.sizes = sizes

    @classmethod
    def of(cls, spec: Mapping[str, Any], layout: UpdateLayout, *, rnd: int) -> SketchReceiver:
        """The receiver of a spec's updates of ``layout`` (its hashes from the spec's seed)."""
        return cls(CountSketch.from_spec(spec), layout, Agreed.of(spec, rnd))

    def decode(self, data) -> dict[str, torch.Tensor]:
        wheres = [f"sketch {i} ({', '.join(g)})" for i, g in enumerate(self.groups)]
        wheres += [f"tensor {n!r}" for n in self.raw]
        readers = read_records(data, self.sketch, self.layout, wheres, self.agreed)
        flat: dict[str, torch.Tensor] = {}
        for index, (names, r) in enumerate(zip(self.groups, readers, strict=False)):
            d = sum(self.sizes[n] for n in names)
            k = self.sketch.k_of(d)
            if self.sketch.topk is not None:
                sent_k = r.u32("k")
                if sent_k > k:
                    raise r.error("k", f"{sent_k} entries from a sketch that recovers at most {k}")
                k = sent_k
            h = self.sketch.hash_of(d, index)
            cells = r.array("f4", h.rows * h.columns, "cells")
            r.finish()
            check_finite(cells, r.where, "cells")
            table = torch.from_numpy(cells).reshape(h.rows, h.columns)
            values, start = h.unsketch(table, k), 0
            for n in names:
                flat[n] = values[start : start + self.sizes[n]]
                start += self.sizes[n]
        for n, r in zip(self.raw, readers[len(self.groups) :], strict=True):
            flat[n] = torch.from_numpy(r.array("f4", self.sizes[n], "values"))
            r.finish()
        out = {n: flat[n].reshape(s).to(d) for n, s, d in self.layout}
        for n, t in out.items():
            check_finite(t, f"tensor {n!r}")
        return out
