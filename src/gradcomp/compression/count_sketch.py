"""Count sketch (Charikar et al. 2002) of a whole update, unsketched by the server: FetchSGD.

The sketch of a vector x (d,) is a table S (r rows, c columns): row j adds ``s_j(i) x_i`` to
column ``h_j(i)``, with bucket hashes ``h_j`` into 0..c-1 and sign hashes ``s_j`` in {-1, +1}
drawn from a seed both ends know (:class:`SketchHash`; fully random tables from a seeded
generator, which satisfy the pairwise independence the bounds need). It is linear:
``S(a) + S(b) = S(a + b)``. The estimate of ``x_i`` is the median over rows of
``s_j(i) S[j, h_j(i)]``; with ``c >= 3 / eps^2`` columns and ``r = O(log 1/delta)`` rows,
``|est_i - x_i| <= eps ||x||_2`` with probability at least ``1 - delta``. The server's
*unsketch* keeps the k entries of largest estimated magnitude at their estimates.

:class:`CountSketch` (kind ``count_sketch``, beside PowerSGD) follows FetchSGD (Rothchild et
al. 2020, Algorithm 1): one sketch of the whole update (``scope="update"``; the tensors with
more than ``min_entries`` entries, flattened and concatenated in the update's order, the
others sent raw at 32 bits), unsketched to the top k, with error accumulation in the sketch
domain when ``error_feedback``: ``S_e <- decay S_e + S(x)``, send ``S_e``; both ends unsketch
``D = TopK(U(S_e))``; ``S_e <- S_e - S(D)``. FetchSGD keeps ``S_e`` (and a momentum sketch)
at the server for the sum of all clients' sketches; here each user has its own ``S_e`` and
no momentum (the federated loop aggregates decompressed updates; local Adam carries the
momentum). The user keeps ``S_e`` and sends it (same bits as sending ``S(x)`` to a server
that adds its copy of ``S_e``); decompressing is then stateless. ``scope="tensor"`` sketches
each tensor on its own, as M22 (the follow-up's ``main.py``: ``CSVec`` with r = 5 rows and
``c = floor(d / 5)`` columns per tensor, k = the tensor's kept entries, no error feedback).

Size: ``rate`` R is the sketch's size in cells per 100 sketched entries: ``c = ceil(R d /
(100 r))`` columns per sketch of d entries (M22's per-tensor size is R = 100). k is
``ceil(topk d)`` per sketch. Rate parts: ``payload_fixed_bits = payload_huffman_bits =
32 r c`` per sketch (float32 cells, nothing entropy coded), ``side_bits`` 32 for the seed (once
per update), ``raw_bits`` 32 per raw entry; ``n_sent`` counts the cells and raw numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import torch

from gradcomp.compression.rates import FLOAT_BITS, RateBreakdown

__all__ = ["SKETCH_SCOPES", "CountSketch", "SketchHash"]

SKETCH_SCOPES = ("update", "tensor")
SEED_BITS = 32


class SketchHash:
    """The hashes of a count sketch of d entries into ``rows`` x ``columns`` cells.

    ``buckets`` int64 (rows, d) in 0..columns-1 and ``signs`` float64 (rows, d) in {-1, +1},
    drawn from a CPU ``torch.Generator`` seeded with ``seed``: the receiver rebuilds them.
    """

    def __init__(self, d: int, rows: int, columns: int, seed: int = 0):
        if d < 1 or rows < 1 or columns < 1:
            raise ValueError(f"need d, rows and columns >= 1, got {d}, {rows}, {columns}")
        self.d, self.rows, self.columns = int(d), int(rows), int(columns)
        g = torch.Generator().manual_seed(int(seed))
        self.buckets = torch.randint(0, columns, (rows, d), generator=g)
        self.signs = torch.randint(0, 2, (rows, d), generator=g).to(torch.float64) * 2 - 1
        self._flat = self.buckets + columns * torch.arange(rows)[:, None]

    def sketch(self, x: torch.Tensor) -> torch.Tensor:
        """Table (rows, columns) float64 of ``x`` (d,): ``S[j, h_j(i)] += s_j(i) x_i``."""
        x = x.to(torch.float64).reshape(-1).cpu()
        if x.numel() != self.d:
            raise ValueError(f"sketch of {self.d} entries got {x.numel()}")
        table = torch.zeros(self.rows * self.columns, dtype=torch.float64)
        table.index_add_(0, self._flat.reshape(-1), (self.signs * x).reshape(-1))
        return table.reshape(self.rows, self.columns)

    def estimate(self, table: torch.Tensor) -> torch.Tensor:
        """Median over rows of ``s_j(i) S[j, h_j(i)]`` (d,) float64 (mean of the two middle
        rows when ``rows`` is even)."""
        t = table.to(torch.float64).cpu().reshape(-1)
        per_row = self.signs * t[self._flat]
        ordered = per_row.sort(dim=0).values
        mid = self.rows // 2
        return ordered[mid] if self.rows % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])

    def unsketch(self, table: torch.Tensor, k: int) -> torch.Tensor:
        """The k entries of largest estimated magnitude at their estimates, zeros elsewhere."""
        est = self.estimate(table)
        out = torch.zeros_like(est)
        k = min(int(k), self.d)
        if k > 0:
            top = est.abs().topk(k).indices
            out[top] = est[top]
        return out


@lru_cache(maxsize=32)
def _hash(d: int, rows: int, columns: int, seed: int) -> SketchHash:
    return SketchHash(d, rows, columns, seed)


@dataclass
class Sketched:
    """One sketch: float32 ``table`` (rows, columns), the ``names`` it holds (in order), the
    entries ``d``, the hash's ``seed`` (from the shared seed, not sent) and ``k``."""

    table: torch.Tensor
    names: tuple[str, ...]
    d: int
    seed: int
    k: int


