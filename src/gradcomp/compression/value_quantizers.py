"""Value quantizers: the sent entries of one tensor (a 1-D float tensor) to what goes on the wire.

This module holds the interface (:class:`ValueQuantizer`, :class:`QuantizedValues`) and the
simple kinds; each model-based quantizer has a module of its own, and
:mod:`gradcomp.compression.registry` maps kinds to classes. A class's attributes say which
spec keys it takes (:mod:`gradcomp.compression.specs` checks them):

=================  ===========================================  ===========================
kind               what is sent per value                       side information
=================  ===========================================  ===========================
none               float32                                      --
float16            IEEE half                                    --
uniform            index of 2^R levels on [min, max]            min, max
lloyd              index of 2^R Lloyd levels of a fitted law    the law's parameters (+ tau)
kmeans             index of 2^R weighted k-means levels         the 2^R levels
gaussian_channel   a test-channel output, R bits                mean, std
=================  ===========================================  ===========================

Level quantizers use :class:`gradcomp.quantization.nearest_level.NearestLevels` (nearest level,
thresholds at midpoints); the receiver recomputes the levels from the side information.

The byte format (:mod:`gradcomp.wire`): a kind writes its side information with
:meth:`ValueQuantizer.write_side` and a receiver, with its own object built from the spec,
reads it back with :meth:`ValueQuantizer.read_side`, which rebuilds the levels. Side values
travel as float32, and the sender quantizes with the levels it rebuilds from the *rounded*
values (:func:`as_sent`), so that the receiver's levels are the sender's, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
import torch

from gradcomp.coding.fields import FieldReader, FieldWriter
from gradcomp.compression.rates import FLOAT_BITS
from gradcomp.quantization.minmax_levels import uniform_minmax_levels
from gradcomp.quantization.nearest_level import NearestLevels, nearest_index

__all__ = [
    "Float16",
    "PassThrough",
    "QuantizedValues",
    "UniformQuantizer",
    "ValueQuantizer",
    "as_sent",
    "level_bits",
    "level_values",
    "read_side_floats",
    "write_side_floats",
]


@dataclass
class QuantizedValues:
    """The value part of one tensor's payload.

    kind : quantizer kind; n : number of values.
    indices : int64 (n,) level indices (level quantizers) or None.
    values : transmitted values (n,) (float32, float16 or the channel output) or None.
    levels : float64 (L,) reconstruction levels (known to the receiver; sent only when
        ``levels_sent``).
    side : parameters sent, 32 bits each (name -> value).
    value_bits : fixed-rate bits per value.
    """

    kind: str
    n: int
    indices: torch.Tensor | None = None
    values: torch.Tensor | None = None
    levels: np.ndarray | None = None
    side: dict[str, float] = field(default_factory=dict)
    value_bits: int = FLOAT_BITS
    levels_sent: bool = False

    @property
    def side_bits(self) -> int:
        n_levels = len(self.levels) if (self.levels_sent and self.levels is not None) else 0
        return FLOAT_BITS * (len(self.side) + n_levels)

    @property
    def payload_bits(self) -> int:
        """Fixed-rate payload: ``value_bits`` per value."""
        return self.n * self.value_bits


def as_sent(x: float) -> float:
    """``x`` rounded to the float32 a side value travels as (what both ends then use)."""
    return float(np.float32(x))


def write_side_floats(w: FieldWriter, side: Mapping[str, float], names: tuple[str, ...]) -> None:
    """The side values ``names`` of ``side`` as float32 (they must be :func:`as_sent` already)."""
    if set(side) != set(names):
        raise ValueError(f"side information {sorted(side)} is not the kind's {list(names)}")
    values = np.array([side[k] for k in names], dtype=np.float64)
    if not np.array_equal(values.astype(np.float32).astype(np.float64), values, equal_nan=True):
        raise ValueError(f"side values {dict(side)} are not float32 numbers (see as_sent)")
    w.array(values.astype(np.float32), "f4")


def read_side_floats(r: FieldReader, names: tuple[str, ...]) -> dict[str, float]:
    """The float32 side values ``names`` (as float)."""
    values = r.array("f4", len(names), ", ".join(names))
    return {k: float(v) for k, v in zip(names, values, strict=True)}


def level_bits(n_levels: int) -> int:
    """Fixed-rate bits of one index among ``n_levels`` levels: ``ceil(log2 L)`` (0 for one)."""
    return max(1, math.ceil(math.log2(n_levels))) if n_levels > 1 else 0


class ValueQuantizer:
    """Maps a 1-D float tensor of sent values to :class:`QuantizedValues` and back.

    Class attributes for spec checking: ``fixed_rate`` (bits per value when the kind has one,
    else None and the spec needs a ``rate``), ``takes_M``, ``takes_family``. With
    ``uses_full_tensor`` the compressor passes ``full=`` (the whole tensor before
    sparsification, 1-D) to :meth:`encode`, for designs that model what was dropped; with
    ``uses_step`` it passes ``step=`` (the update's index in the compressor's sequence, 0
    first), for draws that a receiver must repeat; ``nearest_labels``: the indices are the
    values' nearest levels (what memory mode ``m22_slip`` relabels).

    Byte format: ``wire_dtype`` is the numpy dtype of the values a value-sending kind puts
    on the wire (``"f4"``, ``"f2"``, ``"f8"``), None for a kind that sends level indices in
    0..:meth:`n_symbols` - 1; ``ideal`` marks a kind whose bits are an ideal rate rather than a
    code (its values travel as a stand-in and its rows say ``ideal``).
    """

    kind: ClassVar[str] = "base"
    #: The kind's code in the wire's header (:data:`gradcomp.wire.records.KIND_CODES`): one
    #: per kind, set by each kind's own class (1..255), never reused for another kind.
    wire_code: ClassVar[int] = 0
    #: the kind as a reader names it (:func:`gradcomp.names.kind`)
    title: ClassVar[str] = ""
    fixed_rate: ClassVar[int | None] = None
    takes_M: ClassVar[bool] = False
    takes_family: ClassVar[bool] = False
    uses_full_tensor: ClassVar[bool] = False
    uses_step: ClassVar[bool] = False
    wire_dtype: ClassVar[str | None] = None
    ideal: ClassVar[bool] = False
    #: whether the indices sent are nearest-level labels of ``levels`` (memory mode
    #: ``m22_slip`` relabels them)
    nearest_labels: ClassVar[bool] = False
    #: whether ``slip: true`` changes the kind (the authors' released variant); the spec of
    #: a kind without one refuses it
    takes_slip: ClassVar[bool] = False
    #: the ``lloyd_fit`` values the kind honours (a kind that fits a law); none: it fits none
    #: and its spec refuses the key
    lloyd_fits: ClassVar[tuple[str, ...]] = ()
    #: whether ``huffman`` changes what the kind sends (not for a kind that sends values, nor
    #: for a one-bit index, its own code); the spec of a kind without refuses ``huffman: false``
    huffman_acts: ClassVar[bool] = True

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], **kwargs: Any) -> ValueQuantizer:
        """Build from a checked spec (:func:`gradcomp.compression.specs.check_spec`)."""
        return cls()

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """What :meth:`encode` may change: its random generators' states and its numbers
        (e.g. float8's saturation count). A compressor takes it before an update and hands it
        to :meth:`restore` when the update is refused, so the next update encodes as a
        never-refused sender's would; a kind with other state overrides both."""
        out: dict[str, Any] = {}
        for key, value in vars(self).items():
            if isinstance(value, torch.Generator):
                out[key] = value.get_state()
            elif isinstance(value, (bool, int, float)):
                out[key] = value
        return out

    def restore(self, state: Mapping[str, Any]) -> None:
        """Put back what :meth:`state` took."""
        for key, value in state.items():
            current = getattr(self, key)
            if isinstance(current, torch.Generator):
                current.set_state(value)
            else:
                setattr(self, key, value)

    def decode(self, q: QuantizedValues, indices: torch.Tensor | None = None) -> torch.Tensor:
        """Float64 reconstruction (n,); ``indices`` overrides ``q.indices`` (e.g. decoded
        from the Huffman bitstream)."""
        idx = q.indices if indices is None else indices
        if idx is not None:
            return NearestLevels.from_levels(q.levels).dequantize(idx)
        return cast(torch.Tensor, q.values).to(torch.float64)  # a value kind's

    def n_symbols(self) -> int:
        """Alphabet size of the level indices a level kind sends (what a code table covers)."""
        raise NotImplementedError(f"{self.kind} sends values, not level indices")

    def table_size(self, n_levels: int) -> int:
        """The symbols a tensor's code table covers when its side information gives
        ``n_levels`` levels: the alphabet (:meth:`n_symbols`); a kind whose design sizes
        its own alphabet covers its levels."""
        return self.n_symbols()

    def known_code(self, n_levels: int) -> Any:
        """The entropy code both ends know without a table for a tensor whose side
        information gives ``n_levels`` levels (QSGD's Elias code, the sign's one-bit code,
        the entropy-constrained design's adaptive code), or None: a Huffman code table travels
        with the indices."""
        return None

    def encode_many(
        self, items: Sequence[tuple[torch.Tensor, str, Mapping[str, Any]]]
    ) -> Sequence[QuantizedValues]:
        """:meth:`encode` of several tensors, ``(values, name, keyword arguments)`` each, the
        same results; a kind whose levels take work (a design per tensor) does that work for
        all of them at once."""
        return [self.encode(values, name, **extra) for values, name, extra in items]

    def write_side(self, q: QuantizedValues, w: FieldWriter) -> None:
        """Sender: the side information of ``q`` (a non-empty tensor's), in the kind's order."""

    def read_side(self, r: FieldReader, n: int, *, name: str, step: int) -> QuantizedValues:
        """Receiver: what :meth:`write_side` wrote for ``n`` sent values of tensor ``name``, as
        a :class:`QuantizedValues` without indices or values (its levels rebuilt), ready for
        :meth:`decode` with the indices or values that follow."""
        return QuantizedValues(self.kind, n, value_bits=self.fixed_rate or FLOAT_BITS)

    def read_sides(
        self, heads: Sequence[tuple[FieldReader, int, str, int]]
    ) -> Sequence[QuantizedValues]:
        """:meth:`read_side` of several tensors' records, ``(reader, n, name, step)`` each, the
        same results (see :meth:`encode_many`)."""
        return [self.read_side(r, n, name=name, step=step) for r, n, name, step in heads]


def level_values(
    kind: str,
    values: torch.Tensor,
    levels: np.ndarray,
    side: dict[str, float],
    *,
    levels_sent: bool = False,
) -> QuantizedValues:
    """Nearest-level indices of ``values`` (1-D) as :class:`QuantizedValues` of ``kind``."""
    indices = nearest_index(NearestLevels.from_levels(levels).thresholds, values)
    return QuantizedValues(
        kind,
        values.numel(),
        indices=indices,
        levels=np.asarray(levels, dtype=np.float64),
        side=side,
        value_bits=level_bits(len(levels)),
        levels_sent=levels_sent,
    )


class PassThrough(ValueQuantizer):
    """``none``: values at float32.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: a float64
    entry beyond float32's range): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "none"
    wire_code = 1  # its byte in the wire's header: never reused
    title = "float32"
    fixed_rate = FLOAT_BITS
    wire_dtype = "f4"
    huffman_acts = False

    def encode(self, values, name=""):
        return QuantizedValues(
            self.kind, values.numel(), values=values.to(torch.float32), value_bits=FLOAT_BITS
        )


class Float16(ValueQuantizer):
    """``float16``: values rounded to IEEE half precision.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: an entry
    above 65504): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "float16"
    wire_code = 2  # its byte in the wire's header: never reused
    title = "float16"
    fixed_rate = 16
    wire_dtype = "f2"
    huffman_acts = False

    def encode(self, values, name=""):
        return QuantizedValues(
            self.kind, values.numel(), values=values.to(torch.float16), value_bits=16
        )


