"""``ecsq``: the entropy-constrained scalar quantizer of a fitted law under the ``|g|^M``
weighted distortion (:func:`gradcomp.compression.ecsq_law.ecsq_for_law`), designed for the
bits its indices cost under the code that sends them.

Like ``lloyd`` (its default ``fit_to="update"``), per tensor the family is fitted with loc 0
to the whole update and the design is for its law beyond tau, the smallest kept magnitude;
the side information is the same float32 values (the shape, scale and tau), and the receiver
designs the same levels from them. The design is the best lattice of thresholds in
``|g|^(1 + M/2)`` (its zero cell placed by the search) whose code spends at most
``target_bits`` per sent value (any real number from :data:`MIN_TARGET_BITS` to 8); the
spec's ``rate`` is the target rounded up, the label of its run, as ``uniform``'s ``levels``
gives its rate. The values are labelled by the design's thresholds, not by their nearest
level (at low rate the cell around zero is wider than its neighbours' half-gaps).

The code: up to :data:`ADAPTIVE_MAX_BITS` the design is for the cells' entropy and the
indices go by the adaptive binary arithmetic code
(:class:`~gradcomp.coding.adaptive_index.AdaptiveIndexCode`: no code table, below one bit
per value: a dead-zone design whose zero cell holds most values); above it, for the mean
length of the Huffman code of the cells' probabilities and the Huffman code with its table
(a Huffman code spends at least a bit on each value; above 1.5 bits its loss to the entropy
is small and its table pays off in speed).

The alphabet is the design's: as many levels as its lattice needs to reach the law's tail
(up to :data:`~gradcomp.compression.ecsq_law.MAX_LEVELS`; a cap of 2^(R+2) levels cost
0.3-1 bit at 3-5 bits on heavy tails), and the code covers them, at least
:meth:`ECSQQuantizer.n_symbols`. A Huffman table's cost grows with it (its width in bits per
level: GenNorm beta 1, M = 2: about 200 levels at 2 bits, 1,000 at 4).

The design's rate is that of the law; what is sent is counted as for every kind: the
code of the tensor's own indices (with the Huffman table). A design costs 0.1-2 s on the
CPU (a few hundred closed-form evaluations of the law's cells); designs are kept, so the
receiver in the same process and repeated laws do not pay twice.

>>> import torch
>>> g = torch.distributions.Laplace(0.0, 1e-3).sample((5000,)).double()
>>> q = ECSQQuantizer(2, "laplace", M=0.0, target_bits=1.5)
>>> sent = q.encode(g, "w", full=g)
>>> int(sent.indices.max()) < sent.levels.size <= MAX_LEVELS
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from gradcomp.coding.adaptive_index import AdaptiveIndexCode
from gradcomp.coding.huffman import HuffmanCode
from gradcomp.compression.ecsq_law import MAX_LEVELS, ecsq_for_law
from gradcomp.compression.ecsq_result import Lengths
from gradcomp.compression.lloyd_quantizer import LloydQuantizer

__all__ = ["ADAPTIVE_MAX_BITS", "MIN_TARGET_BITS", "ECSQQuantizer", "ecsq_levels"]

#: Up to this target (bits per value) the design is for the cells' entropy and the indices
#: go by the adaptive arithmetic code; above it, for and by the Huffman code.
ADAPTIVE_MAX_BITS = 1.5
#: The least target: the adaptive code spends 0.003-0.015 bits per value over the indices'
#: entropy (its counters' learning and 12-bit probability floor, measured on 50,000
#: values), a fifth of the target or more below 0.05 bits, where nearly every value is in
#: the zero cell and the spent bits would no longer follow the target.
MIN_TARGET_BITS = 0.05


@lru_cache(maxsize=1024)
def ecsq_levels(
    family: str, params: tuple, M: float, tau: float, target_bits: float, max_levels: int,
    lengths: Lengths = "huffman",
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(levels (L,), thresholds (L - 1,)), sorted, read only, of the design of the law
    ``family`` with scipy ``params`` (a tuple of items) beyond ``tau`` constrained in
    ``lengths`` (the Huffman code's, or the entropy)."""
    got = ecsq_for_law(family, dict(params), M=M, rate=target_bits, lengths=lengths,
                       tau=tau, max_levels=max_levels)  # fmt: skip
    levels, thresholds = got.levels.copy(), got.thresholds.copy()
    levels.setflags(write=False)
    thresholds.setflags(write=False)
    return levels, thresholds


