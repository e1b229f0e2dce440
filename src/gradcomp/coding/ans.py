"""ANS (asymmetric numeral systems) with a categorical model: the practical entropy-coder
reference, through constriction. Sizes in bits; symbols are integers in ``[0, L)``."""

from __future__ import annotations

from typing import Any

import constriction
import numpy as np

from gradcomp.coding.huffman import CorruptStreamError, symbols_array
from gradcomp.coding.pmf import normalised

__all__ = ["ans_bits", "ans_decode", "ans_encode", "categorical_model"]


def categorical_model(pmf: Any) -> Any:
    """constriction's categorical model of a pmf (normalised first), every symbol codable."""
    p = normalised(pmf, "pmf")
    # constriction gives every symbol at least its smallest representable probability, so
    # symbols with pmf 0 remain codable (at a high cost).
    return constriction.stream.model.Categorical(p, perfect=False)


def ans_encode(symbols: Any, pmf: Any) -> np.ndarray:
    """ANS-encode i.i.d. symbols with a categorical model; returns uint32 words (constriction
    ``AnsCoder``, its native word order)."""
    s = symbols_array(symbols)
    if s.size and (s.min() < 0 or s.max() >= np.asarray(pmf).size):
        raise ValueError("symbols outside the alphabet of the pmf")
    coder = constriction.stream.stack.AnsCoder()
    if s.size and np.asarray(pmf).size > 1:  # a one-symbol alphabet needs no bits
        coder.encode_reverse(s.astype(np.int32), categorical_model(pmf))
    return np.asarray(coder.get_compressed(), dtype=np.uint32)


def ans_decode(words: Any, n: int, pmf: Any) -> np.ndarray:
    """Inverse of :func:`ans_encode`: the first ``n`` symbols, int64 (n,)."""
    if n == 0 or np.asarray(pmf).size == 1:
        return np.zeros(n, dtype=np.int64)
    coder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
    try:
        out = coder.decode(categorical_model(pmf), n)
    except Exception as exc:  # constriction raises its own error types
        raise CorruptStreamError(f"ANS decode failed: {exc}") from None
    return np.asarray(out, dtype=np.int64)


def ans_bits(symbols: Any, pmf: Any) -> int:
    """Size of the ANS stream in bits (32 per uint32 word actually produced)."""
    return 32 * int(ans_encode(symbols, pmf).size)
