"""Symbol probabilities and their entropies: empirical counts, model probabilities of
quantizer bins, entropy and cross-entropy (bits per symbol).

A *model* pmf assigns each quantizer bin the probability mass of a fitted continuous
distribution (paper L: differences of the fitted CDF at the FP8 bin edges).  Codes designed
from a model pmf must still give a codeword to every symbol that actually occurs, hence
:func:`floor_and_renormalise`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "cross_entropy_bits",
    "entropy_bits",
    "normalised",
    "empirical_pmf",
    "floor_and_renormalise",
    "model_magnitude_pmf",
    "model_pmf",
]

CdfLike = Callable[[np.ndarray], Any]


def empirical_pmf(symbols: Any, n_symbols: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts and relative frequencies of integer symbols in ``[0, n_symbols)``.

    Args:
        symbols: integer array of any shape.
        n_symbols: alphabet size L.

    Returns:
        ``(counts, pmf)``: int64 (L,) and float64 (L,); ``pmf = counts / counts.sum()``
        (all zeros for an empty input).
    """
    s = np.asarray(symbols).ravel()
    if s.size and (s.min() < 0 or s.max() >= n_symbols):
        raise ValueError(f"symbols must lie in [0, {n_symbols}), got range [{s.min()}, {s.max()}]")
    counts = np.bincount(s.astype(np.intp, copy=False), minlength=n_symbols).astype(np.int64)
    total = counts.sum()
    pmf = counts / total if total else np.zeros(n_symbols)
    return counts, pmf


def _bin_masses(
    cdf: CdfLike, edges: np.ndarray, sf: CdfLike | None, *, mirror: bool = False
) -> np.ndarray:
    """P(edges[k] < X <= edges[k+1]) for each k, float64 (len(edges)-1,), clipped at 0;
    ``mirror``: also those of the negated edges, ``-edges[::-1]``, after them (one call of
    ``cdf`` and ``sf`` for both)."""
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2:
        raise ValueError("edges must be a 1-D array with at least two entries")
    if np.any(np.diff(e) < 0):
        raise ValueError("edges must be non-decreasing")
    at = np.concatenate([e, -e[::-1]]) if mirror else e
    F = np.asarray(cdf(at), dtype=np.float64)
    S = None if sf is None else np.asarray(sf(at), dtype=np.float64)
    parts = []
    for cut in (slice(0, e.size), slice(e.size, None)) if mirror else (slice(None),):
        f = F[cut]
        p = np.diff(f)
        if S is not None:
            # Above the median, 1 - F loses the tail to cancellation; S(a) - S(b) keeps it.
            s = S[cut]
            upper = f[:-1] > 0.5
            p[upper] = (s[:-1] - s[1:])[upper]
        if not np.all(np.isfinite(p)):
            raise ValueError("cdf returned non-finite values")
        parts.append(np.clip(p, 0.0, None))
    return np.concatenate(parts)


def model_pmf(cdf: CdfLike, edges: Any, *, sf: CdfLike | None = None) -> np.ndarray:
    """Model probability of each signed bin: ``cdf(edges[k+1]) - cdf(edges[k])``.

    Args:
        cdf: vectorised CDF of the data (data units), e.g. a scipy frozen ``.cdf``.
        edges: float (L+1,), non-decreasing, normally ``-inf`` and ``+inf`` at the ends
            (``FixedGrid.edges``).
        sf: optional survival function; when given, bins above the median use
            ``sf(edges[k]) - sf(edges[k+1])`` for accuracy in the upper tail.

    Returns:
        float64 (L,), non-negative; sums to 1 up to rounding when the edges span the real line.
        Bins far in the tails can be exactly 0: floor them before designing a code.
    """
    return _bin_masses(cdf, edges, sf)


