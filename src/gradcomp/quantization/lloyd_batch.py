"""Many Lloyd designs at once, each bit for bit the design :func:`lloyd_design` makes alone.

An update of a federated client has tens of tensors quantized with the same number of levels
and weight exponent, each under its own fitted law; designed one by one, the numpy calls on
arrays of a few levels cost more in overhead than in arithmetic. Here the designs still
running advance together: one call of each special function per step for all of them
(:meth:`SymmetricLaw.stacked`), the Newton solve per design (a small banded system), and each
design stops on its own rule. Every number is computed by the same elementwise operations as
in :func:`~gradcomp.quantization.lloyd.lloyd_design` with its defaults (companding
init, closed-form moments, Newton acceleration), so a receiver that designs one tensor alone
gets the sender's levels (checked in the tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gradcomp.quantization.lloyd import _initial_levels, conditional_weighted_density
from gradcomp.quantization.lloyd_newton import newton_levels
from gradcomp.quantization.symmetric_law import (
    SymmetricLaw,
    _distortion_rows,
    _edges,
    _midpoints,
)

__all__ = ["lloyd_levels_batch"]


def lloyd_levels_batch(
    laws: Sequence[SymmetricLaw],
    taus: Sequence[float],
    n_levels: int,
    M: float,
    *,
    tol: float = 1e-12,
    max_iter: int = 10_000,
) -> list[np.ndarray | ValueError]:
    """The (L,) sorted levels, units of x, of ``lloyd_design(law, None, n_levels, M,
    tau=tau)`` for each law and tau, or the ValueError that design raises (no mass beyond
    tau, or that tau is not >= 0). Designs with and without truncation run as two stacks."""
    if n_levels < 1:
        raise ValueError("n_levels must be >= 1")
    if M < 0:
        raise ValueError("M must be >= 0")
    if len(laws) != len(taus):
        raise ValueError(f"{len(laws)} laws but {len(taus)} taus")
    out: list[np.ndarray | ValueError] = [ValueError("not designed")] * len(laws)
    ready = []
    for i, (law, tau) in enumerate(zip(laws, taus, strict=True)):
        if not tau >= 0:
            out[i] = ValueError(f"tau must be >= 0, got {tau}")
            continue
        t = float(tau) / law.scale
        log_mass = law.unit.log_tail_mass(t)
        if np.isfinite(log_mass):
            ready.append((i, t, log_mass))
        else:
            out[i] = ValueError(f"the law has no mass beyond tau = {tau}")
    for truncated in (False, True):
        rows = [r for r in ready if (r[1] > 0) == truncated]
        if rows:
            unit_levels = _design_stack([laws[i] for i, _, _ in rows], [r[1:] for r in rows],
                                        n_levels, M, tol, max_iter)  # fmt: skip
            for (i, _, _), y in zip(rows, unit_levels, strict=True):
                out[i] = laws[i].loc + laws[i].scale * y
    return out


def _design_stack(laws, truncation, n_levels, M, tol, max_iter) -> list[np.ndarray]:
    """Unit-scale levels of each law; ``truncation``: (t, log tail mass) per law, all t > 0
    or all 0."""
    units = [law.unit for law in laws]
    stack = SymmetricLaw.stacked(units)
    t = np.array([[ti] for ti, _ in truncation])
    log_mass = np.array([[lm] for _, lm in truncation])
    density = [conditional_weighted_density(u, M, ti, lm)
               for u, (ti, lm) in zip(units, truncation, strict=True)]  # fmt: skip
    y = np.stack([_initial_levels(law, n_levels, M, None, ti)
                  for law, (ti, _) in zip(laws, truncation, strict=True)])  # fmt: skip
    symmetric = [bool(np.allclose(r, -r[::-1], rtol=0.0, atol=1e-12 * np.max(np.abs(r))))
                 for r in y]  # fmt: skip

    def moments(rows, levels):
        lo, hi = _edges(_midpoints(levels))
        return stack.take(rows).truncated_cell_moments(lo, hi, M, t[rows], log_shift=log_mass[rows])

    done = np.zeros_like(y)
    active = np.arange(len(laws))
    lo, hi = _edges(_midpoints(y))
    m = moments(active, y)
    n_iter = 0
    while active.size and n_iter < max_iter:
        with np.errstate(invalid="ignore", divide="ignore"):
            centroid = m[1] / m[0]
        ok = np.isfinite(centroid) & (m[0] > 0)
        y_new = np.where(ok, centroid, np.clip(y, lo, hi))
        m_new = moments(active, y_new)
        d_new = _distortion_rows(m_new, y_new)
        cands = {}
        for k, row in enumerate(active):
            if not np.all(ok[k]):
                continue
            cand = newton_levels(y[k], centroid[k], m[0][k], density[row])
            if cand is not None and symmetric[row]:
                cand = 0.5 * (cand - cand[::-1])
            if cand is not None and np.all(np.isfinite(cand)) and np.all(np.diff(cand) > 0):
                cands[k] = cand
        if cands:
            ks = np.fromiter(cands, dtype=np.int64)
            cand = np.stack([cands[k] for k in ks])
            m_cand = moments(active[ks], cand)
            d_cand = _distortion_rows(m_cand, cand)
            take = d_cand <= d_new[ks] + 1e-12 * np.abs(d_new[ks])
            ks, cand, m_cand = ks[take], cand[take], m_cand[:, take]
            y_new[ks], m_new[:, ks] = cand, m_cand
        n_iter += 1
        change = np.max(np.abs(y_new - y), axis=1)
        y = y_new
        size = np.maximum(np.max(np.abs(y), axis=1), np.finfo(float).tiny)
        stop = change <= tol * size
        if n_iter == max_iter:
            stop[:] = True
        done[active[stop]] = y[stop]
        keep = ~stop
        active, y, m = active[keep], y[keep], m_new[:, keep]
        lo, hi = _edges(_midpoints(y))
    return list(done)
