"""Adaptive context ANS coder: each magnitude is coded with the counts of the magnitudes seen
so far in its context, the magnitude class of the previous entry in the same row; then each
non-zero entry's sign, in the context of the previous entry's sign (zero, +, -), which
neighbouring kernel taps of one input channel tend to share. No table is sent: the decoder
keeps the same counts. Two ANS streams (magnitudes, signs), up to 32 bits of flush each.

Order. Each row (output channel) is cut into lanes of :data:`LANE` entries; the coder walks
the lanes in parallel, one position (step) at a time, so that the decoder, at step t, knows
every context (from step t - 1) and decodes each context's symbols of the step in one call.
A lane's first entry has context :data:`START`.

Model. Context c's pmf is ``counts_c + PRIOR * pooled + FLOOR``, ``pooled`` the pmf of all
magnitudes seen so far (uniform before any), so a new context starts from the tensor's law
rather than from nothing. Counts are updated after each block of a context's symbols; a
block is at most as long as the context's count so far (at least :data:`MIN_BLOCK`), so the
model adapts after 16, 32, 64, ... symbols and then once per step.

Units: sizes in bits; symbols are the grid's magnitude indices and sign states, int64
(rows, cols).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import constriction
import numpy as np

from gradcomp.coding.ans import categorical_model
from gradcomp.coding.base import Bitstream, Coder, TensorSymbols
from gradcomp.quantization.grids import GridQuantizer

__all__ = [
    "LANE", "START", "ContextCoder", "decode_lanes", "encode_lanes", "lane_contexts",
    "magnitude_class", "sign_class", "sign_states",
]  # fmt: skip

LANE = 64
CLASS_WIDTH = 3  # magnitude indices per context class (FP8 E5M2: 4 per binade)
START = 0  # context of a lane's first entry
PRIOR, FLOOR, MIN_BLOCK = 64.0, 1e-3, 16


def magnitude_class(mags: np.ndarray) -> np.ndarray:
    """Context class (uint8, >= 1) of magnitude symbols: 1 for zero, then one class per
    :data:`CLASS_WIDTH` magnitude indices (capped at 255)."""
    m = np.asarray(mags).astype(np.int16)
    return np.minimum(1 + (m + CLASS_WIDTH - 1) // CLASS_WIDTH, 255).astype(np.uint8)


def to_lanes(a: np.ndarray, fill: Any = 0) -> np.ndarray:
    """(rows, cols) -> (LANE, n_lanes), lane-major: row r's entries ``[k LANE, (k+1) LANE)``
    are lane ``r * ceil(cols / LANE) + k``; ``fill`` past a row's end."""
    rows, cols = a.shape
    seg = -(-cols // LANE)
    padded = np.full((rows, seg * LANE), fill, dtype=a.dtype)
    padded[:, :cols] = a
    return np.ascontiguousarray(padded.reshape(rows * seg, LANE).T)


def from_lanes(lanes_: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Inverse of :func:`to_lanes`."""
    rows, cols = shape
    return lanes_.T.reshape(rows, -1)[:, :cols]


def lane_contexts(values: np.ndarray, classes=None) -> np.ndarray:
    """The context of every entry of ``values`` (rows, cols): uint8 of the same shape,
    ``classes`` (default :func:`magnitude_class`) of the previous entry, START at a lane's
    start."""
    v = np.asarray(values)
    ctx = np.full(v.shape, START, dtype=np.uint8)
    if v.size:
        ctx[:, 1:] = (classes or magnitude_class)(v[:, :-1])
        ctx[:, ::LANE] = START
    return ctx


class _Model:
    """Adaptive counts of every context, and the block schedule; shared by both sides."""

    def __init__(self, n_symbols: int) -> None:
        self.counts = np.zeros((256, n_symbols), dtype=np.float64)
        self.seen = np.zeros(256, dtype=np.int64)
        self.pooled = np.zeros(n_symbols, dtype=np.float64)

    def blocks(self, c: int, n: int) -> Iterator[tuple[int, int, Any]]:
        """``(start, stop, model)`` of context ``c``'s next ``n`` symbols; the caller
        :meth:`update` s after each block."""
        pos = 0
        while pos < n:
            stop = min(n, pos + max(MIN_BLOCK, int(self.seen[c])))
            total = self.pooled.sum()
            prior = self.pooled / total if total else 1.0 / self.pooled.size
            yield pos, stop, categorical_model(self.counts[c] + PRIOR * prior + FLOOR)
            pos = stop

    def update(self, c: int, symbols: np.ndarray) -> None:
        add = np.bincount(symbols, minlength=self.pooled.size)
        self.counts[c] += add
        self.seen[c] += symbols.size
        self.pooled += add


def _groups(ctx: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Stable order of one step's contexts and ``(context, start, stop)`` of each group."""
    order = np.argsort(ctx, kind="stable")  # radix sort on uint8
    counts = np.bincount(ctx, minlength=256)
    present = np.flatnonzero(counts)
    ends = np.cumsum(counts)[present]
    starts = ends - counts[present]
    return order, list(zip(present.tolist(), starts.tolist(), ends.tolist(), strict=True))


def encode_lanes(values: np.ndarray, coded, n_symbols: int, classes) -> np.ndarray:
    """ANS words (uint32) of the entries of ``values`` (ints (rows, cols) below ``n_symbols``
    <= 255) where ``coded(values)`` (None: all) holds, each coded in its context
    ``classes(previous entry of the row)``, START at a lane's start; the other entries are
    known to the decoder and not coded."""
    if not values.size:
        return np.zeros(0, dtype=np.uint32)
    v = to_lanes(values.astype(np.uint8), fill=255)
    ok = (v != 255) if coded is None else (v != 255) & coded(v)
    ctx = np.empty_like(v)
    ctx[0] = START
    ctx[1:] = classes(v[:-1])  # padding only ever follows a row's last entry
    model = _Model(n_symbols)
    plan = []  # (symbols, model) in decode order
    for t in range(LANE):
        sym, c_t = v[t][ok[t]], ctx[t][ok[t]]
        if not sym.size:
            continue
        order, groups = _groups(c_t)
        sym = sym[order].astype(np.int32)
        for c, lo, hi in groups:
            for a, b, m in model.blocks(c, hi - lo):
                block = sym[lo + a : lo + b]
                plan.append((block, m))
                model.update(c, block)
    coder = constriction.stream.stack.AnsCoder()
    for symbols, m in reversed(plan):
        coder.encode_reverse(symbols, m)
    return np.asarray(coder.get_compressed(), dtype=np.uint32)


def decode_lanes(
    words: np.ndarray, coded: np.ndarray | None, shape: tuple[int, int], n_symbols: int, classes
) -> np.ndarray:
    """Inverse of :func:`encode_lanes`: uint8 values of ``shape``, 0 where not coded."""
    if not shape[0] * shape[1]:
        return np.zeros(shape, dtype=np.uint8)
    decoder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
    ok = to_lanes(np.ones(shape, bool) if coded is None else coded, fill=False)
    v = np.zeros(ok.shape, dtype=np.uint8)
    model = _Model(n_symbols)
    for t in range(LANE):
        c_t = np.full(ok.shape[1], START, np.uint8) if t == 0 else classes(v[t - 1])
        where = np.flatnonzero(ok[t])
        if not where.size:
            continue
        order, groups = _groups(c_t[where])
        out = np.empty(where.size, dtype=np.uint8)
        for c, lo, hi in groups:
            for a, b, m in model.blocks(c, hi - lo):
                got = np.asarray(decoder.decode(m, b - a), dtype=np.int32)
                out[lo + a : lo + b] = got
                model.update(c, got)
        v[t, where[order]] = out
    return from_lanes(v, shape)


def _tables(grid: GridQuantizer) -> tuple[np.ndarray, np.ndarray]:
    """Per signed symbol: its magnitude (uint8) and sign state (uint8: 0 zero, 1 +, 2 -)."""
    mags, _ = grid.signed_to_magnitude(np.arange(grid.n_levels))
    state = np.where(grid.magnitude_levels[mags] == 0, 0, 1 + (grid.levels < 0))
    return mags.astype(np.uint8), state.astype(np.uint8)


def sign_states(symbols: np.ndarray, grid: GridQuantizer) -> np.ndarray:
    """Sign state of every entry, uint8 of the symbols' shape: 0 on the zero level,
    1 positive, 2 negative."""
    return _tables(grid)[1][symbols]


def sign_class(states: np.ndarray) -> np.ndarray:
    """Context of a sign: the previous entry's sign state + 1 (uint8; START = 0)."""
    return (np.asarray(states) + 1).astype(np.uint8)


class ContextCoder(Coder):
    """Adaptive context ANS (constriction); see the module docstring."""

    name = "ans_context"
    color = "C9"
    in_figure = True

    def encode(self, x: TensorSymbols) -> Bitstream:
        if x.grid.n_magnitudes > 255:
            raise ValueError(f"{self.name} codes at most 255 magnitudes")
        mag_of, state_of = _tables(x.grid)
        mags, states = mag_of[x.symbols], state_of[x.symbols]
        mag_words = encode_lanes(mags, None, x.grid.n_magnitudes, magnitude_class)
        sign_words = encode_lanes(states, lambda v: v > 0, 3, sign_class)
        return Bitstream(side=(), payload=(mag_words, sign_words), shape=x.shape)

    def decode(self, stream: Bitstream, grid: GridQuantizer, fits: Mapping[str, Any]) -> np.ndarray:
        mag_words, sign_words = stream.payload
        mags = decode_lanes(mag_words, None, stream.shape, grid.n_magnitudes, magnitude_class)
        nonzero = (grid.magnitude_levels != 0)[mags]
        states = decode_lanes(sign_words, nonzero, stream.shape, 3, sign_class)
        # signed symbol of (magnitude, state): a table over the K x 3 pairs
        mag_of, state_of = _tables(grid)
        table = np.zeros((grid.n_magnitudes, 3), dtype=np.int64)
        table[mag_of, state_of] = np.arange(grid.n_levels)
        return table[mags, states]
