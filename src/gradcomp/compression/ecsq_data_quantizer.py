"""``ecsq_data``: the entropy-constrained design of the sent values themselves (as ``kmeans``
is Lloyd's on the data), under the ``|g|^M`` weighted distortion, for the bits its indices
cost under the Huffman code that sends them (:func:`gradcomp.compression.ecsq.ecsq_design`).

Per tensor, the design runs on at most :data:`DESIGN_POINTS` evenly spaced order statistics
of the values (equal weights; all of them when fewer) at ``target_bits`` coded bits per value
(the spec's ``rate`` its ceiling, as for ``ecsq``); every value is then labelled by the
design's thresholds and each used cell's level is the ``|g|^M``-weighted mean of all its
values (the plain mean where the weights vanish). The levels travel as side information,
a 16-bit count and the count's float32 levels (``levels_sent``, charged 32 bits each and 16
for the count), and the values are reconstructed from the rounded levels the receiver reads.
No model: it shows what the design made for coded bits gains when it knows the data, as
``kmeans`` does for Lloyd's.

>>> import torch
>>> g = torch.distributions.Laplace(0.0, 1e-3).sample((5000,)).double()
>>> sent = ECSQDataQuantizer(2, M=0.0, target_bits=1.5).encode(g)
>>> int(sent.levels.size) <= 16, int(sent.indices.max()) < sent.levels.size
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, cast

import numpy as np
import torch

from gradcomp.coding.fields import FieldReader, FieldWriter
from gradcomp.compression.ecsq import cell_centroids, ecsq_design, m_weights
from gradcomp.compression.ecsq_quantizer import ECSQQuantizer
from gradcomp.compression.inputs import check_sendable
from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer, level_bits

__all__ = ["DESIGN_POINTS", "ECSQDataQuantizer"]

#: The order statistics a design runs on (its cost per tensor does not grow with the tensor),
#: and the bisection steps of its Lagrange multiplier.
DESIGN_POINTS, DESIGN_STEPS = 1000, 16
#: The field that says how many levels follow.
COUNT_BITS = 16


@dataclass
class CountedLevels(QuantizedValues):
    """:class:`QuantizedValues` whose sent levels are preceded by their 16-bit count."""

    @property
    def side_bits(self) -> int:
        return super().side_bits + COUNT_BITS


class ECSQDataQuantizer(ValueQuantizer):
    """The entropy-constrained design of the values at ``target_bits`` (default ``rate``).

    Beyond its format (an entry whose reconstruction would be NaN or infinite: levels beyond
    float32): refused by name, :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`,
    never clamped.
    """

    kind = "ecsq_data"
    wire_code = 13  # its byte in the wire's header: never reused
    title = "entropy-constrained (data)"
    takes_M = True
    min_rate, max_rate = 1, 8
    options: ClassVar[dict[str, object]] = {"target_bits": None}

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        """Why ``value`` is not a valid ``target_bits``: from 1 bit (its Huffman code spends
        one on each value) to the largest rate."""
        return ECSQQuantizer.check_target(value, 1.0, cls.max_rate)

    def __init__(self, rate: int, M: float = 0.0, *, target_bits: float | None = None):
        self.rate, self.M = int(rate), float(M)
        self.target_bits = float(rate if target_bits is None else target_bits)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], spec["M"], target_bits=spec.get("target_bits"))

    @classmethod
    def check_together(cls, spec) -> tuple[str, str] | None:
        """As ``ecsq``'s: Huffman-coded indices, no ``slip``, the rate the target's ceiling."""
        return ECSQQuantizer.check_together({**spec, "lloyd_fit": "update"})

    def n_symbols(self) -> int:
        return 2 ** (self.rate + 2)

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        x = values.detach().to("cpu", torch.float64).numpy()
        check_sendable(self.kind, name, x, "float32 levels")
        M = self.M if np.any(x != 0) else 0.0
        # designed at unit scale (largest |value| 1): the weights, the distortions and the
        # Lagrange multiplier's range stay inside float64 whatever the values' scale
        scale = float(np.max(np.abs(x))) or 1.0
        unit = x / scale
        order = np.sort(unit)
        points = order[np.linspace(0, x.size - 1, min(x.size, DESIGN_POINTS)).round().astype(int)]
        design = ecsq_design(points, np.full(points.size, 1.0 / points.size), M=M,
                             rate=self.target_bits, lengths="huffman",
                             max_levels=self.n_symbols(), iters=DESIGN_STEPS)  # fmt: skip
        cells = np.searchsorted(design.thresholds, unit, side="left")
        used, cells = np.unique(cells, return_inverse=True)
        mass = np.bincount(cells, minlength=used.size)
        levels = cell_centroids(cells, unit, m_weights(unit, M), mass) * scale
        sent = levels.astype(np.float32).astype(np.float64)  # what the wire carries
        return CountedLevels(self.kind, x.size, indices=torch.from_numpy(cells).to(values.device),
                             levels=sent, value_bits=level_bits(self.n_symbols()),
                             levels_sent=True)  # fmt: skip

    def write_side(self, q: QuantizedValues, w: FieldWriter) -> None:
        levels = cast(np.ndarray, q.levels)
        w.array(np.array([levels.size], dtype=np.uint16), "u2")
        w.array(levels.astype(np.float32), "f4")

    def read_side(self, r: FieldReader, n: int, *, name: str, step: int) -> QuantizedValues:
        count = int(r.array("u2", 1, "levels count")[0])
        if not 1 <= count <= self.n_symbols():
            raise r.error("levels count", f"{count} levels (1..{self.n_symbols()} expected)")
        levels = r.array("f4", count, "levels").astype(np.float64)
        return CountedLevels(self.kind, n, levels=levels, value_bits=level_bits(self.n_symbols()),
                             levels_sent=True)  # fmt: skip
