"""Ideal code lengths (bits, no side information), each the limit of a class of coders,
magnitudes coded plus one raw sign bit per non-zero entry:

- ``entropy``: ``n H(M)``, the empirical entropy of the tensor's magnitudes: the floor of
  every code that treats entries as i.i.d. (table cost aside);
- ``xent_<family>``: ``-sum log2 q(m)`` under the fitted family's floored pmf (the fit's
  parameters as float32, as the model coders send them), what an ideal arithmetic coder
  driven by the i.i.d. model spends;
- ``entropy_channel``: ``sum_r n_r H(M | row r)``, each output channel's own empirical
  entropy: the limit of per-channel i.i.d. codes (``ans_gennorm_channel``);
- ``entropy_context`` (in-sample, not a bound a coder can reach): ``n H(M | C) + n' H(S |
  C')``, the empirical conditional entropies of the magnitudes and of the non-zero entries'
  signs given the contexts of :mod:`~gradcomp.coding.context` (``ans_context``: C by the
  context rule the coder chooses for the tensor, C' the previous entry's sign state and the
  entry's own magnitude class), with the counts of the whole tensor (its signs are not
  raw). It charges nothing for learning the counts, so a decoder, which must learn them,
  cannot reach it on small tensors;
- ``kt_context``: the same contexts coded sequentially with Krichevsky-Trofimov estimates
  from zero counts (1/2 per symbol of the alphabet: the grid's magnitudes, or the 2 signs),
  plus 1 bit for the rule: what an adaptive coder of these contexts that a decoder can
  follow spends (the ideal arithmetic code of the KT predictions). From the final counts:
  ``sum_c [lnG(n_c + K/2) - lnG(K/2) - sum_s (lnG(n_cs + 1/2) - lnG(1/2))] / ln 2``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from gradcomp.coding.base import Bound, TensorSymbols
from gradcomp.coding.context import (
    choose_context,
    conditional_entropy_bits,
    magnitude_contexts,
    sign_contexts,
    sign_states,
)
from gradcomp.coding.counts import SymbolCounts, entropy_from_counts
from gradcomp.coding.iid_coders import model_pmf_of, write_fit

__all__ = [
    "ChannelEntropy",
    "ContextEntropy",
    "KTContextBits",
    "CrossEntropy",
    "Entropy",
    "conditional_entropy_bits",
]


class _CountedBound(Bound):
    """A bound that depends only on the symbol counts: :meth:`bits` is :meth:`counted_bits`'s
    payload on the tensor's counts (:class:`~gradcomp.coding.counts.SymbolCounts`)."""

    raw_signs = True

    def bits(self, x: TensorSymbols) -> float:
        return self.counted_bits(SymbolCounts.of_symbols(x))[0]

    def counted_bits(self, c: SymbolCounts) -> tuple[float, int]:
        raise NotImplementedError


class Entropy(_CountedBound):
    name = "entropy"

    def counted_bits(self, c: SymbolCounts) -> tuple[float, int]:
        return entropy_from_counts(c.magnitudes) + c.n_nonzero, 0


class ChannelEntropy(_CountedBound):
    name = "entropy_channel"

    def counted_bits(self, c: SymbolCounts) -> tuple[float, int]:
        return entropy_from_counts(c.rows) + c.n_nonzero, 0


class ContextEntropy(Bound):
    name = "entropy_context"

    def bits(self, x: TensorSymbols) -> float:
        m, ctx, signs, sign_ctx = _context_streams(x)
        return conditional_entropy_bits(m, ctx) + conditional_entropy_bits(signs, sign_ctx)


def _context_streams(x: TensorSymbols) -> tuple[np.ndarray, ...]:
    """(magnitudes, their contexts, sign states of the non-zero entries, their contexts):
    the streams ``ans_context`` codes, with its contexts (:mod:`gradcomp.coding.context`)."""
    m = x.magnitudes
    states = sign_states(x.symbols, x.grid)
    nonzero = states > 0
    sign_ctx = sign_contexts(states, m)
    ctx = magnitude_contexts(m, choose_context(m))
    return m, ctx, states[nonzero], sign_ctx[nonzero]


def kt_bits(symbols: np.ndarray, context: np.ndarray, alphabet: int) -> float:
    """Sequential KT code length in bits of ``symbols`` (ints in ``[0, alphabet)``) with
    counts kept per ``context`` (non-negative ints, same shape), every count from zero."""
    s = np.asarray(symbols, dtype=np.int64).ravel()
    c = np.asarray(context, dtype=np.int64).ravel()
    if s.size == 0:
        return 0.0
    joint = np.bincount(c * alphabet + s)
    joint = joint[joint > 0].astype(np.float64)
    per_context = np.bincount(c)
    per_context = per_context[per_context > 0].astype(np.float64)
    half_k = alphabet / 2
    nats = (gammaln(per_context + half_k) - gammaln(half_k)).sum() - (
        gammaln(joint + 0.5) - gammaln(0.5)
    ).sum()
    return float(nats / np.log(2))


class KTContextBits(Bound):
    name = "kt_context"

    def bits(self, x: TensorSymbols) -> float:
        m, ctx, signs, sign_ctx = _context_streams(x)
        return 1.0 + kt_bits(m, ctx, x.grid.n_magnitudes) + kt_bits(signs - 1, sign_ctx, 2)


class CrossEntropy(_CountedBound):
    def __init__(self, family: str = "gennorm") -> None:
        self.family = family
        self.name = f"xent_{family}"
        self.needs = (family,)

    def counted_bits(self, c: SymbolCounts) -> tuple[float, int]:
        # the fit as a decoder reads it (float32), as the model coders use it
        q = model_pmf_of(write_fit(c.fits[self.family])[1], c.grid)
        counts = c.magnitudes
        used = counts > 0
        return float(-(counts[used] * np.log2(q[used])).sum()) + c.n_nonzero, 0