class ECSQQuantizer(LloydQuantizer):
    """ECSQ of a fitted law at ``target_bits`` coded bits per value (default ``rate``).

    Beyond its format (an entry whose reconstruction would be NaN or infinite: side values
    or levels beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "ecsq"
    wire_code = 12  # its byte in the wire's header: never reused
    title = "entropy-constrained"
    nearest_labels = False
    min_rate, max_rate = 1, 8
    min_target_bits = MIN_TARGET_BITS
    lloyd_fits = ("update",)
    options: ClassVar[dict[str, object]] = {"target_bits": None}

    def __init__(
        self,
        rate: int,
        family: str = "gennorm",
        M: float = 0.0,
        *,
        target_bits: float | None = None,
        fit_fn: Callable[..., Any] | None = None,
        seed: int = 0,
    ):
        super().__init__(rate, family, M, fit_fn=fit_fn, seed=seed)
        self.target_bits = float(rate if target_bits is None else target_bits)

    @classmethod
    def from_spec(cls, spec, *, fit_fn=None, **kwargs):
        return cls(spec["rate"], spec["family"], spec["M"], target_bits=spec.get("target_bits"),
                   fit_fn=fit_fn, seed=spec.get("seed") or 0)  # fmt: skip

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        """Why ``value`` is not a valid ``target_bits`` (None: the rate), or None."""
        return cls.check_target(value, cls.min_target_bits, cls.max_rate)

    @staticmethod
    def check_target(value: object, lo: float, hi: float) -> str | None:
        """Why ``value`` is not a target of ``lo..hi`` bits per value (None: the rate)."""
        if value is None:
            return None
        number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, bool
        )  # specs.is_number, which this module cannot import (specs imports the registry)
        if not (number and lo <= float(value) <= hi):  # type: ignore[arg-type]
            return f"must be a number of bits per value in {lo:g}..{hi:g}, got {value!r}"
        return None

    @classmethod
    def check_together(cls, spec) -> tuple[str, str] | None:
        """The rate is the target rounded up; the design is for the code of the indices and
        the update's law (no ``huffman: false``, ``lloyd_fit: survivors`` or ``slip``)."""
        if not spec["huffman"]:
            return "huffman", "ecsq is designed for its entropy-coded indices: huffman must be true"
        if spec["lloyd_fit"] != "update":
            return "lloyd_fit", "ecsq designs for the update's law beyond tau only ('update')"
        if spec["slip"]:
            return "slip", "the authors' slip is a Lloyd design; ecsq has none"
        target = spec.get("target_bits")
        if target is not None and spec["rate"] != max(1, math.ceil(target)):
            label = max(1, math.ceil(target))
            return "rate", f"target_bits {target} is labelled by rate {label} (its ceiling)"
        return None

    @property
    def n_levels(self) -> int:
        return self.n_symbols()

    @property
    def adaptive(self) -> bool:
        """Whether the indices go by the adaptive code (the target at most
        :data:`ADAPTIVE_MAX_BITS`), the design for the entropy."""
        return self.target_bits <= ADAPTIVE_MAX_BITS

    def entropy_coder(self, counts: np.ndarray) -> AdaptiveIndexCode | HuffmanCode:
        """The code of a tensor's indices (``counts`` over its alphabet, :meth:`table_size`
        of its levels): the adaptive code of that alphabet, or the Huffman code of the
        counts."""
        if self.adaptive:
            return AdaptiveIndexCode(np.size(counts))
        return HuffmanCode.from_pmf(counts)

    def known_code(self, n_levels: int) -> AdaptiveIndexCode | None:
        """The adaptive code of the alphabet of ``n_levels`` levels (no table), or None."""
        return AdaptiveIndexCode(self.table_size(n_levels)) if self.adaptive else None

    def n_symbols(self) -> int:
        """The least alphabet of the code table: 2^(R+2)."""
        return 2 ** (self.rate + 2)

    def table_size(self, n_levels: int) -> int:
        """The design's levels, when more than :meth:`n_symbols`, widen the code table."""
        return max(self.n_symbols(), n_levels)

    def _design_ahead(self, sides: list[dict[str, float]]) -> None:
        """Nothing: each tensor's design is kept by :func:`ecsq_levels`."""

    def _designed(self, side: dict[str, float], name: str, step: int):
        params, tau = self._law(side)
        lengths: Lengths = "entropy" if self.adaptive else "huffman"
        levels, thresholds = ecsq_levels(self.family, tuple(params.items()), self.M, tau,
                                         self.target_bits, MAX_LEVELS, lengths)  # fmt: skip
        if not (np.all(np.isfinite(levels)) and np.all(np.isfinite(thresholds))):
            raise FloatingPointError(f"non-finite ECSQ design {levels}")
        return levels, thresholds
