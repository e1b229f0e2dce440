"""``kmeans``: the data-optimal reference quantizer, 2^R levels of a weighted k-means of the
sent values under the ``|g|^M`` weighted distortion
(:func:`gradcomp.quantization.kmeans.weighted_kmeans`).

No model: the levels depend on the data, so all 2^R of them are sent as side information
(32 bits each). It shows how close a model-based design (``lloyd``) comes to the best
2^R-level quantizer of the very values it quantizes.
"""

from __future__ import annotations

import torch

from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer, level_values
from gradcomp.quantization.kmeans import weighted_kmeans

__all__ = ["KMeansQuantizer"]


class KMeansQuantizer(ValueQuantizer):
    """2^R weighted k-means levels of the values (R = ``rate``, weight exponent ``M``)."""

    kind = "kmeans"
    takes_M = True

    def __init__(self, rate: int, M: float = 0.0):
        self.rate, self.M = int(rate), float(M)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], spec["M"])

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        x = values.detach().to("cpu", torch.float64).numpy()
        levels = weighted_kmeans(x, 2**self.rate, self.M).levels
        return level_values(self.kind, values, levels, {}, levels_sent=True)
