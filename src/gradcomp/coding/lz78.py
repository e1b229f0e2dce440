"""LZ78 on byte strings: paper L's baseline coder (code length, encode and decode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradcomp.coding.huffman import CorruptStreamError

__all__ = ["lz78_bits", "lz78_decode", "lz78_encode"]


def _lz78_parse(data: bytes) -> tuple[list[int], int]:
    """LZ78 parse: ``(keys, tail)``.

    Phrase k (1-based) extends dictionary entry ``i`` (0 = empty phrase) by byte ``b`` and is
    recorded as ``key = i << 8 | b``.  ``tail`` is the dictionary entry matched by the
    unfinished last phrase (0 if the data ends on a phrase boundary).
    """
    trie: dict[int, int] = {}
    get = trie.get
    keys: list[int] = []
    emit = keys.append
    node = 0
    next_id = 1
    for byte in data:
        key = (node << 8) | byte
        child = get(key)
        if child is None:
            trie[key] = next_id
            next_id += 1
            emit(key)
            node = 0
        else:
            node = child
    return keys, node


def _index_bits(n_phrases: int) -> int:
    """``sum_{k=1..n} ceil(log2 k)``: phrase k's index is one of k dictionary entries."""
    total, width = 0, 1
    while (1 << (width - 1)) < n_phrases:  # indices j in [2^(w-1), 2^w) need w bits
        lo, hi = 1 << (width - 1), min(1 << width, n_phrases)
        total += (hi - lo) * width
        width += 1
    return total


def lz78_bits(data: bytes) -> int:
    """LZ78 code length of ``data`` in bits.

    Each complete phrase costs ``ceil(log2 k)`` bits for the index of its longest known prefix
    (the k-th phrase chooses among k dictionary entries, including the empty phrase; the first
    costs 0 bits) plus 8 bits for the next byte.  If the data ends inside a phrase, that final
    partial phrase is sent as an index only (``ceil(log2(P+1))`` bits after P complete
    phrases, no byte); the decoder knows the data length from the container header.
    """
    keys, tail = _lz78_parse(bytes(data))
    n_phrases = len(keys) + (tail != 0)
    return _index_bits(n_phrases) + 8 * len(keys)


def lz78_encode(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """LZ78 parse as ``(indices int64 (P',), next_bytes uint8 (P,))``.

    ``P' = P + 1`` when the data ends inside a phrase (the last index has no byte).
    """
    keys, tail = _lz78_parse(bytes(data))
    k = np.asarray(keys, dtype=np.int64)
    indices = k >> 8
    if tail:
        indices = np.append(indices, tail)
    return indices, (k & 0xFF).astype(np.uint8)


def lz78_decode(indices: Any, next_bytes: Any) -> bytes:
    """Inverse of :func:`lz78_encode`."""
    idx = np.asarray(indices, dtype=np.int64).tolist()
    if isinstance(next_bytes, bytes | bytearray | memoryview):
        nxt = bytes(next_bytes)
    else:
        nxt = np.asarray(next_bytes, dtype=np.uint8).tobytes()
    if not len(nxt) <= len(idx) <= len(nxt) + 1:
        raise CorruptStreamError("LZ78: index and byte counts do not match")
    phrases = [b""]
    out = []
    for k, i in enumerate(idx):
        if not 0 <= i < len(phrases):
            raise CorruptStreamError(f"LZ78: phrase {k + 1} refers to unknown entry {i}")
        if k < len(nxt):
            phrase = phrases[i] + nxt[k : k + 1]
            phrases.append(phrase)
        else:
            phrase = phrases[i]
        out.append(phrase)
    return b"".join(out)
