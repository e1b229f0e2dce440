"""The codeword lengths of a Huffman code of given weights (the two-queue construction,
compiled with numba on first use): what :class:`gradcomp.coding.huffman.HuffmanCode` builds
its canonical code on, and what an entropy-constrained design charges its indices."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

__all__ = ["huffman_lengths"]


def huffman_lengths(weights: np.ndarray) -> np.ndarray:
    """Codeword lengths (int64, shape of ``weights``) of a Huffman code for non-negative
    float ``weights`` (L,): 0 for a zero weight, 1 for a lone positive one.

    The two-queue construction: leaves sorted by weight (then symbol), merged nodes
    queued in the order they are made (their weights never decrease), the two lightest
    nodes of the two queues merged each step, a leaf first on equal weights.
    """
    support = np.flatnonzero(weights > 0)
    n = support.size
    lengths = np.zeros(weights.size, dtype=np.int64)
    if n <= 1:
        lengths[support] = 1
        return lengths
    order = support[np.argsort(weights[support], kind="stable")]
    depth = _compiled_depths()(np.ascontiguousarray(weights[order], dtype=np.float64))
    lengths[order] = depth
    return lengths


@functools.cache
def _compiled_depths() -> Callable[[np.ndarray], np.ndarray]:
    """:func:`_two_queue_depths` compiled, on first use: numba is imported then, not with
    this module (importing it adds ~0.3 s to every process that imports the coders)."""
    from gradcomp.coding.binary_rc import njit

    return njit(_two_queue_depths)


def _two_queue_depths(leaf: np.ndarray) -> np.ndarray:
    """Depths (int64, shape of ``leaf``) of the sorted leaves ``leaf`` (float64, n >= 2,
    non-decreasing) in the two-queue Huffman tree of :func:`huffman_lengths` (compiled by
    :func:`_compiled_depths`: this loop was a third of whole-model coding's CPU time on
    resnet20)."""
    n = leaf.size
    merged = np.empty(n - 1, dtype=np.float64)
    parent = np.zeros(2 * n - 1, dtype=np.int64)  # 0..n-1 the leaves, n + k the k-th merge
    i = j = 0
    for k in range(n - 1):
        a = b = 0
        wa = wb = 0.0
        for side in range(2):
            if j >= k or (i < n and leaf[i] <= merged[j]):
                node, w = i, leaf[i]
                i += 1
            else:
                node, w = n + j, merged[j]
                j += 1
            if side == 0:
                a, wa = node, w
            else:
                b, wb = node, w
        merged[k] = wa + wb
        parent[a] = n + k
        parent[b] = n + k
    depth = np.zeros(2 * n - 1, dtype=np.int64)
    for node in range(2 * n - 3, -1, -1):  # a parent's index is above its children's
        depth[node] = depth[parent[node]] + 1
    return depth[:n]
