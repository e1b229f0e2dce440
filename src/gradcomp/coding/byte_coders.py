"""Coders of the tensor's FP8 byte string (one byte per entry, C order): the bytes as they
are (``fp8``), general-purpose compressors on them (``zlib``, ``bz2``, ``lzma``, ``zstd``,
:mod:`~gradcomp.coding.general_purpose`'s levels), and the reference sizes LZ78 (paper L's
baseline, its code length) and lzma after shuffling the entries (``lzma_shuffled``: what the
entries' order, hence their dependence, is worth to lzma).
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import torch

from gradcomp.coding.base import Bitstream, Bound, Coder, TensorSymbols
from gradcomp.coding.counts import SymbolCounts
from gradcomp.coding.general_purpose import (
    LZMA_PRESET,
    METHODS,
    ZSTD_LEVEL,
    brotli_decompress,
    brotli_max,
    lzma_raw,
    lzma_raw_decompress,
)
from gradcomp.coding.lz78 import lz78_bits
from gradcomp.quantization.grids import FixedGrid

try:
    import zstandard
except ImportError:  # pragma: no cover - depends on the environment
    zstandard = None  # type: ignore[assignment]  # optional module: None when absent

__all__ = ["BytesCoder", "Fp8Coder", "Lz78Size", "ShuffledLzmaSize", "fp8_bytes", "from_fp8"]

SHUFFLE_SEED = 0


def fp8_bytes(values: np.ndarray, grid: FixedGrid) -> bytes:
    """The 8-bit codes of quantized values (E5M2 bit patterns for the FP8 grid).

    ``values`` are in data units (levels of ``grid``); the bytes are those of
    ``values / grid.scale``, the values in grid units. For grids other than ``fp8_e5m2``
    the signed symbol index is the code.
    """
    if grid.name == "fp8_e5m2":
        unit = np.asarray(values, dtype=np.float64) / grid.scale
        codes = torch.from_numpy(np.ascontiguousarray(unit, dtype=np.float32))
        return codes.to(torch.float8_e5m2).view(torch.uint8).numpy().tobytes()
    symbols, _ = grid.encode(values)
    if grid.n_levels > 256:
        raise ValueError(f"grid {grid.name} has {grid.n_levels} levels: not a byte code")
    return symbols.astype(np.uint8).tobytes()


def from_fp8(data: bytes, grid: FixedGrid, shape: tuple[int, int]) -> np.ndarray:
    """Inverse of :func:`fp8_bytes` on grid values: the signed symbols, int64 ``shape``."""
    codes = np.frombuffer(data, dtype=np.uint8)
    if grid.name == "fp8_e5m2":
        unit = torch.from_numpy(codes.copy()).view(torch.float8_e5m2).to(torch.float64).numpy()
        symbols, _ = grid.encode(unit * grid.scale)
    else:
        symbols = codes.astype(np.int64)
    return symbols.reshape(shape)


def _bytes_of(x: TensorSymbols) -> bytes:
    return fp8_bytes(x.grid.decode(x.symbols), x.grid)


class Fp8Coder(Coder):
    """The FP8 bytes themselves: 8 bits per entry."""

    name = "fp8"

    def encode(self, x: TensorSymbols) -> Bitstream:
        return Bitstream(side=(), payload=(_bytes_of(x),), shape=x.shape)

    def counted_bits(self, c: SymbolCounts) -> tuple[int, int]:
        """(payload, side) bits: one byte per entry."""
        return 8 * c.numel, 0

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]):
        return from_fp8(cast(bytes, stream.payload[0]), grid, stream.shape)


_METHODS: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    "zlib": (lambda b: zlib.compress(b, 9), zlib.decompress),
    "bz2": (lambda b: bz2.compress(b, 9), bz2.decompress),
    "lzma": (lambda b: lzma.compress(b, preset=LZMA_PRESET), lzma.decompress),
    "lzma_raw": (lzma_raw, lzma_raw_decompress),
    "brotli": (brotli_max, brotli_decompress),
}
if zstandard is not None:
    _METHODS["zstd"] = (
        lambda b: zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(b),
        lambda b: zstandard.ZstdDecompressor().decompress(b),
    )
assert set(_METHODS) == set(METHODS), "levels defined in one place"


class BytesCoder(Coder):
    """A general-purpose compressor (``method``: zlib, bz2, lzma, lzma_raw, brotli, zstd) on
    the FP8 bytes."""

    def __init__(self, method: str = "lzma") -> None:
        if method not in _METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {sorted(_METHODS)}")
        self.method = self.name = method

    def encode(self, x: TensorSymbols) -> Bitstream:
        return Bitstream(side=(), payload=(_METHODS[self.method][0](_bytes_of(x)),), shape=x.shape)

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]):
        data = _METHODS[self.method][1](cast(bytes, stream.payload[0]))
        return from_fp8(data, grid, stream.shape)


class Lz78Size(Bound):
    """LZ78 code length of the FP8 bytes (paper L's baseline; :func:`lz78_bits`)."""

    name = "lz78"

    def bits(self, x: TensorSymbols) -> float:
        return float(lz78_bits(_bytes_of(x)))


class ShuffledLzmaSize(Bound):
    """lzma on the FP8 bytes in a random order (seed :data:`SHUFFLE_SEED`): the entries'
    dependence removed, their histogram kept."""

    name = "lzma_shuffled"

    def bits(self, x: TensorSymbols) -> float:
        data = np.frombuffer(_bytes_of(x), dtype=np.uint8)
        perm = np.random.default_rng(SHUFFLE_SEED).permutation(data.size)
        return 8.0 * len(lzma.compress(data[perm].tobytes(), preset=LZMA_PRESET))
