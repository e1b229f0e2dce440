"""How well a count sketch recovers a test vector: :func:`sketch_relative_error`, the error of
a sketch of given size on :func:`probe_vector` (GenNorm, Laplace by default: the law of paper
L's gradients at its upper shape 1). The count sketch's config check, its compressor's
warning and ``bench/bench_sketch.py`` measure with it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from gradcomp.compression.sketch_hash import SketchHash
from gradcomp.compression.sparsifiers import TopK

__all__ = ["TEST_SHAPE", "probe_vector", "sketch_relative_error"]

#: GenNorm shape of the test vector (1: Laplace, the light end of paper L's 0.6-1.0 fits).
TEST_SHAPE = 1.0


def probe_vector(d: int, seed: int = 0, shape: float = TEST_SHAPE) -> torch.Tensor:
    """(d,) float64 i.i.d. GenNorm(``shape``), unit scale: ``sign * G^(1/shape)`` with G ~
    Gamma(1/shape)."""
    rng = np.random.default_rng(seed)
    mag = rng.gamma(1.0 / shape, size=d) ** (1.0 / shape)
    return torch.from_numpy(np.where(rng.random(d) < 0.5, -mag, mag))


@lru_cache(maxsize=64)
def sketch_relative_error(
    d: int,
    rate: int,
    rows: int,
    k_ratio: float,
    hash_kind: str = "random",
    topk: float | None = None,
    seed: int = 0,
) -> float:
    """``||U(S(x')) - x|| / ||x||`` for the :func:`probe_vector` x of d entries (x' = its top
    ``topk`` fraction, or x), sketched into ``rows`` x ``ceil(rate d / (100 rows))`` cells
    and unsketched to ``k = ceil(k_ratio c)`` entries. Sending nothing scores 1."""
    x = probe_vector(d, seed)
    sketched = x
    if topk is not None:
        sketched = x * TopK(topk).select({"x": x})["x"]
    c = max(1, math.ceil(rate * d / (100 * rows)))
    h = SketchHash(d, rows, c, seed + 1, hash_kind)
    k = min(math.ceil(k_ratio * c), int((sketched != 0).sum()))
    return float((h.unsketch(h.sketch(sketched), k) - x).norm() / x.norm())
