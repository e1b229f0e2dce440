"""Paper L's i.i.d. magnitude coders: every entry's magnitude coded with one pmf for the
whole tensor, the sign of each non-zero entry sent raw.

- :class:`HuffmanModelCoder` (``huffman_<family>``): Huffman code of the fitted law's
  magnitude-bin pmf (the fitted atom ``p0`` in the zero bin), floored on the whole alphabet
  so the decoder rebuilds it from the parameters alone;
- :class:`AnsModelCoder` (``ans_<family>``): ANS (constriction) with the same pmf;
- :class:`HuffmanEmpiricalCoder` (``huffman_empirical``): Huffman on the data's own pmf.

Side information of the model coders: the fitted parameters as float32 (32 bits each, in
the family's scipy order), a flag bit and, when it is set, ``p0`` as float32. The decoder
reads them back, so both sides design the code from the float32 values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

import constriction
import numpy as np
from bitarray import bitarray, frozenbitarray

from gradcomp.coding.ans import categorical_model
from gradcomp.coding.base import Bitstream, Coder, TensorSymbols, sign_bits, with_signs
from gradcomp.coding.counts import SymbolCounts
from gradcomp.coding.elias import BitReader, pack_fields
from gradcomp.coding.huffman import HuffmanCode
from gradcomp.coding.huffman_lengths import huffman_lengths
from gradcomp.coding.pmf import floor_and_renormalise, model_magnitude_pmf
from gradcomp.distributions import FAMILIES, FittedDistribution, param_names
from gradcomp.quantization.grids import FixedGrid

__all__ = ["AnsModelCoder", "HuffmanEmpiricalCoder", "HuffmanModelCoder", "model_pmf_of"]

PMF_FLOOR = 1e-12
CACHED = 64
ANS_PRECISION = 24  # bits of constriction's fixed-point probabilities (its default coder)
_pmfs: dict[tuple, np.ndarray] = {}
_sides: dict[tuple, tuple] = {}


def _remembered(cache: dict, key: tuple, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by ``make()`` the first time; the last :data:`CACHED` kept (a
    tensor's coders and bounds share its fits' side information and pmfs)."""
    if key not in cache:
        if len(cache) >= CACHED:
            cache.pop(next(iter(cache)))
        cache[key] = make()
    return cache[key]


def _fit_key(fitted: FittedDistribution) -> tuple:
    return fitted.family, tuple(sorted(fitted.params.items())), fitted.p0


def model_pmf_of(fitted: FittedDistribution, grid: FixedGrid) -> np.ndarray:
    """Floored magnitude-bin pmf (K,) of a fitted law (its atom ``p0`` in the zero bin);
    read-only."""

    def make() -> np.ndarray:
        pmf = model_magnitude_pmf(fitted.cdf, grid.magnitude_edges, sf=fitted.sf)
        pmf = floor_and_renormalise(pmf, PMF_FLOOR)
        pmf.flags.writeable = False
        return pmf

    return _remembered(_pmfs, (*_fit_key(fitted), grid.levels.tobytes()), make)


def _f32(v: float) -> int:
    return int(np.float32(v).view(np.uint32))


def write_fit(fitted: FittedDistribution) -> tuple[bitarray, FittedDistribution]:
    """The side information of a fit (read-only), and the fit as the decoder reads it back
    (float32)."""
    return _remembered(_sides, _fit_key(fitted), lambda: _written(fitted))


def _written(fitted: FittedDistribution) -> tuple[bitarray, FittedDistribution]:
    names = param_names(fitted.family)
    values = [_f32(fitted.params[k]) for k in names]
    fields, widths = [*values, int(fitted.p0 > 0)], [32] * len(values) + [1]
    if fitted.p0 > 0:
        fields.append(_f32(fitted.p0))
        widths.append(32)
    side = frozenbitarray(pack_fields(np.array(fields, dtype=np.uint64), np.array(widths)))
    return side, read_fit(side, fitted.family)


def read_fit(side: bitarray, family: str) -> FittedDistribution:
    """Inverse of :func:`write_fit`'s side information."""
    reader = BitReader(side)

    def f32() -> float:
        return float(np.uint32(reader.read(32)).view(np.float32))

    params = {k: f32() for k in param_names(family)}
    p0 = f32() if reader.read(1) else 0.0
    return FittedDistribution(family, params, 0, float("nan"), p0=p0)


class _ModelCoder(Coder):
    raw_signs = True

    def __init__(self, family: str = "gennorm") -> None:
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; expected one of {sorted(FAMILIES)}")
        self.family = family
        self.needs = (family,)

    def _fit(self, x: TensorSymbols | SymbolCounts) -> FittedDistribution:
        if self.family not in x.fits:
            raise ValueError(f"{self.name} needs a {self.family} fit of the tensor")
        return x.fits[self.family]


