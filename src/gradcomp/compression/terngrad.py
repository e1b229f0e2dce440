"""TernGrad (Wen et al. 2017): stochastic ternary levels {-s, 0, s} with the max-norm scale.

Per tensor (the sent values v, n entries): ``s = max_i |v_i|``, ``b_i ~ Bernoulli(|v_i| / s)``,
``q(v_i) = s sign(v_i) b_i``; unbiased (``E q(v) = v``) with
``E||q(v) - v||^2 = sum_i (s |v_i| - v_i^2)``. (TernGrad's gradient clipping is not applied.)

Rate parts: side info, the scale s (float32, 32 bits); fixed payload 2 bits per entry (an
index of the three levels); coded payload the Huffman bitstream of the indices with its code
table (``huffman_side_bits``), through the same path as the other level quantizers; the
ideal rate is the entropy of the ternary symbols, at most log2(3) bits per entry.
"""

from __future__ import annotations

from gradcomp.compression.stochastic_levels import StochasticLevels

__all__ = ["TernGrad"]


class TernGrad(StochasticLevels):
    """``terngrad``: see the module doc. ``seed`` seeds the Bernoulli draws.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: a scale
    beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "terngrad"
    wire_code = 9  # its byte in the wire's header: never reused
    title = "TernGrad"
    fixed_rate = 2

    def __init__(self, *, seed: int = 0):
        super().__init__(1, seed=seed)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(seed=spec["seed"])

    def scale_of(self, buckets):
        return buckets.abs().amax(dim=1)
