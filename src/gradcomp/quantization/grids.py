"""Fixed scalar quantization grids: minifloats (FP8 E5M2 / E4M3, FP4 E2M1) and uniform grids.

A grid is a sorted set of reconstruction levels; a value is mapped to the nearest level by
comparing it against the midpoints between adjacent levels (paper L's "nearest value by
midpoints").  Symbols are indices into the sorted level array.

Conventions (shared by every grid):

* ``levels`` are in *data units*: ``levels = scale * unit_levels``.  The FP8 grids of paper L
  quantize raw gradient values, so their default ``scale`` is 1.0 and tiny gradients fall into
  the subnormals or onto zero.  A ``scale`` other than 1.0 is equivalent to quantizing
  ``x / scale`` on the unit grid (exactly so when ``scale`` is a power of two).
* Ties (a value exactly on a midpoint) go to the level of smaller magnitude, i.e. towards zero,
  so a symmetric grid quantizes ``-x`` to the mirror image of ``x``.  (Hardware FP8 conversion
  rounds ties to even instead; the two differ only on exact midpoints.)
* Values beyond the extreme levels (including +-inf) saturate to the extreme level and are
  counted; NaN is rejected with ``ValueError``.
* Symbols are ``np.int64`` arrays.

Sign-magnitude form (paper L codes magnitudes and adds one sign bit per non-zero entry): the
magnitude alphabet is the set of non-negative levels of a symmetric grid, in ascending order;
the sign of an entry is sent only when its magnitude level is non-zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gradcomp.quantization.nearest_level import nearest_index

__all__ = [
    "EXPONENT_BITS",
    "GRIDS",
    "SCALINGS",
    "FixedGrid",
    "amax_exponent",
    "as_numpy",
    "fp_grid",
    "fp_levels",
    "get_grid",
    "uniform_grid",
    "uniform_levels",
]


def as_numpy(x: Any) -> np.ndarray:
    """Return ``x`` as a numpy array; torch tensors are detached and moved to the CPU
    (dtypes numpy lacks, such as bfloat16, are widened to float32 first)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        try:
            return x.numpy()
        except TypeError:
            return x.float().numpy()
    return np.asarray(x)


def fp_levels(
    exp_bits: int, man_bits: int, bias: int | None = None, *, special: str = "ieee"
) -> np.ndarray:
    """All finite values of a sign/exponent/mantissa minifloat format, sorted, float64.

    Value of a code with exponent field ``e`` and mantissa field ``m``:
    ``(m / 2**man_bits) * 2**(1 - bias)`` for ``e == 0`` (subnormals, including zero) and
    ``(1 + m / 2**man_bits) * 2**(e - bias)`` otherwise.  Zero appears once (no -0).

    Args:
        exp_bits, man_bits: field widths (sign bit implied).
        bias: exponent bias; default ``2**(exp_bits - 1) - 1``.
        special: which codes are *not* finite values and are left out:
            ``"ieee"``: the all-ones exponent is reserved for inf/NaN (FP8 E5M2);
            ``"fn"``: every exponent is finite except the single all-ones code
            (exponent and mantissa all ones), which is NaN (OCP FP8 E4M3, torch
            ``float8_e4m3fn``);
            ``"none"``: every code is a finite value (FP4 E2M1).

    Returns:
        float64 array of shape (L,), symmetric about zero, strictly increasing.
    """
    if exp_bits < 1 or man_bits < 0:
        raise ValueError(f"need exp_bits >= 1 and man_bits >= 0, got {exp_bits}, {man_bits}")
    if bias is None:
        bias = 2 ** (exp_bits - 1) - 1
    e = np.arange(2**exp_bits)[:, None]
    m = np.arange(2**man_bits)[None, :]
    frac = m / 2.0**man_bits
    mag = np.where(e == 0, frac * 2.0 ** (1 - bias), (1.0 + frac) * np.exp2(e - bias))
    if special == "ieee":
        mag = mag[:-1]
    elif special == "fn":
        mag = mag.ravel()[:-1]
    elif special != "none":
        raise ValueError(f"special must be 'ieee', 'fn' or 'none', got {special!r}")
    pos = np.unique(mag.ravel())  # sorted; zero once
    return np.concatenate([-pos[:0:-1], pos])