class HuffmanModelCoder(_ModelCoder):
    """Huffman code designed from the fitted family's magnitude pmf."""

    def __init__(self, family: str = "gennorm") -> None:
        super().__init__(family)
        self.name = f"huffman_{family}"

    def encode(self, x: TensorSymbols) -> Bitstream:
        side, fitted = write_fit(self._fit(x))
        code = HuffmanCode.from_pmf(model_pmf_of(fitted, x.grid))
        payload = (code.encode(x.magnitudes), sign_bits(x.signs))
        return Bitstream(side=(side,), payload=payload, shape=x.shape)

    def counted_bits(self, c: SymbolCounts) -> tuple[int, int]:
        """(payload, side) bits of :meth:`encode`'s stream, from the counts alone."""
        side, fitted = write_fit(self._fit(c))
        lengths = huffman_lengths(model_pmf_of(fitted, c.grid))  # those of encode's code
        return int(c.magnitudes @ lengths) + c.n_nonzero, len(side)

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]):
        code = HuffmanCode.from_pmf(
            model_pmf_of(read_fit(cast(bitarray, stream.side[0]), self.family), grid)
        )
        bits, signs = cast(tuple[bitarray, bitarray], stream.payload)
        mags = code.decode(bits, int(np.prod(stream.shape))).reshape(stream.shape)
        return with_signs(grid, mags, signs)


class AnsModelCoder(_ModelCoder):
    """ANS (constriction) with the fitted family's magnitude pmf."""

    def __init__(self, family: str = "gennorm") -> None:
        super().__init__(family)
        self.name = f"ans_{family}"

    def encode(self, x: TensorSymbols) -> Bitstream:
        side, fitted = write_fit(self._fit(x))
        coder = constriction.stream.stack.AnsCoder()
        mags = x.magnitudes.ravel().astype(np.int32)
        coder.encode_reverse(mags, categorical_model(model_pmf_of(fitted, x.grid)))
        words = np.asarray(coder.get_compressed(), dtype=np.uint32)
        return Bitstream(side=(side,), payload=(words, sign_bits(x.signs)), shape=x.shape)

    def counted_bits(self, c: SymbolCounts) -> tuple[int, int]:
        """(payload, side) bits from the counts: the ideal code length of the pmf as the
        coder quantizes it (:data:`ANS_PRECISION` bits of fixed point, every symbol at least
        one unit) plus half a word (what the final state adds on average), in whole 32-bit
        words, and the raw signs. Not the stream's exact size, which depends on the
        symbols' order and on constriction's own rounding of the pmf: within a word or two
        of it, a few more where many entries fall on symbols the model floors
        (tests/lossless/test_stream_counts.py)."""
        side, fitted = write_fit(self._fit(c))
        unit = 2.0**ANS_PRECISION
        q = np.maximum(np.round(model_pmf_of(fitted, c.grid) * unit), 1.0) / unit
        n = c.magnitudes
        used = n > 0
        ideal = float(-(n[used] * np.log2(q[used])).sum())
        return 32 * math.ceil((ideal + 16) / 32) + c.n_nonzero, len(side)

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]):
        pmf = model_pmf_of(read_fit(cast(bitarray, stream.side[0]), self.family), grid)
        words, signs = cast(tuple[np.ndarray, bitarray], stream.payload)
        decoder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
        mags = np.asarray(decoder.decode(categorical_model(pmf), int(np.prod(stream.shape))))
        return with_signs(grid, mags.astype(np.int64).reshape(stream.shape), signs)


class HuffmanEmpiricalCoder(Coder):
    """Huffman on the tensor's own magnitude pmf; the code table
    (:meth:`HuffmanCode.side_info_bits`: 8 + K codeword lengths) is the side information."""

    name = "huffman_empirical"
    raw_signs = True

    def encode(self, x: TensorSymbols) -> Bitstream:
        mags = x.magnitudes
        code = HuffmanCode.from_pmf(np.bincount(mags.ravel(), minlength=x.grid.n_magnitudes))
        w = code.length_width
        side = pack_fields(
            np.concatenate([[w], code.lengths]).astype(np.uint64),
            np.concatenate([[8], np.full(code.n_symbols, w)]),
        )
        payload = (code.encode(mags), sign_bits(x.signs))
        return Bitstream(side=(side,), payload=payload, shape=x.shape)

    def counted_bits(self, c: SymbolCounts) -> tuple[int, int]:
        """(payload, side) bits of :meth:`encode`'s stream, from the counts alone."""
        lengths = huffman_lengths(c.magnitudes.astype(np.float64))  # those of encode's code
        code_table = HuffmanCode.table_bits(lengths)
        return int(c.magnitudes @ lengths) + c.n_nonzero, code_table

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]):
        reader = BitReader(cast(bitarray, stream.side[0]))
        w = reader.read(8)
        code = HuffmanCode([reader.read(w) for _ in range(grid.n_magnitudes)])
        bits, signs = cast(tuple[bitarray, bitarray], stream.payload)
        mags = code.decode(bits, int(np.prod(stream.shape))).reshape(stream.shape)
        return with_signs(grid, mags, signs)
