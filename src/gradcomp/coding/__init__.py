"""Lossless coders of quantized gradient symbols (paper L): the coder interface, the built-in
coders and the registry that names them, their ideal code lengths, and the codes under them
(Huffman, ANS, LZ78, Elias, general-purpose compressors). Knows no study: it sits on
``gradcomp.quantization`` and ``gradcomp.distributions``, below ``gradcomp.lossless``."""

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
