"""``ecsq``: the entropy-constrained scalar quantizer of a fitted law under the ``|g|^M``
weighted distortion (:mod:`gradcomp.quantization.ecsq`), designed for the bits its indices
cost under the Huffman code that sends them.

Like ``lloyd`` (its default ``fit_to="update"``), per tensor the family is fitted with loc 0
to the whole update and the design is for its law beyond tau, the smallest kept magnitude;
the side information is the same float32 values (the shape, scale and tau), and the receiver
designs the same levels from them. The design minimises ``D + lambda L`` with ``L`` the
Huffman code lengths of the cells' probabilities, ``lambda`` searched so that the mean code
length is at most ``target_bits`` per sent value (any real number from 1: a Huffman code
spends at least a bit on each value once there are two levels); the spec's ``rate`` is the
target rounded up, the label of its run, as ``uniform``'s ``levels`` gives its rate. The
design keeps at most ``2^(rate + 2)`` levels (:meth:`ECSQQuantizer.n_symbols`, the alphabet of
the code table), and the values are labelled by the design's thresholds, not by their
nearest level: at low rate the cell around zero is wider than its neighbours' half-gaps.

The design's rate is that of the law; what is sent is counted as for every kind: the
Huffman code of the tensor's own indices with its table. A design costs 0.1-1 s on the
CPU (600 cells of the law, 16 bisection steps of ``lambda``); designs are kept, so the
receiver in the same process and repeated laws do not pay twice.

>>> import torch
>>> g = torch.distributions.Laplace(0.0, 1e-3).sample((5000,)).double()
>>> q = ECSQQuantizer(2, "laplace", M=0.0, target_bits=1.5)
>>> sent = q.encode(g, "w", full=g)
>>> int(sent.levels.size) <= q.n_symbols(), int(sent.indices.max()) < sent.levels.size
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from gradcomp.compression.lloyd_quantizer import LloydQuantizer
from gradcomp.quantization.ecsq import ecsq_for_law

__all__ = ["ECSQQuantizer", "ecsq_levels"]

#: Cells of the law the design runs on, and bisection steps of lambda: the compressor's
#: cost per tensor (the library's defaults, 4000 and 32, are for the reference curves).
DESIGN_POINTS, DESIGN_STEPS = 1000, 16


@lru_cache(maxsize=1024)
def ecsq_levels(
    family: str, params: tuple, M: float, tau: float, target_bits: float, max_levels: int
) -> tuple[np.ndarray, np.ndarray]:
    """(levels (L,), thresholds (L - 1,)), sorted, read only, of the Huffman-constrained
    design of the law ``family`` with scipy ``params`` (a tuple of items) beyond ``tau``."""
    got = ecsq_for_law(family, dict(params), M=M, rate=target_bits, lengths="huffman",
                       tau=tau, max_levels=max_levels, n_points=DESIGN_POINTS,
                       iters=DESIGN_STEPS)  # fmt: skip
    levels, thresholds = got.levels.copy(), got.thresholds.copy()
    levels.setflags(write=False)
    thresholds.setflags(write=False)
    return levels, thresholds


class ECSQQuantizer(LloydQuantizer):
    """ECSQ of a fitted law at ``target_bits`` coded bits per value (default ``rate``)."""

    kind = "ecsq"
    title = "entropy-constrained"
    nearest_labels = False
    min_rate, max_rate = 1, 8
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
        if value is None:
            return None
        number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, bool
        )  # specs.is_number, which this module cannot import (specs imports the registry)
        if not (number and 1 <= float(value) <= cls.max_rate):  # type: ignore[arg-type]
            return f"must be a number of bits per value in 1..{cls.max_rate}, got {value!r}"
        return None

    @classmethod
    def check_together(cls, spec) -> tuple[str, str] | None:
        """The rate is the target rounded up; the design is for the Huffman code and the
        update's law (no ``huffman: false``, ``lloyd_fit: survivors`` or ``slip``)."""
        if not spec["huffman"]:
            return "huffman", "ecsq is designed for its Huffman-coded indices: huffman must be true"
        if spec["lloyd_fit"] != "update":
            return "lloyd_fit", "ecsq designs for the update's law beyond tau only ('update')"
        if spec["slip"]:
            return "slip", "the authors' slip is a Lloyd design; ecsq has none"
        target = spec.get("target_bits")
        if target is not None and spec["rate"] != math.ceil(target):
            return "rate", f"target_bits {target} is labelled by rate {math.ceil(target)}"
        return None

    @property
    def n_levels(self) -> int:
        return self.n_symbols()

    def n_symbols(self) -> int:
        return 2 ** (self.rate + 2)

    def _design_ahead(self, sides: list[dict[str, float]]) -> None:
        """Nothing: each tensor's design is kept by :func:`ecsq_levels`."""

    def _designed(self, side: dict[str, float], name: str, step: int):
        params, tau = self._law(side)
        levels, thresholds = ecsq_levels(self.family, tuple(params.items()), self.M, tau,
                                         self.target_bits, self.n_symbols())  # fmt: skip
        if not (np.all(np.isfinite(levels)) and np.all(np.isfinite(thresholds))):
            raise FloatingPointError(f"non-finite ECSQ design {levels}")
        return levels, thresholds
