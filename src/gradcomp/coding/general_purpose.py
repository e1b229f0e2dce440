"""General-purpose byte compressors (zlib, bz2, lzma, zstd): a practitioner's first try."""

from __future__ import annotations

import bz2
import lzma
import zlib

try:  # optional: only used for the zstd entry of general_purpose_bits
    import zstandard
except ImportError:  # pragma: no cover - depends on the environment
    zstandard = None

__all__ = ["general_purpose_bits"]

ZLIB_LEVEL, BZ2_LEVEL, LZMA_PRESET, ZSTD_LEVEL = 9, 9, 6, 19


def general_purpose_bits(data: bytes) -> dict[str, int]:
    """Compressed size in bits of ``data`` under zlib (level 9), bz2 (9), lzma (preset 6,
    xz container) and zstd (level 19, only if ``zstandard`` is importable)."""
    data = bytes(data)
    out = {
        "zlib": len(zlib.compress(data, ZLIB_LEVEL)),
        "bz2": len(bz2.compress(data, BZ2_LEVEL)),
        "lzma": len(lzma.compress(data, preset=LZMA_PRESET)),
    }
    if zstandard is not None:
        out["zstd"] = len(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data))
    return {k: 8 * v for k, v in out.items()}
