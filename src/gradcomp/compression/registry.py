"""Name-to-class registry of the value quantizers (the kinds a spec's ``quantizer`` names)."""

from __future__ import annotations

from gradcomp.compression.gaussian_channel import GaussianChannel
from gradcomp.compression.kmeans_quantizer import KMeansQuantizer
from gradcomp.compression.lloyd_quantizer import LloydQuantizer
from gradcomp.compression.value_quantizers import (
    Float16,
    PassThrough,
    UniformQuantizer,
    ValueQuantizer,
)

__all__ = ["QUANTIZERS"]

#: Value quantizers by kind.
QUANTIZERS: dict[str, type[ValueQuantizer]] = {
    cls.kind: cls
    for cls in (
        PassThrough,
        Float16,
        UniformQuantizer,
        LloydQuantizer,
        KMeansQuantizer,
        GaussianChannel,
    )
}