class CountSketch:
    """``count_sketch``: see the module doc.

    compress(update) -> (payload: {"sketches": [Sketched], "raw": name -> float32 tensor},
    ctx: name -> (shape, dtype, device)); decompress -> the update's tensors; rate ->
    :class:`RateBreakdown`.
    """

    kind = "count_sketch"
    #: spec keys this kind takes besides name (``rate``: cells per 100 sketched entries)
    spec_keys = ("rate", "error_feedback", "memory_decay", "seed")
    #: spec options (key -> default); :mod:`~gradcomp.compression.specs` checks them
    options: ClassVar[dict[str, object]] = {
        "rows": 5,
        "topk": 0.452,
        "min_entries": 1000,
        "sketch_scope": "update",
    }
    max_rate = 10_000

    def __init__(
        self,
        rate: int,
        *,
        rows: int = 5,
        topk: float = 0.452,
        min_entries: int = 1000,
        scope: str = "update",
        error_feedback: bool = False,
        memory_decay: float = 1.0,
        seed: int = 0,
    ):
        if rate < 1 or rows < 1 or not 0 < topk <= 1 or min_entries < 0:
            raise ValueError(f"bad count sketch: rate {rate}, rows {rows}, topk {topk}")
        if scope not in SKETCH_SCOPES:
            raise ValueError(f"sketch_scope must be one of {SKETCH_SCOPES}, got {scope!r}")
        self.percent, self.rows, self.topk = int(rate), int(rows), float(topk)
        self.min_entries, self.scope = int(min_entries), scope
        self.error_feedback, self.decay, self.seed = bool(error_feedback), memory_decay, seed
        self.errors: dict[tuple[str, ...], torch.Tensor] = {}  # S_e per sketch

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        """Why ``value`` is not valid for option ``key``, or None."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == "rows" and not (number and value == int(value) and value >= 1):
            return f"must be an integer >= 1 (sketch rows), got {value!r}"
        if key == "topk" and not (number and 0 < value <= 1):
            return f"must be a fraction in (0, 1] (entries unsketched), got {value!r}"
        if key == "min_entries" and not (number and value == int(value) and value >= 0):
            return f"must be an integer >= 0, got {value!r}"
        if key == "sketch_scope" and value not in SKETCH_SCOPES:
            return f"must be one of {SKETCH_SCOPES}, got {value!r}"
        return None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> CountSketch:
        return cls(
            spec["rate"],
            rows=int(spec["rows"]),
            topk=float(spec["topk"]),
            min_entries=int(spec["min_entries"]),
            scope=spec["sketch_scope"],
            error_feedback=spec["error_feedback"],
            memory_decay=spec["memory_decay"],
            seed=spec["seed"],
        )

    def columns(self, d: int) -> int:
        """Columns of a sketch of d entries: ``ceil(rate d / (100 rows))``."""
        return max(1, math.ceil(self.percent * d / (100 * self.rows)))

    def seed_of(self, index: int) -> int:
        """The hash seed of the ``index``-th sketch of an update (both ends derive it)."""
        return self.seed * 1_000_003 + index

    def _groups(self, update: Mapping[str, torch.Tensor]) -> list[tuple[str, ...]]:
        big = [n for n, t in update.items() if t.numel() > self.min_entries]
        if self.scope == "tensor":
            return [(n,) for n in big]
        return [tuple(big)] if big else []

    def compress(self, update: Mapping[str, torch.Tensor]):
        ctx = {n: (tuple(t.shape), t.dtype, t.device) for n, t in update.items()}
        groups = self._groups(update)
        grouped = {n for g in groups for n in g}
        raw = {
            n: t.detach().to(torch.float32).clone() for n, t in update.items() if n not in grouped
        }
        sketches = []
        for index, names in enumerate(groups):
            x = torch.cat([update[n].detach().reshape(-1).to("cpu", torch.float64) for n in names])
            h = _hash(x.numel(), self.rows, self.columns(x.numel()), self.seed_of(index))
            k = math.ceil(self.topk * x.numel())
            table = h.sketch(x)
            if self.error_feedback:
                if names in self.errors:
                    table = table + self.decay * self.errors[names]
                table = table.to(torch.float32).to(torch.float64)  # what is sent
                self.errors[names] = table - h.sketch(h.unsketch(table, k))
            sketches.append(
                Sketched(table.to(torch.float32), names, x.numel(), self.seed_of(index), k)
            )
        return {"sketches": sketches, "raw": raw}, ctx

    def decompress(self, payload, ctx) -> dict[str, torch.Tensor]:
        out = {n: t.to(ctx[n][2], ctx[n][1]) for n, t in payload["raw"].items()}
        for s in payload["sketches"]:
            flat, start = _hash(s.d, *s.table.shape, s.seed).unsketch(s.table, s.k), 0
            for n in s.names:
                shape, dtype, device = ctx[n]
                size = math.prod(shape)
                out[n] = flat[start : start + size].reshape(shape).to(device, dtype)
                start += size
        return {n: out[n] for n in ctx}

    def rate(self, payload, ctx) -> RateBreakdown:
        out = RateBreakdown()
        for s in payload["sketches"]:
            cells = s.table.numel()
            out += RateBreakdown(
                payload_fixed_bits=FLOAT_BITS * cells,
                payload_huffman_bits=FLOAT_BITS * cells,
                n_entries=s.d,
                n_sent=cells,
            )
        for t in payload["raw"].values():
            out += RateBreakdown(
                raw_bits=FLOAT_BITS * t.numel(), n_entries=t.numel(), n_sent=t.numel()
            )
        if payload["sketches"]:
            out += RateBreakdown(side_bits=SEED_BITS)
        return out
