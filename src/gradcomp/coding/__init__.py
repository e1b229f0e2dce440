"""Lossless coders of quantized symbols (paper L) and the pmfs they are designed from.

One coder per module: :mod:`~gradcomp.coding.huffman` (canonical Huffman, real bitstreams),
:mod:`~gradcomp.coding.ans` (ANS reference), :mod:`~gradcomp.coding.lz78` (paper L's
baseline), :mod:`~gradcomp.coding.general_purpose` (zlib, bz2, lzma, zstd);
:mod:`~gradcomp.coding.pmf` holds the symbol pmfs and their entropies.
"""

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
