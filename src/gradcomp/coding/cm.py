"""Context-mixing binary arithmetic coder (``cm_context``): every signed FP8 symbol is cut
into binary decisions, each decision's probability is a logistic mix of adaptive counters
in several contexts, and a 32-bit binary range coder (:mod:`~gradcomp.coding.binary_rc`)
codes it. Integer arithmetic throughout, so a stream decodes the same on every machine.

Decisions of one entry (magnitude index ``m`` in ``[0, 128)``, E5M2: ``m = 4 exponent +
mantissa``): the 7 bits of ``m``, most significant first, as a binary tree (node = the bits
so far with a leading 1, 1..127: the exponent's bits, then the mantissa's); then, if
``m > 0``, its sign.

Neighbours of entry ``(r, c)`` of the (rows, cols) tensor, read from the entries already
coded: ``a`` = ``(r, c-1)``, ``b`` = ``(r, c-2)``, ``u`` = ``(r, c-kw)`` (the tap above in a
``kw x kw`` kernel), ``h`` = ``(r, c-kw*kw)`` (the same tap of the previous input channel),
``o`` = ``(r-1, c)`` (the previous output channel); missing ones count as zero. ``kw`` comes
from the header's ``cols`` (:func:`kernel_width`), so costs nothing. ``q(m)`` is the
exponent class (0 for zero, else ``1 + m // 4``, at most 31), ``s`` a sign state (0 zero,
1 +, 2 -), ``lev`` the row's running level (an average of ``16 m`` over about 4 entries).

``tap`` is the entry's kernel tap, ``c mod kw^2`` (at most 31).

Magnitude models (each a table of counters indexed by its context and the tree node):
``()``, ``(m_a)``, ``(q_a, q_b)``, ``(q_a, q_u)``, ``(q_h, q_o)``, ``(lev / 64, q_a)``,
``(tap, q_a)``, ``(m_a, m_b)``. Sign models (indexed by context only): ``(s_a, q)``,
``(s_a, s_u, q)``, ``(s_a, s_u, s_h, s_b)``, ``(s_o, s_a, q)``, ``(s_a, s_u, s_h, s_o)``,
``(q)``, ``(s_a, s_u, tap)``; ``q`` the entry's own class. A counter's rate is
1/(n + 1.5) after n updates, then 1/(LIMIT + 1.5). The mixer's weights are chosen by (tree
depth, q_a) for the magnitude bits and by the entry's own class for the sign; a final
adaptive probability map (APM, 33 interpolated buckets per context: the tree node and q_a,
or the sign's first context) refines the mix, weighted 3:1 against it.

Scope. :meth:`CMCoder.encode` codes one tensor from fresh statistics; :func:`encode_message`
codes a list of tensors in one stream, the statistics (counters, weights, maps) carried from
tensor to tensor in the order sent. The stream: the coder's bytes, nothing else (the
decoder knows the shapes from the header); ``bits`` = 8 x bytes (one byte of flush).

Units: symbols are the grid's signed symbols (int, shape (rows, cols)); sizes in bits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gradcomp.coding.base import Bitstream, Coder, TensorSymbols
from gradcomp.coding.binary_rc import (
    counter_learn,
    counter_rates,
    inline,
    njit,
    rc_bytes,
    rc_code_bit,
    rc_decoder,
    rc_encoder,
    squash_table,
    stretch_table,
)
from gradcomp.quantization.grids import FixedGrid

__all__ = [
    "CMCoder", "CMState", "decode_message", "encode_message", "kernel_width", "symbol_tables",
]  # fmt: skip

DEPTH = 7  # bits of a magnitude index
N_MAG, N_SIGN = 8, 7  # models per decision kind
N_IN = 9  # mixer inputs: the models' stretched probabilities and a bias
MAG_SIZES = (1, 128, 1024, 1024, 1024, 1024, 1024, 16384)  # contexts per magnitude model
SIGN_SIZES = (96, 288, 81, 288, 81, 32, 288)  # contexts per sign model
MIX_SETS = DEPTH * 32 + 32  # magnitude: depth x q_a; sign: own class
APM_CTX = 128 * 32 + 96
MIX_LR = 14  # mixer learning rate (error multiplier)
W0 = 65536 // 4  # initial mixer weight, 16.16


def kernel_width(cols: int) -> int:
    """The kernel width assumed for a row of ``cols`` entries: 3 if ``cols`` is a multiple
    of 9 (3 x 3 kernels), else 5 if a multiple of 25, else 1 (no kernel structure)."""
    if cols % 9 == 0:
        return 3
    if cols % 25 == 0:
        return 5
    return 1


class CMState:
    """The adaptive statistics a coder and its decoder keep in step: counters (22-bit
    probabilities and counts), mixer weights and APM maps; fresh ones are all 1/2."""

    def __init__(self) -> None:
        if not _FRESH:
            n_counters = 128 * sum(MAG_SIZES) + sum(SIGN_SIZES)
            # APM: 33 buckets per context, each a 16-bit probability, from squash(bucket)
            knots = squash_table()[np.clip(np.arange(33) * 128, 0, 4095)] * 16
            _FRESH.extend([
                # a counter: its 22-bit probability << 10 | its count (10 bits)
                np.full(n_counters, (1 << 21) << 10, dtype=np.uint32),
                np.full(MIX_SETS * N_IN, W0, dtype=np.int64),
                np.tile(knots, APM_CTX).astype(np.int64),
            ])  # fmt: skip
        self.counters, self.weights, self.apm = (a.copy() for a in _FRESH)


_FRESH: list[np.ndarray] = []  # fresh statistics, made once and copied
_SQUASH, _STRETCH, _RATES = squash_table(), stretch_table(), counter_rates()
_MAG_BASE = np.concatenate([[0], np.cumsum(np.array(MAG_SIZES) * 128)]).astype(np.int64)
_SIGN_BASE = (_MAG_BASE[-1] + np.concatenate([[0], np.cumsum(SIGN_SIZES)])).astype(np.int64)


@inline
def _mix_code(bit, idx, x, n, mset, actx, ctr, weights, apm, sq, st, rates, rc, buf, dec):
    """Predict, code (or decode, ``dec``) and learn one binary decision whose counters are
    ``ctr[idx[:n]]`` (``x``: scratch, int64[N_IN]); returns the bit."""
    dot = 0
    wb = mset * N_IN
    for i in range(n):
        x[i] = st[np.int64(ctr[idx[i]]) >> 20]
        dot += x[i] * weights[wb + i]
    x[n] = 256
    dot += 256 * weights[wb + n]
    d = dot >> 16
    if d > 2047:
        d = 2047
    elif d < -2047:
        d = -2047
    p_mix = sq[d + 2048]
    # APM: interpolate between the two buckets around d
    pos = (d + 2048) * 32
    lo = pos >> 12
    w = pos & 4095
    ab = actx * 33 + lo
    p_apm = (apm[ab] * (4096 - w) + apm[ab + 1] * w) >> 16
    p = (p_mix + 3 * p_apm + 2) >> 2
    if p < 1:
        p = 1
    elif p > 4095:
        p = 4095
    bit = rc_code_bit(rc, buf, bit, p, dec)
    # learn: mixer, APM (the nearer bucket), counters
    err = ((bit << 12) - p_mix) * MIX_LR
    for i in range(n + 1):
        weights[wb + i] += (x[i] * err) >> 16
    target = bit << 16
    k = ab + (1 if w >= 2048 else 0)
    apm[k] += (target - apm[k]) >> 6
    for i in range(n):
        counter_learn(ctr, idx[i], bit, rates)
    return bit


@inline
def _qclass(m):
    if m == 0:
        return 0
    q = 1 + (m >> 2)
    return 31 if q > 31 else q


@njit
def _code(sym, rows, cols, kw, mag_of, neg_of, signed_of, ctr, weights, apm,
          sq, st, rates, mbase, sbase, rc, buf, dec):  # fmt: skip
    """Code (``dec`` False) or decode the (rows, cols) signed symbols ``sym`` (flat, C
    order; filled when decoding) with the statistics given, through the coder state
    ``rc`` and byte buffer ``buf``."""
    mag = np.zeros(rows * cols, dtype=np.int64)
    sgn = np.zeros(rows * cols, dtype=np.int64)  # sign state: 0 zero, 1 +, 2 -
    idx = np.empty(N_IN, dtype=np.int64)
    x = np.empty(N_IN, dtype=np.int64)
    kk = kw * kw
    lev = 0
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            ma = mag[i - 1] if c >= 1 else 0
            mb = mag[i - 2] if c >= 2 else 0
            mu = mag[i - kw] if c >= kw else 0
            mh = mag[i - kk] if c >= kk else 0
            mo = mag[i - cols] if r >= 1 else 0
            qa, qb, qu, qh, qo = _qclass(ma), _qclass(mb), _qclass(mu), _qclass(mh), _qclass(mo)
            ql = lev >> 6
            if ql > 31:
                ql = 31
            cx1 = ma if ma < 128 else 127
            cx2 = mb if mb < 128 else 127
            tap = c % kk if kk < 32 else 31
            m = 0 if dec else mag_of[sym[i]]
            node = 1
            for depth in range(DEPTH):
                idx[0] = mbase[0] + node
                idx[1] = mbase[1] + cx1 * 128 + node
                idx[2] = mbase[2] + (qa * 32 + qb) * 128 + node
                idx[3] = mbase[3] + (qa * 32 + qu) * 128 + node
                idx[4] = mbase[4] + (qh * 32 + qo) * 128 + node
                idx[5] = mbase[5] + (ql * 32 + qa) * 128 + node
                idx[6] = mbase[6] + (tap * 32 + qa) * 128 + node
                idx[7] = mbase[7] + (cx1 * 128 + cx2) * 128 + node
                bit = (m >> (DEPTH - 1 - depth)) & 1
                bit = _mix_code(bit, idx, x, N_MAG, depth * 32 + qa, node * 32 + qa, ctr,
                                weights, apm, sq, st, rates, rc, buf, dec)  # fmt: skip
                node = 2 * node + bit
            m = node - 128
            mag[i] = m
            lev += ((m << 4) - lev) >> 2
            if m > 0:
                q = _qclass(m)
                sa = sgn[i - 1] if c >= 1 else 0
                sb = sgn[i - 2] if c >= 2 else 0
                su = sgn[i - kw] if c >= kw else 0
                sh = sgn[i - kk] if c >= kk else 0
                so = sgn[i - cols] if r >= 1 else 0
                idx[0] = sbase[0] + sa * 32 + q
                idx[1] = sbase[1] + (sa * 3 + su) * 32 + q
                idx[2] = sbase[2] + ((sa * 3 + su) * 3 + sh) * 3 + sb
                idx[3] = sbase[3] + (so * 3 + sa) * 32 + q
                idx[4] = sbase[4] + ((sa * 3 + su) * 3 + sh) * 3 + so
                idx[5] = sbase[5] + q
                idx[6] = sbase[6] + (sa * 3 + su) * 32 + tap
                neg = 0 if dec else neg_of[sym[i]]
                neg = _mix_code(neg, idx, x, N_SIGN, DEPTH * 32 + q, 128 * 32 + sa * 32 + q,
                                ctr, weights, apm, sq, st, rates, rc, buf, dec)  # fmt: skip
                sgn[i] = 1 + neg
            else:
                neg = 0
            if dec:
                sym[i] = signed_of[2 * m + neg]


def symbol_tables(grid: FixedGrid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per signed symbol its magnitude and sign (1 negative), and the inverse:
    ``signed_of[2 m + negative]`` (-1 where no symbol); made once per grid (int64, not to
    be written)."""
    key = (grid.name, grid.levels.tobytes())
    if key not in _SYMBOL_TABLES:
        _SYMBOL_TABLES[key] = _make_tables(grid)
    return _SYMBOL_TABLES[key]