def model_magnitude_pmf(
    cdf: CdfLike, magnitude_edges: Any, *, sf: CdfLike | None = None
) -> np.ndarray:
    """Model probability of each magnitude bin ``|X| in [e_k, e_{k+1})``.

    ``P(bin k) = [F(e_{k+1}) - F(e_k)] + [F(-e_k) - F(-e_{k+1})]``: the positive bin plus its
    mirror image, computed from the CDF on both sides, so asymmetric models (non-zero loc) are
    handled correctly.

    Args:
        cdf: vectorised CDF of the signed data.
        magnitude_edges: float (K+1,), non-decreasing, ``e_0 >= 0``, normally
            ``[0, ..., inf]`` (``FixedGrid.magnitude_edges``).
        sf: optional survival function, used as in :func:`model_pmf` for the upper tail.

    Returns:
        float64 (K,), non-negative.
    """
    e = np.asarray(magnitude_edges, dtype=np.float64)
    if e.size and e[0] < 0:
        raise ValueError("magnitude edges must be non-negative")
    # Mirror: P(-e_{k+1} < X <= -e_k) from the reversed, negated edges.
    masses = _bin_masses(cdf, e, sf, mirror=True)
    positive, negative = masses[: e.size - 1], masses[e.size - 1 :][::-1]
    return positive + negative


def floor_and_renormalise(
    pmf: Any, floor: float = 1e-12, *, must_cover: Any | None = None
) -> np.ndarray:
    """Give every symbol that must be codable a probability of at least ``floor``.

    The pmf is first normalised to sum 1; then each symbol in ``must_cover`` gets
    ``max(p, floor)`` and the result is renormalised (so after renormalisation a floored
    symbol has probability ``floor / (1 + added mass)``, slightly below ``floor``, but never 0).
    Symbols outside ``must_cover`` keep their (normalised) model probability, possibly 0, so
    a Huffman code built from the result assigns them no codeword.

    Args:
        pmf: non-negative float (L,) (need not sum to 1; all-zero is allowed when
            ``must_cover`` is non-empty, giving a uniform pmf over it).
        floor: absolute probability floor, ``0 < floor < 1``.
        must_cover: bool mask (L,) of symbols that occur (e.g. ``counts > 0``), or integer
            indices; ``None`` means every symbol.

    Returns:
        float64 (L,) summing to 1, with ``p > 0`` wherever ``must_cover`` is set.
    """
    p = np.asarray(pmf, dtype=np.float64).copy()
    if p.ndim != 1:
        raise ValueError("pmf must be 1-D")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("pmf must be finite and non-negative")
    if not 0 < floor < 1:
        raise ValueError(f"floor must lie in (0, 1), got {floor}")
    total = p.sum()
    if total > 0:
        p /= total
    if must_cover is None:
        cover = np.ones(p.size, dtype=bool)
    else:
        mc = np.asarray(must_cover)
        if mc.dtype == bool:
            if mc.shape != p.shape:
                raise ValueError(f"must_cover mask shape {mc.shape} != pmf shape {p.shape}")
            cover = mc
        else:
            cover = np.zeros(p.size, dtype=bool)
            cover[mc.astype(np.intp)] = True
    p[cover] = np.maximum(p[cover], floor)
    total = p.sum()
    if total == 0:
        raise ValueError("pmf is all zero and must_cover is empty")
    return p / total


def normalised(p: Any, what: str) -> np.ndarray:
    """``p`` as a flat float64 array summing to 1; ValueError names ``what`` if it cannot be."""
    p = np.asarray(p, dtype=np.float64).ravel()
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"{what} must be finite and non-negative")
    total = p.sum()
    if total <= 0:
        raise ValueError(f"{what} sums to zero")
    return p / total


def entropy_bits(pmf: Any) -> float:
    """Shannon entropy of ``pmf`` (normalised first), bits per symbol; ``0 log 0 = 0``."""
    p = normalised(pmf, "pmf")
    nz = p[p > 0]
    return float(-(nz * np.log2(nz)).sum())


def cross_entropy_bits(p_data: Any, q_model: Any) -> float:
    """``-sum p log2 q`` in bits per symbol (both normalised first).

    This is the ideal rate of coding data distributed as ``p_data`` with a code designed for
    ``q_model``; ``inf`` when ``q == 0`` for some symbol with ``p > 0``.
    """
    p = normalised(p_data, "p_data")
    q = normalised(q_model, "q_model")
    if p.shape != q.shape:
        raise ValueError(f"shape mismatch: {p.shape} vs {q.shape}")
    used = p > 0
    if np.any(q[used] == 0):
        return float("inf")
    return float(-(p[used] * np.log2(q[used])).sum())
