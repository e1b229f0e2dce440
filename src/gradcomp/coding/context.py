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
    m = np.asarray(mags, dtype=np.int64)
    return np.minimum(1 + (m + CLASS_WIDTH - 1) // CLASS_WIDTH, 255).astype(np.uint8)


def lanes(shape: tuple[int, int]) -> tuple[np.ndarray, int]:
    """``(index, n_lanes)``: ``index`` int64 (LANE, n_lanes) holds, for each step and lane,
    the flat C-order position in the (rows, cols) tensor, -1 past a row's end."""
    rows, cols = shape
    seg = -(-cols // LANE) if cols else 0
    pos = np.full((rows, seg * LANE), -1, dtype=np.int64)
    pos[:, :cols] = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    index = pos.reshape(rows * seg, LANE).T.copy()
    return index, rows * seg


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
        self.pooled = np.zeros(n_symbols, dtype=np.float64)

    def blocks(self, c: int, n: int) -> Iterator[tuple[int, int, Any]]:
        """``(start, stop, model)`` of context ``c``'s next ``n`` symbols; the caller
        :meth:`update` s after each block."""
        pos = 0
        while pos < n:
            seen = self.counts[c].sum()
            stop = min(n, pos + max(MIN_BLOCK, int(seen)))
            total = self.pooled.sum()
            prior = self.pooled / total if total else 1.0 / self.pooled.size
            yield pos, stop, categorical_model(self.counts[c] + PRIOR * prior + FLOOR)
            pos = stop

    def update(self, c: int, symbols: np.ndarray) -> None:
        add = np.bincount(symbols, minlength=self.pooled.size)
        self.counts[c] += add
        self.pooled += add


def encode_lanes(values: np.ndarray, coded: np.ndarray, n_symbols: int, classes) -> np.ndarray:
    """ANS words (uint32) of ``values[coded]`` (int (rows, cols) in ``[0, n_symbols)``),
    each coded in its context ``classes(previous entry of the row)`` (START at a lane's
    start); entries outside ``coded`` are known to the decoder and not coded."""
    index, _ = lanes(values.shape)
    flat, ok_flat = values.ravel(), coded.ravel()
    ctx_flat = lane_contexts(values, classes).ravel()
    model = _Model(n_symbols)
    plan = []  # (symbols, model) in decode order
    for t in range(LANE):
        valid = index[t][index[t] >= 0]
        valid = valid[ok_flat[valid]]
        if valid.size == 0:
            continue
        ctx = ctx_flat[valid]
        order = np.argsort(ctx, kind="stable")
        sym, ctx = flat[valid][order], ctx[order]
        present = np.flatnonzero(np.bincount(ctx, minlength=256))
        starts = np.searchsorted(ctx, present, side="left")
        ends = np.append(starts[1:], ctx.size)
        for c, lo, hi in zip(present.tolist(), starts.tolist(), ends.tolist(), strict=True):
            group = sym[lo:hi]
            for a, b, m in model.blocks(c, group.size):
                plan.append((group[a:b].astype(np.int32), m))
                model.update(c, group[a:b])
    coder = constriction.stream.stack.AnsCoder()
    for symbols, m in reversed(plan):
        coder.encode_reverse(symbols, m)
    return np.asarray(coder.get_compressed(), dtype=np.uint32)


def decode_lanes(words: np.ndarray, coded: np.ndarray, n_symbols: int, classes) -> np.ndarray:
    """Inverse of :func:`encode_lanes`: int64 values of ``coded.shape``, 0 where not coded."""
    rows, cols = coded.shape
    decoder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
    index, n_lanes = lanes((rows, cols))
    flat, ok_flat = np.zeros(rows * cols, dtype=np.int64), coded.ravel()
    model = _Model(n_symbols)
    prev = np.zeros(n_lanes, dtype=np.int64)
    for t in range(LANE):
        pos = index[t]
        ok = pos >= 0
        ok[ok] = ok_flat[pos[ok]]
        ctx = np.full(n_lanes, START, dtype=np.uint8) if t == 0 else classes(prev)
        ctx = ctx[ok]
        order = np.argsort(ctx, kind="stable")
        out = np.empty(ctx.size, dtype=np.int64)
        counts = np.bincount(ctx, minlength=256)
        lo = 0
        for c in np.flatnonzero(counts).tolist():
            n = int(counts[c])
            for a, b, m in model.blocks(c, n):
                got = np.asarray(decoder.decode(m, b - a), dtype=np.int64)
                out[lo + a : lo + b] = got
                model.update(c, got)
            lo += n
        column = np.zeros(n_lanes, dtype=np.int64)
        column[np.flatnonzero(ok)[order]] = out
        flat[pos[ok]] = column[ok]
        prev = column
    return flat.reshape(rows, cols)


def sign_states(symbols_signs: np.ndarray, mags: np.ndarray, grid: GridQuantizer) -> np.ndarray:
    """Sign state of every entry, int64 (rows, cols): 0 on the zero level, 1 positive,
    2 negative."""
    negative = grid.levels[symbols_signs] < 0
    return np.where(grid.magnitude_levels[mags] == 0, 0, 1 + negative)


def sign_class(states: np.ndarray) -> np.ndarray:
    """Context of a sign: the previous entry's sign state + 1 (uint8; START = 0)."""
    return (np.asarray(states) + 1).astype(np.uint8)


class ContextCoder(Coder):
    """Adaptive context ANS (constriction); see the module docstring."""

    name = "ans_context"
    color = "C9"
    in_figure = True

    def encode(self, x: TensorSymbols) -> Bitstream:
        mags = x.magnitudes
        states = sign_states(x.symbols, mags, x.grid)
        everything = np.ones(mags.shape, dtype=bool)
        mag_words = encode_lanes(mags, everything, x.grid.n_magnitudes, magnitude_class)
        sign_words = encode_lanes(states, states > 0, 3, sign_class)
        return Bitstream(side=(), payload=(mag_words, sign_words), shape=x.shape)

    def decode(self, stream: Bitstream, grid: GridQuantizer, fits: Mapping[str, Any]) -> np.ndarray:
        mag_words, sign_words = stream.payload
        everything = np.ones(stream.shape, dtype=bool)
        mags = decode_lanes(mag_words, everything, grid.n_magnitudes, magnitude_class)
        nonzero = grid.magnitude_levels[mags] != 0
        states = decode_lanes(sign_words, nonzero, 3, sign_class)
        return grid.magnitude_to_signed(mags, states[nonzero] == 2)
