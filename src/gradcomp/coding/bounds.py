"""Ideal code lengths (bits, no side information), each the limit of a class of coders,
magnitudes coded plus one raw sign bit per non-zero entry:

- ``entropy``: ``n H(M)``, the empirical entropy of the tensor's magnitudes: the floor of
  every code that treats entries as i.i.d. (table cost aside);
- ``xent_<family>``: ``-sum log2 q(m)`` under the fitted family's floored pmf, what an ideal
  arithmetic coder driven by the i.i.d. model spends;
- ``entropy_channel``: ``sum_r n_r H(M | row r)``, each output channel's own empirical
  entropy: the limit of per-channel i.i.d. codes (``ans_gennorm_channel``);
- ``entropy_context``: ``n H(M | C) + n' H(S | C')``, the empirical conditional entropies of
  the magnitudes and of the non-zero entries' signs given the contexts of
  :mod:`~gradcomp.coding.context` (``ans_context``: C the previous entry's magnitude class,
  C' the previous entry's sign state and the entry's own magnitude class), with the counts
  of the whole tensor (its signs are not raw).
"""

from __future__ import annotations

import numpy as np

from gradcomp.coding.base import Bound, TensorSymbols
from gradcomp.coding.context import lane_contexts, sign_contexts, sign_states
from gradcomp.coding.iid_coders import FAMILY_COLORS, model_pmf_of

__all__ = [
    "ChannelEntropy",
    "ContextEntropy",
    "CrossEntropy",
    "Entropy",
    "conditional_entropy_bits",
]


def conditional_entropy_bits(symbols: np.ndarray, context: np.ndarray) -> float:
    """``n H(S | C)`` in bits: the ideal code length of ``symbols`` when each context's
    symbols are coded with their own empirical pmf; arrays of equal shape, non-negative
    integers."""
    s = np.asarray(symbols, dtype=np.int64).ravel()
    c = np.asarray(context, dtype=np.int64).ravel()
    if s.size == 0:
        return 0.0
    joint = np.bincount(c * (s.max() + 1) + s)
    joint = joint[joint > 0].astype(np.float64)
    per_context = np.bincount(c)
    per_context = per_context[per_context > 0].astype(np.float64)
    # n H(S|C) = -sum n_cs log2 n_cs + sum n_c log2 n_c
    return float(-(joint * np.log2(joint)).sum() + (per_context * np.log2(per_context)).sum())


class Entropy(Bound):
    name = "entropy"
    color = "k"
    in_figure = True
    raw_signs = True

    def bits(self, x: TensorSymbols) -> float:
        m = x.magnitudes
        return conditional_entropy_bits(m, np.zeros_like(m)) + x.signs.size


class ChannelEntropy(Bound):
    name = "entropy_channel"
    color = "purple"  # its coder, ans_gennorm_channel, is C6 (pink)
    in_figure = True
    raw_signs = True

    def bits(self, x: TensorSymbols) -> float:
        m = x.magnitudes
        rows = np.broadcast_to(np.arange(m.shape[0])[:, None], m.shape)
        return conditional_entropy_bits(m, rows) + x.signs.size


class ContextEntropy(Bound):
    name = "entropy_context"
    color = "teal"  # its coder, ans_context, is C9 (cyan)
    in_figure = True

    def bits(self, x: TensorSymbols) -> float:
        m = x.magnitudes
        states = sign_states(x.symbols, x.grid)
        nonzero = states > 0
        sign_ctx = sign_contexts(states, m)
        return conditional_entropy_bits(m, lane_contexts(m)) + conditional_entropy_bits(
            states[nonzero], sign_ctx[nonzero]
        )


class CrossEntropy(Bound):
    raw_signs = True

    def __init__(self, family: str = "gennorm") -> None:
        self.family = family
        self.name = f"xent_{family}"
        self.color = FAMILY_COLORS.get(family, "0.5")
        self.needs = (family,)

    def bits(self, x: TensorSymbols) -> float:
        q = model_pmf_of(x.fits[self.family], x.grid)
        counts = np.bincount(x.magnitudes.ravel(), minlength=q.size)
        used = counts > 0
        return float(-(counts[used] * np.log2(q[used])).sum()) + x.signs.size
