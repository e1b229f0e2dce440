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
from gradcomp.compression.value_quantizers import (
    QuantizedValues,
    ValueQuantizer,
    as_sent,
    read_side_floats,
    write_side_floats,
)

__all__ = ["ScaledSign"]


class _OneBitCode(HuffmanCode):
    """The 1-bit code of the two signs, known to both ends (no code table sent)."""

    def __init__(self):
        super().__init__(np.array([1, 1]))

    def side_info_bits(self) -> int:
        return 0


class ScaledSign(ValueQuantizer):
    """``scaled_sign``: see the module doc. Index 0 is ``-scale``, index 1 is ``+scale``.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: a scale
    beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "scaled_sign"
    wire_code = 10  # its byte in the wire's header: never reused
    title = "scaled sign"
    fixed_rate = 1
    huffman_acts = False  # one bit per value, coded or not
    nearest_labels = True

    def n_symbols(self) -> int:
        return 2

    def _values(self, n: int, scale: float, indices=None) -> QuantizedValues:
        return QuantizedValues(
            self.kind, n, indices=indices, levels=np.array([-scale, scale]),
            side={"scale": scale}, value_bits=1,
        )  # fmt: skip

    def encode(self, values, name=""):
        p = values.detach().to(torch.float64)
        scale = as_sent(p.abs().mean()) if p.numel() else 0.0
        return self._values(p.numel(), scale, (p >= 0).to(torch.int64))

    def entropy_coder(self, counts) -> HuffmanCode:
        return _OneBitCode()

    def known_code(self, n_levels: int) -> HuffmanCode:
        return _OneBitCode()

    def write_side(self, q, w):
        write_side_floats(w, q.side, ("scale",))

    def read_side(self, r, n, *, name, step):
        return self._values(n, read_side_floats(r, ("scale",))["scale"])
