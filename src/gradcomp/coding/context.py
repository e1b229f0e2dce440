"""Adaptive context ANS coder: each entry's signed symbol is coded in one ANS stream with
a pmf that is the product of two adaptive models, no table sent (the decoder keeps the
same counts):

- its magnitude, with the counts of the magnitudes seen so far in its context: the
  magnitude class of the previous entry in the same row (rule ``previous``), or the larger
  class of the two previous entries (``max2``);
- if non-zero, its sign, with the counts of the signs seen so far in the context (previous
  entry's sign state: zero, +, -; the entry's own magnitude class, capped at
  :data:`SIGN_CLASSES` - 1): neighbouring kernel taps of one input channel tend to share
  their sign, the more so the larger they are.

One stream, up to 64 bits of flush, after one side bit: the magnitude context rule,
chosen per tensor (option ``context="auto"``) by :func:`choose_context` from a sample of
the tensor: the rule of the smaller empirical conditional entropy plus :data:`PAIR_BITS`
per distinct (context, magnitude) pair, an estimate of what learning the counts costs
(``max2`` pays on large tensors whose scale drifts along the row; ``previous`` on small
ones and where runs of zeros end abruptly).

Order. Each row (output channel) is cut into lanes of :data:`LANE` entries; the coder walks
the lanes in parallel, one position (step) at a time, so that the decoder, at step t, knows
every context (from step t - 1) and decodes each context's symbols of the step in one call.
A lane's first entry has context :data:`START` (magnitude and sign).

Model. Context c's magnitude pmf is ``counts_c + PRIOR * prior_c + FLOOR``; ``prior_c``,
taken at the start of the step, is the normalised sum of the counts of the neighbouring
non-zero classes c - 1 and c + 1 and ``NEAR * PRIOR * pooled``, ``pooled`` the pmf of all
magnitudes seen so far (uniform before any); for START and the zero class, ``pooled``
itself. So a new context starts from its neighbours' law, which shifts smoothly with the
class, or the tensor's, rather than from nothing; the sign pmfs start from the pooled sign
pmf of their own magnitude class.
Counts are updated after each block of a (magnitude, sign) context pair's symbols; a block
is at most as long as the magnitude context's count so far (at least :data:`MIN_BLOCK`),
so the model adapts after 16, 32, 64, ... symbols and then once per step.

Units: sizes in bits; symbols are the grid's signed symbols, magnitude indices and sign
states, ints (rows, cols).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import constriction
import numpy as np
from bitarray import bitarray

from gradcomp.coding.base import Bitstream, Coder, TensorSymbols
from gradcomp.quantization.grids import FixedGrid

__all__ = [
    "CONTEXTS", "LANE", "SIGN_CLASSES", "START", "ContextCoder", "choose_context",
    "conditional_entropy_bits", "lane_contexts", "magnitude_class", "magnitude_contexts",
    "sample_rows", "sign_contexts", "sign_states",
]  # fmt: skip

LANE = 64
CLASS_WIDTH = 3  # magnitude indices per context class (FP8 E5M2: 4 per binade)
SIGN_CLASSES = 16  # sign contexts per previous sign state: the entry's class, capped
START = 0  # context of a lane's first entry
PRIOR, FLOOR, MIN_BLOCK = 64.0, 1e-3, 16
NEAR = 2.0  # weight of the tensor's law in a class's prior, in units of PRIOR
_PAD = 255  # lane padding past a row's end (symbols are below 255)
CONTEXTS = ("previous", "max2")  # magnitude context rules, side bit 0 and 1
PAIR_BITS = 2.0  # learning cost per distinct (context, magnitude) pair, bits (estimate)
SAMPLE = 1 << 20  # entries (whole rows, at least one) the rule is chosen on


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


def magnitude_contexts(mags: np.ndarray, rule: str) -> np.ndarray:
    """The magnitude context of every entry of ``mags`` (rows, cols), uint8 of the same
    shape: START at a lane's start; ``previous``: :func:`magnitude_class` of the previous
    entry; ``max2``: the larger class of the two previous entries of the lane (the previous
    one's at a lane's second entry)."""
    if rule not in CONTEXTS:
        raise ValueError(f"unknown context rule {rule!r}; expected one of {CONTEXTS}")
    ctx = lane_contexts(mags)
    if rule == "max2" and ctx.shape[1] > 2:
        c = magnitude_class(mags)
        ctx[:, 2:] = np.maximum(c[:, 1:-1], c[:, :-2])
        ctx[:, 1::LANE] = c[:, : mags.shape[1] - 1 : LANE]
        ctx[:, ::LANE] = START
    return ctx


def conditional_entropy_bits(symbols: np.ndarray, context: np.ndarray) -> float:
    """``n H(S | C)`` in bits: the ideal code length of ``symbols`` when each context's
    symbols are coded with their own empirical pmf; arrays of equal shape, non-negative
    integers."""
    s = np.asarray(symbols, dtype=np.int64).ravel()
    c = np.asarray(context, dtype=np.int64).ravel()
    if s.size == 0:
        return 0.0
    joint = np.bincount(c * (s.max() + 1) + s)
    joint = joint[joint > 0].astype(np.float64)
    per_context = np.bincount(c)
    per_context = per_context[per_context > 0].astype(np.float64)
    # n H(S|C) = -sum n_cs log2 n_cs + sum n_c log2 n_c
    return float(-(joint * np.log2(joint)).sum() + (per_context * np.log2(per_context)).sum())


def sample_rows(shape: tuple[int, int]) -> int:
    """How many leading rows of a (rows, cols) tensor :func:`choose_context` reads."""
    return max(1, SAMPLE // max(1, shape[1]))


def choose_context(mags: np.ndarray) -> str:
    """The rule of :data:`CONTEXTS` with the smallest estimated adaptive code length of the
    magnitudes ``mags`` (rows, cols): ``n H(M | C) + PAIR_BITS * (distinct (C, M) pairs)``
    on the first :func:`sample_rows` rows; ``previous`` on a tie."""
    m = np.asarray(mags)
    sample = m[: sample_rows(m.shape)]

    def cost(rule: str) -> float:
        ctx = magnitude_contexts(sample, rule)
        pairs = np.count_nonzero(np.bincount((ctx.astype(np.int64) << 8 | sample).ravel()))
        return conditional_entropy_bits(sample, ctx) + PAIR_BITS * pairs

    return min(CONTEXTS, key=cost)


def _tables(grid: FixedGrid) -> tuple[np.ndarray, np.ndarray]:
    """Per signed symbol: its magnitude (int64) and sign state (uint8: 0 zero, 1 +, 2 -)."""
    mags, _ = grid.signed_to_magnitude(np.arange(grid.n_levels))
    state = np.where(grid.magnitude_levels[mags] == 0, 0, 1 + (grid.levels < 0))
    return mags.astype(np.int64), state.astype(np.uint8)


def sign_states(symbols: np.ndarray, grid: FixedGrid) -> np.ndarray:
    """Sign state of every entry, uint8 of the symbols' shape: 0 on the zero level,
    1 positive, 2 negative."""
    return _tables(grid)[1][symbols]


def _sign_class(mags: np.ndarray) -> np.ndarray:
    return np.minimum(magnitude_class(mags), SIGN_CLASSES - 1)


def sign_contexts(states: np.ndarray, mags: np.ndarray) -> np.ndarray:
    """The sign context of every entry (int64, shape of ``states``):
    ``SIGN_CLASSES * (previous entry's state + 1, START at a lane's start) + class of
    its own magnitude`` (:func:`magnitude_class`, capped at ``SIGN_CLASSES - 1``)."""
    prev = lane_contexts(states, lambda s: np.asarray(s, dtype=np.uint8) + 1)
    return SIGN_CLASSES * prev.astype(np.int64) + _sign_class(mags)


class _Joint:
    """Both adaptive models over one grid's signed symbols, shared by encoder and decoder.

    ``key`` of an entry: ``4 * magnitude context + previous sign context`` (both START at
    a lane start); the step's entries are grouped by key and each group coded in blocks.
    """

    _priors: dict[int, np.ndarray]  # set by keys(), for a step
    _signs: np.ndarray | None

    def __init__(self, grid: FixedGrid, rule: str) -> None:
        mag_of, state_of = _tables(grid)
        self.max2 = rule == "max2"
        self.n = grid.n_levels
        self.mag_of, self.n_mags = mag_of, grid.n_magnitudes
        self.nonzero = state_of > 0
        # per signed symbol: its sign model's column (class * 2 + negative); for a zero,
        # the last entry of _factor, which stays 1
        self.sign_col = np.where(
            self.nonzero, 2 * _sign_class(mag_of) + (state_of == 2), 2 * SIGN_CLASSES
        )
        self._factor = np.ones(2 * SIGN_CLASSES + 1)
        if magnitude_class(mag_of).max() >= 63:
            raise ValueError("ans_context: too many magnitude classes for a uint8 key")
        # what an entry gives the key of its successor: 4 * class, and 1 + its sign state
        self.key_of = np.zeros(256, dtype=np.uint8)  # 0 for the lane padding
        self.key_of[: self.n] = 4 * magnitude_class(mag_of) + (1 + state_of).astype(np.uint8)
        self.mag_counts = np.zeros((64, self.n_mags))
        self.mag_pooled = np.zeros(self.n_mags)
        self.seen = np.zeros(64, dtype=np.int64)
        self.sign_counts = np.zeros((4, 2 * SIGN_CLASSES))
        self.sign_pooled = np.zeros(2 * SIGN_CLASSES)

    def keys(self, v: np.ndarray, t: int, where: np.ndarray | None) -> np.ndarray:
        """Context keys (uint8) of step ``t``'s entries (lanes ``where``, None: all) from the
        symbols ``v`` (LANE, n_lanes) of the steps before. Starts the step: the priors
        are frozen until the next call."""
        self._priors, self._signs = {}, None
        if t == 0:
            self._before = None
            return np.full(v.shape[1] if where is None else where.size, START, dtype=np.uint8)
        own = np.take(self.key_of, v[t - 1])  # every lane; called for t = 0, 1, 2, ...
        keys = own
        if self.max2 and self._before is not None:
            # 4 max(c1, c2) + s1 = max(4 c1 + s1, 4 c2 + s1)
            keys = np.maximum(own, (self._before & 0xFC) | (own & 3))
        self._before = own
        return keys if where is None else keys[where]

    def blocks(self, key: int, n: int):
        """``(start, stop, model)`` of the next ``n`` symbols of ``key``; the caller
        :meth:`update` s after each block."""
        cm, cs = divmod(key, 4)
        pos = 0
        while pos < n:
            stop = min(n, pos + max(MIN_BLOCK, int(self.seen[cm])))
            yield pos, stop, self._model(cm, cs)
            pos = stop

    def _mag_prior(self, cm: int) -> np.ndarray:
        """``PRIOR * prior_cm + FLOOR`` (see the module docstring), frozen for a step."""
        got = self._priors.get(cm)
        if got is None:
            total = self.mag_pooled.sum()
            prior = self.mag_pooled / total if total else np.full(self.n_mags, 1 / self.n_mags)
            if cm >= 2:  # a non-zero class: its neighbouring classes' counts, then the tensor's
                near = self.mag_counts[cm + 1] + (self.mag_counts[cm - 1] if cm > 2 else 0.0)
                near = near + NEAR * PRIOR * prior
                prior = near / near.sum()
            got = self._priors[cm] = PRIOR * prior + FLOOR
        return got

    def _sign_prior(self) -> np.ndarray:
        """``PRIOR * pooled sign pmf of each class + FLOOR``, (SIGN_CLASSES, 2), frozen for
        a step."""
        if self._signs is None:
            pooled = self.sign_pooled.reshape(-1, 2)
            totals = pooled.sum(axis=1, keepdims=True)
            prior = np.divide(pooled, totals, out=np.full_like(pooled, 0.5), where=totals > 0)
            self._signs = PRIOR * prior + FLOOR
        return self._signs

    def _model(self, cm: int, cs: int) -> Any:
        pm = self.mag_counts[cm] + self._mag_prior(cm)
        pm /= pm.sum()
        ps = self.sign_counts[cs].reshape(-1, 2) + self._sign_prior()
        self._factor[:-1] = (ps / ps.sum(axis=1, keepdims=True)).ravel()
        p = pm[self.mag_of] * self._factor[self.sign_col]
        return constriction.stream.model.Categorical(p / p.sum(), perfect=False)

    def update(self, key: int, symbols: np.ndarray) -> None:
        cm, cs = divmod(key, 4)
        per_symbol = np.bincount(symbols, minlength=self.n).astype(np.float64)
        mags = np.bincount(self.mag_of, weights=per_symbol, minlength=self.n_mags)
        signs = np.bincount(self.sign_col, weights=per_symbol, minlength=2 * SIGN_CLASSES + 1)
        signs = signs[:-1]
        self.mag_counts[cm] += mags
        self.mag_pooled += mags
        self.seen[cm] += symbols.size
        self.sign_counts[cs] += signs
        self.sign_pooled += signs


def _groups(keys: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Stable order of uint8 ``keys`` and ``(key, start, stop)`` of each group."""
    order = np.argsort(keys, kind="stable")  # radix sort on uint8
    counts = np.bincount(keys, minlength=256)
    present = np.flatnonzero(counts)
    ends = np.cumsum(counts)[present]
    starts = ends - counts[present]
    return order, list(zip(present.tolist(), starts.tolist(), ends.tolist(), strict=True))


