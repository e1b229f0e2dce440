"""GRACE-style compressors for model updates (paper Y and the field's baselines).

One idea per module: :mod:`~gradcomp.compression.inputs` (what a compressor takes: a dict of
finite float tensors), :mod:`~gradcomp.compression.rates` (uplink bits by part),
:mod:`~gradcomp.compression.memory` (error feedback), :mod:`~gradcomp.compression.sparsifiers`
(which entries are sent), :mod:`~gradcomp.compression.value_quantizers` (the sent values:
interface and simple kinds; one module per model-based kind, :mod:`~.registry` maps names to
classes), :mod:`~gradcomp.compression.update_compression` (a whole update
through one compressor: ``compress`` / ``decompress`` / ``rate``) and
:mod:`~gradcomp.compression.specs` (checking compressors' plain-dict specs),
:mod:`~gradcomp.compression.build` (building them),
:mod:`~gradcomp.compression.users` (every user's compressor of a run, seeded apart, and the
server's receivers),
:mod:`~gradcomp.compression.entries` (config entries expanded into variants) and
:mod:`~gradcomp.compression.protocol` (the interface a user's compressor implements).

The kinds, one per module: :mod:`~gradcomp.compression.lloyd_quantizer` (paper Y's
model-based quantizer), :mod:`~gradcomp.compression.kmeans_quantizer` (the data-optimal
reference), :mod:`~gradcomp.compression.gaussian_channel` (the rate-distortion reference),
:mod:`~gradcomp.compression.float8`, :mod:`~gradcomp.compression.tcq_quantizer` (trellis-coded
quantization), :mod:`~gradcomp.compression.ecsq_quantizer` (entropy-constrained, for the coded
bits; its design on a law in :mod:`~gradcomp.compression.ecsq_law`, on weighted points in
:mod:`~gradcomp.compression.ecsq`, both giving an :mod:`~gradcomp.compression.ecsq_result`)
with :mod:`~gradcomp.compression.ecsq_data_quantizer` (its design on the data) and
:mod:`~gradcomp.compression.count_sketch` (on the hashes of
:mod:`~gradcomp.compression.sketch_hash`; FetchSGD's protocol, users sketch and the server sums, in
:mod:`~gradcomp.compression.fetchsgd`).

The field's compressors, one per module: :mod:`~gradcomp.compression.qsgd`,
:mod:`~gradcomp.compression.terngrad` (both on
:mod:`~gradcomp.compression.stochastic_levels`), :mod:`~gradcomp.compression.scaled_sign`
(signSGD with error feedback), :mod:`~gradcomp.compression.random_k` (a sparsifier) and
:mod:`~gradcomp.compression.powersgd` (a whole-update compressor); a user's own class goes
through :mod:`~gradcomp.compression.user_compressors`.

The uplink's byte format (every compressor's payload as bytes a receiver decodes alone):
:mod:`~gradcomp.compression.wire` (the API: :class:`~gradcomp.compression.wire.UpdateLayout`,
``encode_update``, ``make_receiver``), on :mod:`~gradcomp.compression.wire_fields` (the
fields and their errors) and :mod:`~gradcomp.compression.wire_records` (header and framed
records), with the layouts of :mod:`~gradcomp.compression.pipeline_wire` (a quantizer
pipeline) and :mod:`~gradcomp.compression.sketch_wire` (a count sketch; PowerSGD's is in its
module).
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
from gradcomp.compression.terngrad import TernGrad
from gradcomp.compression.update_compression import (
    Quantize,
    QuantizerPipeline,
    TensorCompressor,
    TensorCtx,
    TensorPayload,
)
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
    "Quantize",
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
    "QuantizerPipeline",
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
