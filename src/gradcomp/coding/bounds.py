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
  :mod:`~gradcomp.coding.context` (``ans_context``: C by the context rule the coder
  chooses for the tensor, C' the previous entry's sign state and the entry's own magnitude
  class), with the counts of the whole tensor (its signs are not raw).
"""

from __future__ import annotations

import numpy as np

from gradcomp.coding.base import Bound, TensorSymbols
from gradcomp.coding.context import (
    choose_context,
    conditional_entropy_bits,
    magnitude_contexts,
    sign_contexts,
    sign_states,
)
from gradcomp.coding.iid_coders import FAMILY_COLORS, model_pmf_of

__all__ = [
    "ChannelEntropy",
    "ContextEntropy",
    "CrossEntropy",
    "Entropy",
    "conditional_entropy_bits",
]


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
        ctx = magnitude_contexts(m, choose_context(m))
        return conditional_entropy_bits(m, ctx) + conditional_entropy_bits(
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
