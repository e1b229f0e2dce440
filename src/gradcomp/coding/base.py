"""The coder interface of paper L's study: one tensor's quantized symbols in, a real bitstream
out, and back.

A :class:`Coder` turns the signed grid symbols of one tensor, int64 ``(rows, cols)`` (rows =
output channels, C order within a row; see :func:`as_rows`) into a :class:`Bitstream` and
decodes it exactly. A :class:`Bound` only states a size in bits (an ideal code length or a
reference compressor run without a decoder). Both see a :class:`TensorSymbols`: the symbols,
the grid they index and the tensor's fitted laws (family name -> ``FittedDistribution``).

The decoder knows what a container header would carry for free: the grid, the shape and the
coder's name. Everything else it needs is in the stream and is counted in ``bits``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from bitarray import bitarray

from gradcomp.quantization.grids import FixedGrid

__all__ = [
    "Bitstream", "Bound", "Coder", "TensorSymbols", "as_rows", "part_bits", "sign_bits",
    "with_signs",
]  # fmt: skip

Part = bitarray | bytes | np.ndarray  # bit string, byte string, or uint32 ANS words


def part_bits(part: Part) -> int:
    """Length in bits of one stream part: a ``bitarray``, ``bytes``, or uint32 words."""
    if isinstance(part, bitarray):
        return len(part)
    if isinstance(part, bytes | bytearray):
        return 8 * len(part)
    words = np.asarray(part)
    if words.dtype != np.uint32:
        raise TypeError(f"array stream parts must be uint32 words, got {words.dtype}")
    return 32 * int(words.size)


@dataclass
class Bitstream:
    """What a coder sends for one tensor.

    Attributes:
        side: side-information parts (model parameters, code tables), read first.
        payload: the coded symbols' parts.
        shape: ``(rows, cols)`` of the symbols (container header, not counted).
    """

    side: tuple[Part, ...]
    payload: tuple[Part, ...]
    shape: tuple[int, int]

    @property
    def side_bits(self) -> int:
        return sum(part_bits(p) for p in self.side)

    @property
    def payload_bits(self) -> int:
        return sum(part_bits(p) for p in self.payload)

    @property
    def bits(self) -> int:
        """Everything sent: payload plus side information, in bits."""
        return self.side_bits + self.payload_bits


def as_rows(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(rows, cols)`` of a tensor: rows = first dimension (output channels of a weight),
    cols = the product of the others; a 1-D tensor is one row."""
    if len(shape) <= 1:
        return 1, int(np.prod(shape, dtype=np.int64))
    return int(shape[0]), int(np.prod(shape[1:], dtype=np.int64))


@dataclass(frozen=True)
class TensorSymbols:
    """One tensor to code.

    Attributes:
        symbols: int64 ``(rows, cols)``, signed grid symbols in ``[0, grid.n_levels)``.
        grid: the quantizer grid (data units).
        fits: family name -> fitted law of the tensor's entries (data units).
    """

    symbols: np.ndarray
    grid: FixedGrid
    fits: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        s = np.asarray(self.symbols)
        if s.ndim != 2 or not np.issubdtype(s.dtype, np.integer):
            raise ValueError(f"symbols must be a 2-D integer array, got {s.dtype} {s.shape}")
        if s.size and (s.min() < 0 or s.max() >= self.grid.n_levels):
            raise ValueError(f"symbols outside the grid's alphabet [0, {self.grid.n_levels})")

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.symbols.shape)  # type: ignore[return-value]

    @property
    def magnitudes(self) -> np.ndarray:
        """Magnitude symbols, int64 ``(rows, cols)``."""
        return self.grid.signed_to_magnitude(self.symbols)[0]

    @property
    def signs(self) -> np.ndarray:
        """Signs of the non-zero entries (True = negative), flat, C order."""
        return self.grid.signed_to_magnitude(self.symbols)[1]


class Coder:
    """A lossless coder: :meth:`encode` and its exact inverse :meth:`decode`.

    Class attributes (read by the registry and T1): ``name`` (the ``coder`` column),
    ``raw_signs`` (the payload holds one raw sign bit per non-zero entry, which the ``slip``
    accounting re-charges as one per magnitude symbol). Options are constructor keywords.
    """

    name: str = ""  # a class attribute, which a coder with options sets per instance
    raw_signs: ClassVar[bool] = False
    needs: tuple[str, ...] = ()  # families whose fits the coder reads

    def encode(self, x: TensorSymbols) -> Bitstream:
        raise NotImplementedError

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]) -> np.ndarray:
        """The signed symbols, int64 ``stream.shape``, from the stream, the grid and the
        fits (the header's knowledge)."""
        raise NotImplementedError


class Bound:
    """A size without a decoder: an ideal code length, or a reference compressor's output.
    :meth:`bits` returns bits (float)."""

    name: str = ""
    raw_signs: ClassVar[bool] = False
    needs: tuple[str, ...] = ()

    def bits(self, x: TensorSymbols) -> float:
        raise NotImplementedError

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this machine gives no size (its sizes are NaN), or None."""
        return None


def sign_bits(signs: np.ndarray) -> bitarray:
    """One raw bit per non-zero entry (1 = negative), as a ``bitarray``."""
    out = bitarray(endian="big")
    out.pack(np.asarray(signs, dtype=bool).tobytes())
    return out


def with_signs(grid: FixedGrid, mags: np.ndarray, bits: bitarray) -> np.ndarray:
    """Signed symbols from magnitude symbols and the raw sign bits of :func:`sign_bits`."""
    n_nonzero = int(np.count_nonzero(grid.magnitude_levels[mags] != 0))
    if len(bits) != n_nonzero:
        raise ValueError(f"{n_nonzero} non-zero magnitudes but {len(bits)} sign bits")
    return grid.magnitude_to_signed(mags, np.frombuffer(bits.unpack(), dtype=bool))