class UniformQuantizer(ValueQuantizer):
    """``uniform``: 2^R levels from min to max of the values (2^R + 1 with ``slip``), or
    ``levels`` of them (any count from 2, at ``R = ceil(log2 levels)`` fixed-width bits), so
    that the reference curve has points between the powers of two.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: min or max
    beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "uniform"
    wire_code = 4  # its byte in the wire's header: never reused
    title = "uniform"
    nearest_labels = True
    takes_slip = True
    #: spec options (key -> default); :mod:`~gradcomp.compression.specs` checks them
    options: ClassVar[dict[str, object]] = {"levels": None}

    def __init__(self, rate: int, *, slip: bool = False, levels: int | None = None):
        self.rate, self.slip = int(rate), bool(slip)
        self.n_levels = None if levels is None else int(levels)

    @classmethod
    def from_spec(cls, spec, **kwargs):
        return cls(spec["rate"], slip=spec["slip"], levels=spec.get("levels"))

    @classmethod
    def check_option(cls, key: str, value: object) -> str | None:
        """Why ``value`` is not a valid ``levels`` (None: 2^R), or None."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
            return f"must be an integer >= 2 (levels from min to max), got {value!r}"
        if value > 2**16:
            return f"must be at most 65536 (16-bit indices), got {value!r}"
        return None

    @classmethod
    def check_together(cls, spec) -> tuple[str, str] | None:
        """``levels`` needs the rate of its fixed-width index, ``ceil(log2 levels)``, and no
        ``slip`` (whose extra level is the authors' 2^R + 1)."""
        levels = spec.get("levels")
        if levels is None:
            return None
        if spec["slip"]:
            return "levels", "the authors' slip adds its own level to 2^R; give one of the two"
        need = level_bits(int(levels))
        if spec["rate"] != need:
            return "rate", f"{levels} levels are sent as {need}-bit indices: rate must be {need}"
        return None

    side_names = ("min", "max")

    def levels(self, side: Mapping[str, float]) -> np.ndarray:
        if self.n_levels is not None:
            return np.linspace(float(side["min"]), float(side["max"]), self.n_levels)
        return uniform_minmax_levels(side["min"], side["max"], self.rate, extra_level=self.slip)

    def n_symbols(self) -> int:
        if self.n_levels is not None:
            return self.n_levels
        return 2**self.rate + int(self.slip)

    def encode(self, values, name=""):
        side = {"min": as_sent(float(values.min())), "max": as_sent(float(values.max()))}
        return level_values(self.kind, values, self.levels(side), side)

    def write_side(self, q, w):
        write_side_floats(w, q.side, self.side_names)

    def read_side(self, r, n, *, name, step):
        side = read_side_floats(r, self.side_names)
        bits = level_bits(self.n_symbols())
        return QuantizedValues(self.kind, n, levels=self.levels(side), side=side, value_bits=bits)