def uniform_levels(bits: int, max_abs: float) -> np.ndarray:
    """``2**bits`` equally spaced levels on ``[-max_abs, max_abs]`` (both ends are levels).

    The grid is exactly symmetric (negative half is the mirror of the positive half); with an
    even number of levels it has no zero level.  float64, shape (2**bits,).
    """
    if bits < 1 or bits != int(bits):
        raise ValueError(f"bits must be a positive integer, got {bits}")
    bits = int(bits)
    if not (max_abs > 0 and np.isfinite(max_abs)):
        raise ValueError(f"max_abs must be positive and finite, got {max_abs}")
    n = 2**bits
    pos = max_abs * (2 * np.arange(n // 2) + 1) / (n - 1)
    return np.concatenate([-pos[::-1], pos])


class FixedGrid:
    """A fixed, sorted grid of levels (a number format's values) and rounding to its nearest level.

    Args:
        unit_levels: reconstruction levels in grid units (any order; must be distinct, finite).
        scale: positive factor; ``levels = scale * unit_levels`` are the levels in data units.
        name, params: how to rebuild this grid with :func:`get_grid` (``get_grid(name,
            **params)``); ``name=None`` marks a grid that can only be rebuilt from its levels.

    Attributes:
        levels: float64 (L,), sorted, data units.
        midpoints: float64 (L-1,), decision thresholds between adjacent levels.
    """

    def __init__(
        self,
        unit_levels: Any,
        *,
        scale: float = 1.0,
        name: str | None = None,
        params: dict[str, float] | None = None,
    ) -> None:
        unit = np.sort(np.asarray(unit_levels, dtype=np.float64).ravel())
        if unit.size == 0 or not np.all(np.isfinite(unit)):
            raise ValueError("levels must be a non-empty array of finite values")
        if np.any(np.diff(unit) <= 0):
            raise ValueError("levels must be distinct")
        if not (scale > 0 and np.isfinite(scale)):
            raise ValueError(f"scale must be positive and finite, got {scale}")
        self.scale = float(scale)
        self.name = name
        self.params = dict(params or {})
        self.levels = unit * self.scale
        self.midpoints = 0.5 * (self.levels[1:] + self.levels[:-1])
        self._magnitude_tables: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:
        return f"FixedGrid(name={self.name!r}, n_levels={self.n_levels}, scale={self.scale:g})"

    @property
    def n_levels(self) -> int:
        """Number of levels L (the signed alphabet size)."""
        return int(self.levels.size)

    @property
    def unit_levels(self) -> np.ndarray:
        """Levels in grid units (``levels / scale``), float64 (L,)."""
        return self.levels / self.scale

    @property
    def edges(self) -> np.ndarray:
        """Bin edges in data units, float64 (L+1,): ``[-inf, midpoints..., +inf]``.

        Bin k is ``(edges[k], edges[k+1])``; which side owns a boundary point follows the
        tie rule (towards zero) and has probability zero under a continuous model.
        """
        return np.concatenate([[-np.inf], self.midpoints, [np.inf]])

    @property
    def is_symmetric(self) -> bool:
        """True when the levels are exactly mirror-symmetric about zero."""
        return bool(np.array_equal(self.levels, -self.levels[::-1]))

    def encode(self, x: Any) -> tuple[np.ndarray, int]:
        """Quantize ``x`` to level indices.

        Args:
            x: array-like or torch tensor of any shape (float32 or float64), data units.

        Returns:
            ``(symbols, n_saturated)``: int64 array of the shape of ``x`` with indices into
            ``levels``, and the number of entries strictly beyond the extreme levels (they
            are mapped to the extreme level).
        """
        v = np.asarray(as_numpy(x), dtype=np.float64)
        if np.isnan(v).any():
            raise ValueError("cannot quantize NaN")
        sym = nearest_index(self.midpoints, v)  # the one tie rule: towards zero
        n_sat = int(np.count_nonzero(v > self.levels[-1]) + np.count_nonzero(v < self.levels[0]))
        return sym.astype(np.int64, copy=False), n_sat

    def decode(self, symbols: Any) -> np.ndarray:
        """Levels (data units, float64) for an integer symbol array of any shape."""
        return self.levels[np.asarray(symbols, dtype=np.int64)]

    def quantize(self, x: Any) -> np.ndarray:
        """``decode(encode(x)[0])``: the quantized values, float64, shape of ``x``."""
        return self.decode(self.encode(x)[0])

    # ---- sign-magnitude form -------------------------------------------------------------

    def _magnitude(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(magnitude levels, magnitude index per signed symbol, negative flag per symbol)."""
        if self._magnitude_tables is None:
            if not self.is_symmetric:
                raise ValueError("sign-magnitude coding needs a grid symmetric about zero")
            mags = self.levels[self.levels >= 0]
            mag_of = np.searchsorted(mags, np.abs(self.levels)).astype(np.int64)
            self._magnitude_tables = (mags, mag_of, self.levels < 0)
        return self._magnitude_tables

    @property
    def magnitude_levels(self) -> np.ndarray:
        """Non-negative levels, ascending, float64 (K,): the magnitude alphabet."""
        return self._magnitude()[0]

    @property
    def n_magnitudes(self) -> int:
        """Size K of the magnitude alphabet."""
        return int(self.magnitude_levels.size)

    @property
    def magnitude_edges(self) -> np.ndarray:
        """Magnitude bin edges, float64 (K+1,): ``[0, midpoints of magnitude levels..., inf]``.

        Magnitude bin k holds the entries with ``|g|`` in ``[edges[k], edges[k+1])``.
        """
        mags = self.magnitude_levels
        return np.concatenate([[0.0], 0.5 * (mags[1:] + mags[:-1]), [np.inf]])

    def signed_to_magnitude(self, symbols: Any) -> tuple[np.ndarray, np.ndarray]:
        """Split signed symbols into ``(magnitude symbols int64 same shape, signs)``.

        ``signs`` is a flat bool array (True = negative) with one entry per *non-zero*
        magnitude, in C order: exactly the sign bits that must be transmitted.
        """
        _, mag_of, neg = self._magnitude()
        s = np.asarray(symbols, dtype=np.int64)
        mags = mag_of[s]
        nonzero = self.magnitude_levels[mags] != 0
        return mags, neg[s][nonzero].ravel()

    def magnitude_to_signed(self, magnitudes: Any, signs: Any) -> np.ndarray:
        """Inverse of :meth:`signed_to_magnitude`; int64 symbols of the shape of ``magnitudes``."""
        mags_lv = self.magnitude_levels
        m = np.asarray(magnitudes, dtype=np.int64)
        signs = np.asarray(signs, dtype=bool).ravel()
        nonzero = mags_lv[m] != 0
        if signs.size != np.count_nonzero(nonzero):
            raise ValueError(
                f"{np.count_nonzero(nonzero)} non-zero magnitudes need as many "
                f"signs, got {signs.size}"
            )
        pos_index = m + (self.n_levels - mags_lv.size)
        neg = np.zeros(m.shape, dtype=bool)
        neg[nonzero] = signs
        return np.where(neg, self.n_levels - 1 - pos_index, pos_index)

    def encode_magnitude(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Quantize and split: ``(magnitude symbols int64 shape of x, signs of non-zeros)``.

        Saturation is not reported here; use ``encode`` + :meth:`signed_to_magnitude` when
        the count is needed.
        """
        return self.signed_to_magnitude(self.encode(x)[0])

    def decode_magnitude(self, magnitudes: Any, signs: Any) -> np.ndarray:
        """Values (data units, float64) from magnitude symbols and non-zero signs."""
        return self.decode(self.magnitude_to_signed(magnitudes, signs))


def fp_grid(
    exp_bits: int,
    man_bits: int,
    bias: int | None = None,
    *,
    special: str = "ieee",
    scale: float = 1.0,
    name: str | None = None,
) -> FixedGrid:
    """Quantizer on the finite values of a minifloat format (see :func:`fp_levels`)."""
    params = {"scale": float(scale)} if name is not None else None
    return FixedGrid(
        fp_levels(exp_bits, man_bits, bias, special=special), scale=scale, name=name, params=params
    )


def uniform_grid(bits: int, max_abs: float) -> FixedGrid:
    """Symmetric uniform quantizer with ``2**bits`` levels on ``[-max_abs, max_abs]``."""
    return FixedGrid(
        uniform_levels(bits, max_abs),
        name="uniform",
        params={"bits": int(bits), "max_abs": float(max_abs)},
    )


def _fp_factory(
    exp_bits: int, man_bits: int, bias: int, special: str, name: str
) -> Callable[..., FixedGrid]:
    def make(scale: float = 1.0) -> FixedGrid:
        return fp_grid(exp_bits, man_bits, bias, special=special, scale=scale, name=name)

    make.__doc__ = (
        f"{name}: E{exp_bits}M{man_bits}, bias {bias}, special={special!r}; "
        "``scale`` in data units per grid unit."
    )
    return make


#: Named grid constructors; ``GRIDS[name](**params)`` builds the quantizer.
#: ``fp8_e5m2``: 247 values, max 57344 (IEEE-style, top exponent reserved, = torch float8_e5m2);
#: ``fp8_e4m3``: 253 values, max 448 (all exponents finite, only S.1111.111 is NaN,
#: = torch float8_e4m3fn); ``fp4_e2m1``: 15 values {0, .5, 1, 1.5, 2, 3, 4, 6} and negatives;
#: ``uniform``: ``uniform_grid(bits, max_abs)``.
GRIDS: dict[str, Callable[..., FixedGrid]] = {
    "fp8_e5m2": _fp_factory(5, 2, 15, "ieee", "fp8_e5m2"),
    "fp8_e4m3": _fp_factory(4, 3, 7, "fn", "fp8_e4m3"),
    "fp4_e2m1": _fp_factory(2, 1, 1, "none", "fp4_e2m1"),
    "uniform": uniform_grid,
}


#: How a tensor is put on a grid: as it is (``none``), or scaled by the power of two of
#: :func:`amax_exponent` (``amax``; the exponent travels as side information).
SCALINGS = ("none", "amax")
#: Bits of that exponent, a signed integer (``amax`` scaling's side information per tensor).
EXPONENT_BITS = 8


def amax_exponent(amax: float, unit_max: float) -> int:
    """Power-of-two scaling of FP8 training recipes: the largest integer ``k`` with
    ``amax * 2**k <= unit_max``.

    Multiplying a tensor whose largest magnitude is ``amax`` (data units) by ``2**k`` puts
    that magnitude in the top binade of a grid whose largest level is ``unit_max`` (grid
    units), without saturating; the grid in data units is then ``scale = 2**-k``, and ``k``
    is the side information a decoder needs.  ``amax = 0`` (nothing to scale) gives 0.
    """
    if not (math.isfinite(amax) and amax >= 0 and unit_max > 0):
        raise ValueError(f"need a finite amax >= 0 and unit_max > 0, got {amax}, {unit_max}")
    if amax == 0:
        return 0
    _, exponent = math.frexp(unit_max / amax)  # ratio = mantissa * 2**exponent, mantissa < 1
    k = exponent - 1  # 2**k <= ratio < 2**(k+1), up to the rounding of the division
    while amax * 2.0**k > unit_max:
        k -= 1
    while amax * 2.0 ** (k + 1) <= unit_max:
        k += 1
    return k


def get_grid(name: str, **kw: Any) -> FixedGrid:
    """Build a named grid: ``get_grid("fp8_e5m2")``, ``get_grid("uniform", bits=4, max_abs=.1)``.

    Example: FP8 E5M2 (247 signed levels) rounds 0.1 to 0.09375 and 1000 to 1024::

        >>> import numpy as np
        >>> grid = get_grid("fp8_e5m2")
        >>> grid.n_levels, grid.quantize(np.array([0.1, 1000.0])).tolist()
        (247, [0.09375, 1024.0])
    """
    try:
        factory = GRIDS[name]
    except KeyError:
        raise ValueError(f"unknown grid {name!r}; known: {sorted(GRIDS)}") from None
    return factory(**kw)
