"""Lossless coders of quantized gradient symbols (paper L), their bounds and the codes under them.

The coder interface (:mod:`~gradcomp.coding.base`: symbols in, a real bitstream out, and back)
and the name -> coder table of ``lossless.coding.coders`` (:mod:`~gradcomp.coding.registry`).
The coders: :mod:`~gradcomp.coding.iid_coders` (one pmf for the whole tensor: Huffman from a
fitted model or the data, cross-entropies), :mod:`~gradcomp.coding.gennorm_channel` (a
GenNorm scale per output channel, ANS), :mod:`~gradcomp.coding.context` (adaptive context
ANS), :mod:`~gradcomp.coding.cm` (context mixing, on the integer pieces of
:mod:`~gradcomp.coding.binary_rc`) and its faster variant :mod:`~gradcomp.coding.cm_fast`
(fewer decisions and models per symbol), :mod:`~gradcomp.coding.byte_coders` (the FP8 bytes as
they are and through general-purpose compressors), :mod:`~gradcomp.coding.zpaq` (the zpaq
archiver); :mod:`~gradcomp.coding.bounds` holds the ideal code lengths each class reaches,
and :mod:`~gradcomp.coding.counts` the sizes that follow from a tensor's symbol counts alone
(its histogram, taken on the tensor's device: whole-model coding).

The codes under them, one per module: :mod:`~gradcomp.coding.huffman` (canonical Huffman,
real bitstreams, on the lengths of :mod:`~gradcomp.coding.huffman_lengths`),
:mod:`~gradcomp.coding.ans` (ANS reference), :mod:`~gradcomp.coding.lz78`
(paper L's baseline), :mod:`~gradcomp.coding.general_purpose` (zlib, bz2, lzma, zstd,
brotli), :mod:`~gradcomp.coding.elias` (Elias-gamma) with its compiled loops
:mod:`~gradcomp.coding.bit_kernels` (bit packing, gamma reading),
:mod:`~gradcomp.coding.adaptive_index` (an adaptive binary arithmetic code of level indices,
the entropy-constrained design's below 1.5 bits); :mod:`~gradcomp.coding.pmf` holds the
symbol pmfs and their entropies."""

from gradcomp.coding.ans import ans_bits, ans_decode, ans_encode
from gradcomp.coding.general_purpose import general_purpose_bits
from gradcomp.coding.huffman import CorruptStreamError, HuffmanCode
from gradcomp.coding.lz78 import lz78_bits, lz78_decode, lz78_encode
from gradcomp.coding.pmf import (
    cross_entropy_bits,
    empirical_pmf,
    entropy_bits,
    floor_and_renormalise,
    model_magnitude_pmf,
    model_pmf,
)

__all__ = [
    "CorruptStreamError",
    "HuffmanCode",
    "ans_bits",
    "ans_decode",
    "ans_encode",
    "cross_entropy_bits",
    "empirical_pmf",
    "entropy_bits",
    "floor_and_renormalise",
    "general_purpose_bits",
    "lz78_bits",
    "lz78_decode",
    "lz78_encode",
    "model_magnitude_pmf",
    "model_pmf",
]