_SYMBOL_TABLES: dict[tuple[str | None, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _make_tables(grid: FixedGrid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if grid.n_magnitudes > 1 << DEPTH:
        raise ValueError(f"cm_context codes at most {1 << DEPTH} magnitudes, "
                         f"grid {grid.name} has {grid.n_magnitudes}")  # fmt: skip
    mags = grid.signed_to_magnitude(np.arange(grid.n_levels))[0]
    neg = ((grid.levels < 0) & (grid.magnitude_levels[mags] != 0)).astype(np.int64)
    signed_of = np.full(2 << DEPTH, -1, dtype=np.int64)
    signed_of[2 * mags + neg] = np.arange(grid.n_levels)
    signed_of[1::2][signed_of[1::2] < 0] = signed_of[0::2][signed_of[1::2] < 0]
    return mags.astype(np.int64), neg, signed_of


def _run(symbols, shape, grid, state, buf, rc, dec) -> None:
    rows, cols = shape
    mag_of, neg_of, signed_of = symbol_tables(grid)
    _code(symbols, rows, cols, kernel_width(cols), mag_of, neg_of, signed_of, state.counters,
          state.weights, state.apm, _SQUASH, _STRETCH, _RATES, _MAG_BASE,
          _SIGN_BASE, rc, buf, dec)  # fmt: skip


def encode_message(tensors: Sequence[TensorSymbols], state: CMState | None = None) -> bytes:
    """One stream of the tensors in the order given, statistics carried from one to the
    next (``state``: the statistics to start from and update; default fresh)."""
    state = CMState() if state is None else state
    total = sum(int(np.prod(x.shape)) for x in tensors)
    rc, buf = rc_encoder(13 * total + 16)  # 8 decisions of <= 13 bits each
    for x in tensors:
        sym = np.ascontiguousarray(x.symbols, dtype=np.int64).ravel()
        _run(sym, x.shape, x.grid, state, buf, rc, False)
    return rc_bytes(rc, buf)


def decode_message(
    data: bytes, shapes: Sequence[tuple[int, int]], grid: FixedGrid,
    state: CMState | None = None,
) -> list[np.ndarray]:  # fmt: skip
    """Inverse of :func:`encode_message`: the signed symbols (int64, each its shape)."""
    state = CMState() if state is None else state
    rc, src = rc_decoder(data)
    out = []
    for shape in shapes:
        sym = np.zeros(shape[0] * shape[1], dtype=np.int64)
        _run(sym, tuple(shape), grid, state, src, rc, True)
        out.append(sym.reshape(shape))
    return out


class CMCoder(Coder):
    """Context-mixing binary arithmetic coder of one tensor; see the module docstring."""

    name = "cm_context"
    # the message coder of this kind, one tensor a message (from fresh statistics: a
    # subclass's coder keeps statistics of its own kind)
    encode_message: Callable[[Sequence[TensorSymbols]], bytes] = staticmethod(encode_message)
    decode_message: Callable[[bytes, Sequence[tuple[int, int]], FixedGrid], list[np.ndarray]] = (
        staticmethod(decode_message)
    )

    def encode(self, x: TensorSymbols) -> Bitstream:
        return Bitstream(side=(), payload=(self.encode_message([x]),), shape=x.shape)

    def decode(self, stream: Bitstream, grid: FixedGrid, fits: Mapping[str, Any]) -> np.ndarray:
        (data,) = stream.payload
        return self.decode_message(bytes(data), [stream.shape], grid)[0]