def _check(grid: FixedGrid) -> None:
    if grid.n_levels >= _PAD:
        raise ValueError(f"ans_context codes fewer than {_PAD} levels, got {grid.n_levels}")


class ContextCoder(Coder):
    """Adaptive context ANS (constriction); see the module docstring."""

    name = "ans_context"

    def __init__(self, context: str = "auto") -> None:
        if context != "auto" and context not in CONTEXTS:
            raise ValueError(
                f"ans_context option 'context': {context!r} is not 'auto' or one of {CONTEXTS}"
            )
        self.context = context

    def encode(self, x: TensorSymbols) -> Bitstream:
        _check(x.grid)
        if self.context == "auto":
            head = x.symbols[: sample_rows(x.shape)]
            rule = choose_context(x.grid.signed_to_magnitude(head)[0])
        else:
            rule = self.context
        flag = bitarray([CONTEXTS.index(rule)])
        if not x.symbols.size:
            return Bitstream(side=(flag,), payload=(np.zeros(0, np.uint32),), shape=x.shape)
        joint = _Joint(x.grid, rule)
        v = to_lanes(x.symbols.astype(np.uint8), fill=_PAD)
        plan = []  # (symbols, model) in decode order
        for t, where in _steps(x.shape):
            keys = joint.keys(v, t, where)
            order, groups = _groups(keys)
            step = (v[t] if where is None else v[t, where])[order].astype(np.int32)
            for key, lo, hi in groups:
                for a, b, m in joint.blocks(key, hi - lo):
                    block = step[lo + a : lo + b]
                    plan.append((block, m))
                    joint.update(key, block)
        coder = constriction.stream.stack.AnsCoder()
        for block, m in reversed(plan):
            coder.encode_reverse(block, m)
        words = np.asarray(coder.get_compressed(), dtype=np.uint32)
        return Bitstream(side=(flag,), payload=(words,), shape=x.shape)

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]) -> np.ndarray:
        _check(grid)
        shape = stream.shape
        if not shape[0] * shape[1]:
            return np.zeros(shape, dtype=np.int64)
        (words,) = stream.payload
        decoder = constriction.stream.stack.AnsCoder(np.asarray(words, dtype=np.uint32))
        joint = _Joint(grid, CONTEXTS[stream.side[0][0]])
        v = np.zeros((LANE, shape[0] * -(-shape[1] // LANE)), dtype=np.uint8)
        for t, where in _steps(shape):
            keys = joint.keys(v, t, where)
            order, groups = _groups(keys)
            out = np.empty(keys.size, dtype=np.int32)
            for key, lo, hi in groups:
                for a, b, m in joint.blocks(key, hi - lo):
                    got = decoder.decode(m, b - a)
                    out[lo + a : lo + b] = got
                    joint.update(key, got)
            v[t, order if where is None else where[order]] = out
        return np.ascontiguousarray(from_lanes(v, shape)).astype(np.int64)


def _steps(shape: tuple[int, int]):
    """``(t, where)`` of every step of a (rows, cols) tensor's lanes that has entries:
    ``where`` the lanes that have one (None: all of them)."""
    rows, cols = shape
    seg = -(-cols // LANE)  # lanes per row; the last one holds ``last`` entries
    last = cols - (seg - 1) * LANE
    for t in range(min(LANE, cols)):
        if t < last:
            yield t, None
        elif seg > 1:
            if t == last:
                where = np.flatnonzero(np.arange(rows * seg) % seg != seg - 1)
            yield t, where
