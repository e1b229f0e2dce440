"""``kmeans``: the data-optimal reference quantizer, 2^R levels of a weighted k-means of the
sent values under the ``|g|^M`` weighted distortion
(:func:`gradcomp.quantization.kmeans.weighted_kmeans`).

No model: the levels depend on the data, so all 2^R of them are sent as side information,
as float32 (32 bits each); the values are quantized with the rounded levels, the ones the
receiver reads. It shows how close a model-based design (``lloyd``) comes to the best
2^R-level quantizer of the very values it quantizes. Values whose weights are all zero (all
zero with M > 0) are clustered unweighted.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from gradcomp.coding.fields import FieldReader, FieldWriter
from gradcomp.compression.inputs import check_sendable
from gradcomp.compression.value_quantizers import (
    QuantizedValues,
    ValueQuantizer,
    level_bits,
    level_values,
)
from gradcomp.quantization.kmeans import weighted_kmeans

__all__ = ["KMeansQuantizer"]


class KMeansQuantizer(ValueQuantizer):
    """2^R weighted k-means levels of the values (R = ``rate``, weight exponent ``M``).

    Beyond its format (an entry whose reconstruction would be NaN or infinite: levels beyond
    float32): refused by name, :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`,
    never clamped.
    """

    kind = "kmeans"
    wire_code = 6  # its byte in the wire's header: never reused
    title = "weighted k-means"
    takes_M = True
    nearest_labels = True

    def __init__(self, rate: int, M: float = 0.0):
        self.rate, self.M = int(rate), float(M)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], spec["M"])

    def n_symbols(self) -> int:
        return 2**self.rate

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        x = values.detach().to("cpu", torch.float64).numpy()
        check_sendable(self.kind, name, x, "float32 levels")
        M = self.M if np.any(x != 0) else 0.0
        levels = weighted_kmeans(x, self.n_symbols(), M).levels
        sent = np.sort(levels.astype(np.float32)).astype(np.float64)  # what the wire carries
        return level_values(self.kind, values, sent, {}, levels_sent=True)

    def write_side(self, q: QuantizedValues, w: FieldWriter) -> None:
        w.array(cast(np.ndarray, q.levels).astype(np.float32), "f4")  # levels_sent

    def read_side(self, r: FieldReader, n: int, *, name: str, step: int) -> QuantizedValues:
        levels = r.array("f4", self.n_symbols(), "levels").astype(np.float64)
        return QuantizedValues(self.kind, n, levels=levels, value_bits=level_bits(levels.size),
                               levels_sent=True)  # fmt: skip
