"""Scaled sign (signSGD with error feedback, EF-SGD: Karimireddy et al. 2019).

Per tensor (the sent values p, d entries; with error feedback p = g + e, the update plus the
memory's residual): send ``sign(p_i)`` (1 bit, sign(0) = +1) and the scale
``||p||_1 / d`` (float32, 32 bits of side info); the receiver's values are
``scale * sign(p_i)``. Error feedback (``error_feedback: true`` in the spec) is the separate
:class:`~gradcomp.compression.memory.ResidualMemory`: ``e <- p - scale * sign(p)``.

Rate parts: fixed payload d bits, coded payload the same d bits (a 1-bit code both ends
know: no table), side info 32 bits.
"""

from __future__ import annotations

import numpy as np
import torch

from gradcomp.coding import HuffmanCode
from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer

__all__ = ["ScaledSign"]


class _OneBitCode(HuffmanCode):
    """The 1-bit code of the two signs, known to both ends (no code table sent)."""

    def __init__(self):
        super().__init__(np.array([1, 1]))

    def side_info_bits(self) -> int:
        return 0


class ScaledSign(ValueQuantizer):
    """``scaled_sign``: see the module doc. Index 0 is ``-scale``, index 1 is ``+scale``."""

    kind = "scaled_sign"
    fixed_rate = 1

    def encode(self, values, name=""):
        p = values.detach().to(torch.float64)
        scale = float(np.float32(p.abs().mean())) if p.numel() else 0.0
        return QuantizedValues(
            self.kind,
            p.numel(),
            indices=(p >= 0).to(torch.int64),
            levels=np.array([-scale, scale]),
            side={"scale": scale},
            value_bits=1,
        )

    def entropy_coder(self, counts) -> HuffmanCode:
        return _OneBitCode()
