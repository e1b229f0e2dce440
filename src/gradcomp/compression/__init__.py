"""GRACE-style compressors for model updates (paper Y and the field's baselines).

One idea per module: :mod:`~gradcomp.compression.rates` (uplink bits by part),
:mod:`~gradcomp.compression.memory` (error feedback), :mod:`~gradcomp.compression.sparsifiers`
(which entries are sent), :mod:`~gradcomp.compression.value_quantizers` (the sent values:
interface and simple kinds; one module per model-based kind, :mod:`~.registry` maps names to
classes), :mod:`~gradcomp.compression.update_compression` (a whole update
through one compressor: ``compress`` / ``decompress`` / ``rate``) and
:mod:`~gradcomp.compression.specs` (checking and building compressors from plain dicts).
"""

from gradcomp.compression.gaussian_channel import GaussianChannel
from gradcomp.compression.kmeans_quantizer import KMeansQuantizer
from gradcomp.compression.lloyd_quantizer import LLOYD_FAMILIES, LloydQuantizer
from gradcomp.compression.memory import ResidualMemory
from gradcomp.compression.rates import (
    FLOAT_BITS,
    RATE_FIELDS,
    RateBreakdown,
    elias_gamma_bits,
    position_code_bits,
)
from gradcomp.compression.registry import QUANTIZERS
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.specs import (
    SpecError,
    Variant,
    build_compressor,
    check_spec,
    compressor_variants,
    make_quantizer,
)
from gradcomp.compression.update_compression import (
    Quantize,
    TensorCompressor,
    TensorCtx,
    TensorPayload,
    UpdateCompressor,
)
from gradcomp.compression.value_quantizers import (
    Float16,
    PassThrough,
    QuantizedValues,
    UniformQuantizer,
    ValueQuantizer,
)

__all__ = [
    "FLOAT_BITS",
    "LLOYD_FAMILIES",
    "QUANTIZERS",
    "RATE_FIELDS",
    "Float16",
    "GaussianChannel",
    "KMeansQuantizer",
    "LloydQuantizer",
    "PassThrough",
    "Quantize",
    "QuantizedValues",
    "RateBreakdown",
    "ResidualMemory",
    "SpecError",
    "TensorCompressor",
    "TensorCtx",
    "TensorPayload",
    "TopK",
    "UniformQuantizer",
    "UpdateCompressor",
    "ValueQuantizer",
    "Variant",
    "build_compressor",
    "check_spec",
    "compressor_variants",
    "elias_gamma_bits",
    "make_quantizer",
    "position_code_bits",
]
