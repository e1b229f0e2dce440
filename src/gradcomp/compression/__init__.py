"""GRACE-style compressors of model updates (paper Y and the field's baselines): the compressor
interface, one module per kind (each carrying its header code, ``wire_code``), the registry
that names them, the entropy-constrained design (it charges its indices a code's lengths),
spec checking and building. Knows no federated training and no byte format above the fields:
it sits on ``gradcomp.quantization`` and ``gradcomp.coding``, below ``gradcomp.wire`` (the
uplink's byte format), ``gradcomp.lossy`` and ``gradcomp.distributed``.
"""

from gradcomp.compression.build import build_compressor, make_quantizer
from gradcomp.compression.entries import EntryError, Variant, entry_kind, expand_entries
from gradcomp.compression.gaussian_channel import GaussianChannel
from gradcomp.compression.kmeans_quantizer import KMeansQuantizer
from gradcomp.compression.lloyd_quantizer import LLOYD_FAMILIES, LloydQuantizer
from gradcomp.compression.memory import ResidualMemory
from gradcomp.compression.powersgd import PowerSGD
from gradcomp.compression.protocol import Compressor
from gradcomp.compression.qsgd import QSGD, QSGDEliasCode, qsgd_variance_bound
from gradcomp.compression.random_k import RandomK
from gradcomp.compression.rates import (
    FLOAT_BITS,
    RATE_FIELDS,
    RateBreakdown,
    elias_gamma_bits,
    index_code_bits,
)
from gradcomp.compression.registry import QUANTIZERS
from gradcomp.compression.scaled_sign import ScaledSign
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.specs import (
    COMPRESSORS,
    CheckedSpec,
    SpecError,
    check_spec,
    variant_label,
)
from gradcomp.compression.tensor_compression import TensorCompressor, TensorCtx, TensorPayload
from gradcomp.compression.terngrad import TernGrad
from gradcomp.compression.update_compression import PipelineCompressor, ValueQuantizerChoice
from gradcomp.compression.value_quantizers import (
    Float16,
    PassThrough,
    QuantizedValues,
    UniformQuantizer,
    ValueQuantizer,
)

__all__ = [
    "Compressor",
    "FLOAT_BITS",
    "LLOYD_FAMILIES",
    "QSGD",
    "QUANTIZERS",
    "RATE_FIELDS",
    "COMPRESSORS",
    "Float16",
    "GaussianChannel",
    "KMeansQuantizer",
    "LloydQuantizer",
    "PassThrough",
    "PowerSGD",
    "QSGDEliasCode",
    "ValueQuantizerChoice",
    "QuantizedValues",
    "RandomK",
    "RateBreakdown",
    "ResidualMemory",
    "ScaledSign",
    "CheckedSpec",
    "EntryError",
    "SpecError",
    "TensorCompressor",
    "TensorCtx",
    "TensorPayload",
    "TernGrad",
    "TopK",
    "UniformQuantizer",
    "PipelineCompressor",
    "ValueQuantizer",
    "Variant",
    "build_compressor",
    "check_spec",
    "elias_gamma_bits",
    "entry_kind",
    "expand_entries",
    "make_quantizer",
    "variant_label",
    "index_code_bits",
    "qsgd_variance_bound",
]
