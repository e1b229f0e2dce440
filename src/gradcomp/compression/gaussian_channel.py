"""``gaussian_channel``: the Gaussian test channel, paper Y's rate-distortion reference.

The backward test channel of a Gaussian source ``X ~ N(mu, s^2)`` at rate R: the receiver
gets ``X_hat = mu + a (X - mu) + sqrt(a (1 - a)) s N(0, 1)`` with ``a = 1 - 2^(-2R)``. Then
``X - X_hat`` is independent of ``X_hat`` with variance ``D = s^2 2^(-2R)``, and the mutual
information ``I(X; X_hat) = 1/2 log2(s^2 / D)`` is exactly R bits: the channel reaches the
Gaussian distortion-rate function at the R bits per value it is charged. ``mu`` and ``s``
(the values' mean and standard deviation) are side information, 32 bits each, and both
enter the output. (The authors' "optimal compression" adds ``N(0, 2^(-2R))`` to the
standardised values, a forward channel whose mutual information is
``1/2 log2(1 + 2^(2R))`` > R bits; the authors charge R, here ``slip`` is charged its mutual
information, ``ceil(n/2 log2(1 + 2^(2R)))`` bits for n values.)

An ideal channel, not a code: no bitstream of R bits per value exists. On the uplink's byte
format (:mod:`gradcomp.wire`) its outputs travel as float64 stand-ins, so that
the server decodes them like any payload, and its rows say ``bits_source = ideal``: their
bits are the mutual information above, not bytes sent, and are not compared with codes at
matched measured bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer

__all__ = ["ChannelValues", "GaussianChannel"]


@dataclass
class ChannelValues(QuantizedValues):
    """The channel's outputs; ``bits_per_value`` its mutual information per value (R for the
    backward channel, ``1/2 log2(1 + 2^(2R))`` for ``slip``'s forward one)."""

    bits_per_value: float = 0.0

    @property
    def payload_bits(self) -> int:
        return math.ceil(self.n * self.bits_per_value - 1e-9)


class GaussianChannel(ValueQuantizer):
    """Backward Gaussian test channel at ``rate`` bits per value (``slip``: the authors'
    forward channel); ``seed`` seeds the noise (one torch.Generator per quantizer, CPU).

    Beyond its format (an entry whose reconstruction would be NaN or infinite: mean, std or
    outputs overflowing): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "gaussian_channel"
    wire_code = 7  # its byte in the wire's header: never reused
    takes_slip = True
    title = "Gaussian channel"
    wire_dtype = "f8"
    huffman_acts = False
    ideal = True

    def __init__(self, rate: int, *, seed: int = 0, slip: bool = False):
        self.rate, self.slip = int(rate), bool(slip)
        self.generator = torch.Generator().manual_seed(int(seed))

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], seed=spec["seed"], slip=spec["slip"])

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        x = values.to(torch.float64)
        mean = float(x.mean()) if x.numel() else 0.0
        std = float(x.std(unbiased=False)) if x.numel() else 0.0
        noise = torch.randn(x.shape, generator=self.generator, dtype=torch.float64).to(x.device)
        if self.slip:
            out = x + std * 2.0 ** (-self.rate) * noise
        else:
            a = 1.0 - 2.0 ** (-2 * self.rate)
            out = mean + a * (x - mean) + (a * (1.0 - a)) ** 0.5 * std * noise
        return ChannelValues(
            self.kind,
            values.numel(),
            values=out,
            side={"mean": mean, "std": std},
            value_bits=self.rate,
            bits_per_value=self.bits_per_value,
        )

    @property
    def bits_per_value(self) -> float:
        """The channel's mutual information per value, bits."""
        return 0.5 * math.log2(1.0 + 2.0 ** (2 * self.rate)) if self.slip else float(self.rate)
