"""The hashes of a count sketch (Charikar et al. 2002) and the sketch operations on them.

A count sketch of x (d,) is a table S (r rows, c columns): row j adds ``s_j(i) x_i`` to column
``h_j(i)``, with bucket hashes ``h_j`` into 0..c-1 and sign hashes ``s_j`` in {-1, +1}. It is
linear, ``S(a) + S(b) = S(a + b)``, when both sketches use the same hashes. The estimate of
``x_i`` is the median over rows of ``s_j(i) S[j, h_j(i)]``; *unsketch* keeps the k entries of
largest estimated magnitude at their estimates.

Three hash families (``sketch_hash`` of a ``count_sketch`` spec), all rebuilt by the receiver
from a seed:

- ``"random"`` (default): fully random tables from a seeded CPU ``torch.Generator`` (they
  satisfy the pairwise / 4-wise independence the count sketch's bounds need);
- ``"polynomial"``: what FetchSGD's ``CSVec`` (which M22 ships) means to compute, in exact
  arithmetic: with six coefficients per row drawn uniformly in 0..p-1, p = 2^61 - 1 (the
  seeded generator), ``h_j(i) = ((a i + b) mod p) mod c`` (2-wise independent) and
  ``s_j(i) = 2 (((e i^3 + f i^2 + g i + h) mod p) mod 2) - 1`` (4-wise);
- ``"m22_slip"``: the same polynomials as ``CSVec`` evaluates them, in int64 that wraps
  around (a coefficient times i exceeds 2^63 for i >= 4), then the floor remainder mod p and
  c, with the coefficients CSVec draws after ``torch.random.manual_seed(42)`` (``seed`` is
  ignored: every sketch of a size gets the same hashes, as in M22). The wrapped products
  are far from uniform mod c: a row can leave most columns empty
  (``tests/compression/test_sketch.py``).

Shapes: ``buckets`` int64 (rows, d) in 0..columns-1; ``signs`` float64 (rows, d) in {-1, +1};
tables float64 (rows, columns).
"""

from __future__ import annotations

from functools import lru_cache

import torch

__all__ = ["HASH_KINDS", "MERSENNE_61", "M22_HASH_SEED", "SketchHash", "cached_hash"]

HASH_KINDS = ("random", "polynomial", "m22_slip")
MERSENNE_61 = 2**61 - 1
#: ``CSVec`` seeds torch's generator with 42 before drawing its hash coefficients.
M22_HASH_SEED = 42
_LOW31 = (1 << 31) - 1
_LOW30 = (1 << 30) - 1


def _mod_p(x: torch.Tensor) -> torch.Tensor:
    """x mod 2^61 - 1 for int64 0 <= x < 2^63."""
    x = (x & MERSENNE_61) + (x >> 61)  # 2^61 = 1 (mod p)
    return torch.where(x >= MERSENNE_61, x - MERSENNE_61, x)


def _mulmod(a: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """a t mod p exactly in int64, for 0 <= a < p and 0 <= t < 2^31 (no product overflows)."""
    a_hi, a_lo = a >> 31, a & _LOW31  # a = a_hi 2^31 + a_lo, a_hi < 2^30
    y = a_hi * t  # < 2^61
    # y 2^31 = y_hi 2^61 + y_lo 2^31 = y_hi + y_lo 2^31 (mod p), y = y_hi 2^30 + y_lo
    high = (y >> 30) + ((y & _LOW30) << 31)
    return _mod_p(_mod_p(high) + _mod_p(a_lo * t))


def _polynomial(coef: torch.Tensor, tokens: torch.Tensor, exact: bool) -> torch.Tensor:
    """Horner evaluation of ``coef[:, 0] t^(n-1) + ... + coef[:, -1]`` mod p, (rows, d).

    ``exact``: arithmetic mod p without overflow; else int64 products that wrap around, then
    the floor remainder mod p (CSVec's evaluation)."""
    acc = coef[:, :1].expand(-1, tokens.numel()).clone()
    for col in range(1, coef.shape[1]):
        if exact:
            acc = _mod_p(_mulmod(acc, tokens) + coef[:, col : col + 1])
        else:
            acc = acc * tokens + coef[:, col : col + 1]  # wraps around in int64
    return acc if exact else torch.remainder(acc, MERSENNE_61)


class SketchHash:
    """The hashes of a count sketch of d entries into ``rows`` x ``columns`` cells.

    ``kind``: one of :data:`HASH_KINDS` (module doc); ``seed`` draws the random tables or the
    polynomial coefficients (a CPU ``torch.Generator``), so the receiver rebuilds them.
    """

    def __init__(self, d: int, rows: int, columns: int, seed: int = 0, kind: str = "random"):
        if d < 1 or rows < 1 or columns < 1:
            raise ValueError(f"need d, rows and columns >= 1, got {d}, {rows}, {columns}")
        if kind not in HASH_KINDS:
            raise ValueError(f"sketch_hash must be one of {HASH_KINDS}, got {kind!r}")
        if kind != "random" and d >= 2**31:
            raise ValueError(f"polynomial hashes take d < 2^31 entries, got {d}")
        self.d, self.rows, self.columns, self.kind = int(d), int(rows), int(columns), kind
        if kind == "random":
            g = torch.Generator().manual_seed(int(seed))
            self.buckets = torch.randint(0, columns, (rows, d), generator=g)
            signs = torch.randint(0, 2, (rows, d), generator=g)
        else:
            g = torch.Generator().manual_seed(M22_HASH_SEED if kind == "m22_slip" else int(seed))
            coef = torch.randint(0, MERSENNE_61, (rows, 6), dtype=torch.int64, generator=g)
            tokens = torch.arange(d, dtype=torch.int64)[None, :]
            exact = kind == "polynomial"
            self.buckets = torch.remainder(_polynomial(coef[:, :2], tokens, exact), columns)
            signs = torch.remainder(_polynomial(coef[:, 2:], tokens, exact), 2)
        self.signs = signs.to(torch.float64) * 2 - 1
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

    def cells_of(self, indices: torch.Tensor) -> torch.Tensor:
        """Bool (rows, columns): the cells the entries ``indices`` (int64) hash to, in any row."""
        hit = torch.zeros(self.rows * self.columns, dtype=torch.bool)
        hit[self._flat[:, indices.cpu()].reshape(-1)] = True
        return hit.reshape(self.rows, self.columns)

    def occupied_columns(self) -> torch.Tensor:
        """Per row (rows,) int64: how many columns at least one entry hashes to."""
        hit = torch.zeros(self.rows, self.columns, dtype=torch.bool)
        hit.scatter_(1, self.buckets, True)
        return hit.sum(dim=1)


@lru_cache(maxsize=32)
def cached_hash(d: int, rows: int, columns: int, seed: int, kind: str = "random") -> SketchHash:
    """:class:`SketchHash` built once per (d, rows, columns, seed, kind)."""
    return SketchHash(d, rows, columns, seed, kind)
