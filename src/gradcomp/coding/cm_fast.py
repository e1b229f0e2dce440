"""Fast context-mixing binary arithmetic coder (``cm_fast``): the speed preset of
:mod:`~gradcomp.coding.cm`, about 6 binary decisions per FP8 symbol instead of 8, each
mixing 3 adaptive counters instead of 8 (or reading one), no APM; integer arithmetic
throughout (the counters, tables and range coder of :mod:`~gradcomp.coding.binary_rc`), so
a stream decodes the same on every machine.

Decisions of one entry, magnitude index ``m = 4 k + f`` (``k = m >> 2`` in ``[0, 32)``, the
exponent class; ``f`` in ``[0, 4)`` the mantissa; E5M2):

- ``k`` relative to a prediction ``pred`` (the row's running level, an average of ``k``
  over about 4 entries, rounded): "``k == pred``?", then (where both are possible)
  "``k > pred``?", then "``k == pred +- s``?" for ``s = 1, 2, ...`` until yes or the end
  of the range (the last candidate needs no decision). About 2.9 decisions on gradients.
  Decision id ``t``: 0, 1, then ``2 + 2 min(s - 1, 6) + up``.
- ``f``: 2 bits, most significant first, each from one counter (node, ``k``), no mixing
  (the mantissa is nearly uniform: mixing gained < 0.001 bit per entry).
- if ``m > 0``, the sign.

Neighbours of entry ``(r, c)`` of a (rows, cols) tensor, from entries already coded
(missing ones count as zero): ``a`` = ``(r, c-1)``, ``b`` = ``(r, c-2)``, ``u`` =
``(r, c-kw)`` (tap above in a ``kw x kw`` kernel, ``kw`` = :func:`~gradcomp.coding.cm.
kernel_width` of ``cols``), ``h`` = ``(r, c-kw^2)``, ``o`` = ``(r-1, c)``; ``d_x`` =
``k_x - pred`` clipped to ``[-3, 4]``; ``tap`` = ``c mod kw^2`` (at most 31); sign states
``s`` 0 zero, 1 +, 2 -; ``q`` the entry's own class (``k + 1``, at most 31).

Models (a counter per context): exponent ``(t, pred, d_a)``, ``(t, d_u, d_o)``,
``(t, tap, d_a)``, mixed with weights chosen by ``t``; sign ``(s_a, s_u, q)``, ``(s_a, s_u,
s_h, s_b)``, ``(s_a, s_u, tap)``, mixed with weights chosen by ``q``. Chosen by ablation on
``bench/data/real_fp8_sample.npz`` (bits per entry, per tensor): the kernel tap is worth
0.066 in the exponent models and 0.066 in the sign models; a model ``(t, d_h, d_b)`` and an
exponent model of ``(t, pred)`` alone changed the total by < 0.004, and mixing the
mantissa's counters by < 0.001; mixer weights chosen by ``t`` rather than ``(t, pred)``
saved 0.014.

Scope as in ``cm_context``: :class:`CMFastCoder` codes one tensor from fresh statistics;
:func:`encode_message` codes a list of tensors in one stream (one compiled call), the
statistics carried from tensor to tensor. No side information: ``bits`` = 8 x bytes.

Units: symbols are the grid's signed symbols (int, shape (rows, cols)); sizes in bits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gradcomp.coding.base import TensorSymbols
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
from gradcomp.coding.cm import CMCoder, kernel_width, symbol_tables
from gradcomp.quantization.grids import FixedGrid

__all__ = ["CMFastCoder", "FastState", "decode_message", "encode_message"]

K, T = 32, 16  # exponent classes; exponent decision ids
# counters per model: exponent (t, pred, d_a), (t, d_u, d_o), (t, tap, d_a); mantissa
# (node, k); sign (s_a, s_u, q), (s_a, s_u, s_h, s_b), (s_a, s_u, tap)
SIZES = (T * K * 8, T * 8 * 8, T * 32 * 8, 4 * K, 9 * 32, 81, 9 * 32)
NW = 4  # mixer weights per set: 3 inputs and a bias
MIX_LR = 14  # mixer learning rate (error multiplier)
W0 = 65536 // 4  # initial mixer weight, 16.16
_BASE = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int64)
_SQ, _ST, _RATES = squash_table(), stretch_table(), counter_rates()


class FastState:
    """The adaptive statistics coder and decoder keep in step: counters (22-bit
    probability << 10 | count, all 1/2 and count 0 when fresh) and mixer weights (16.16;
    the exponent's ``T`` sets, one per decision id, then the sign's 32, one per class). About
    41 kB, so a fresh state per tensor costs microseconds."""

    def __init__(self) -> None:
        self.counters = np.full(int(_BASE[-1]), (1 << 21) << 10, dtype=np.uint32)
        self.weights = np.full((T + 32) * NW, W0, dtype=np.int64)


@inline
def _mix(bit, j0, j1, j2, wb, ctr, w, sq, st, rates, rc, buf, dec):
    """Predict from counters ``j0, j1, j2`` mixed with the weights at ``wb``, code or decode
    (``dec``) the bit, learn; returns the bit. Always 3 inputs: an optional one behind a
    branch made every decision ~20 ns slower (measured)."""
    x0 = st[np.int64(ctr[j0]) >> 20]
    x1 = st[np.int64(ctr[j1]) >> 20]
    x2 = st[np.int64(ctr[j2]) >> 20]
    dot = x0 * w[wb] + x1 * w[wb + 1] + x2 * w[wb + 2] + 256 * w[wb + 3]
    d = min(max(dot >> 16, -2047), 2047)
    p = sq[d + 2048]
    bit = rc_code_bit(rc, buf, bit, p, dec)
    err = ((bit << 12) - p) * MIX_LR
    w[wb] += (x0 * err) >> 16
    w[wb + 1] += (x1 * err) >> 16
    w[wb + 2] += (x2 * err) >> 16
    w[wb + 3] += (256 * err) >> 16
    counter_learn(ctr, j0, bit, rates)
    counter_learn(ctr, j1, bit, rates)
    counter_learn(ctr, j2, bit, rates)
    return bit


@inline
def _direct(bit, j, ctr, rates, rc, buf, dec):
    """Code or decode a bit at counter ``j``'s probability, learn; returns the bit."""
    p = max(np.int64(ctr[j]) >> 20, 1)
    bit = rc_code_bit(rc, buf, bit, p, dec)
    counter_learn(ctr, j, bit, rates)
    return bit


@inline
def _rel(k, pred):
    return min(max(k - pred + 3, 0), 7)


@inline
def _exponent_class(k, pred, j0, j1, j2, ctr, w, sq, st, rates, rc, buf, dec):
    """Code (``dec`` False) or decode an entry's exponent class ``k`` relative to ``pred``,
    the decisions of the module docstring (``j0``..``j2``: the exponent's counters at
    decision id 0); returns the class."""
    cand, t, up, s = pred, 0, 0, 0
    while True:
        o0, o1, o2 = t * K * 8, t * 64, t * 256
        if t == 1 and (pred == 0 or pred == K - 1):
            up, t, s = (1 if pred == 0 else 0), 2 + (1 if pred == 0 else 0), 1
            cand = pred + 1 if up else pred - 1
            continue
        if t >= 2 and cand == (K - 1 if up else 0):
            break  # the last candidate: nothing to code
        if t == 0:
            bit = 1 if k == pred else 0
        elif t == 1:
            bit = 1 if k > pred else 0
        else:
            bit = 1 if k == cand else 0
        bit = _mix(bit, j0 + o0, j1 + o1, j2 + o2, t * NW,
                   ctr, w, sq, st, rates, rc, buf, dec)  # fmt: skip
        if t == 0:
            if bit:
                break
            t = 1
        elif t == 1:
            up, s = bit, 1
            cand = pred + 1 if up else pred - 1
            t = 2 + up
        else:
            if bit:
                break
            s += 1
            cand = cand + 1 if up else cand - 1
            t = 2 + 2 * min(s - 1, 6) + up
    return cand


@njit
def _code(sym, shapes, mag_of, neg_of, signed_of, ctr, w, sq, st, rates, base, rc, buf, dec):
    """Code (``dec`` False) or decode the tensors of ``shapes`` (int64 (n, 3): rows, cols,
    kernel width), whose signed symbols ``sym`` are flat and back to back (filled when
    decoding)."""
    sb0 = T * NW
    start = 0
    for tensor in range(shapes.shape[0]):
        rows, cols, kw = shapes[tensor, 0], shapes[tensor, 1], shapes[tensor, 2]
        kk = kw * kw
        # the row's classes and sign states after kk >= 2 zeros (the missing neighbours),
        # and the previous row's classes: no bounds test per neighbour
        pad = max(kk, 2)
        kc = np.zeros(pad + cols, dtype=np.int64)
        sg = np.zeros(pad + cols, dtype=np.int64)
        kp = np.zeros(cols, dtype=np.int64)
        lev = 0
        for r in range(rows):
            tap = 0
            for c in range(cols):
                i = start + r * cols + c
                e = pad + c
                pred = min((lev + 8) >> 4, K - 1)
                ka = kc[e - 1]
                ku = kc[e - kw]
                ko = kp[c]
                da = _rel(ka, pred)
                tp = min(tap, 31)
                m = 0 if dec else mag_of[sym[i]]
                k = m >> 2
                # the exponent's counters at decision id 0; id t adds whole blocks (o0..o2)
                j0 = base[0] + pred * 8 + da
                j1 = base[1] + _rel(ku, pred) * 8 + _rel(ko, pred)
                j2 = base[2] + tp * 8 + da
                k = _exponent_class(k, pred, j0, j1, j2, ctr, w, sq, st, rates, rc, buf, dec)
                f = 0 if dec else m & 3
                hi = _direct(f >> 1, base[3] + K + k, ctr, rates, rc, buf, dec)
                lo = _direct(f & 1, base[3] + (2 + hi) * K + k, ctr, rates, rc, buf, dec)
                m = 4 * k + 2 * hi + lo
                kc[e] = k
                lev += ((k << 4) - lev) >> 2
                neg = 0
                if m > 0:
                    sa, sb, su, sh = sg[e - 1], sg[e - 2], sg[e - kw], sg[e - kk]
                    q = min(k + 1, 31)
                    neg = 0 if dec else neg_of[sym[i]]
                    neg = _mix(neg, base[4] + (sa * 3 + su) * 32 + q,
                               base[5] + ((sa * 3 + su) * 3 + sh) * 3 + sb,
                               base[6] + (sa * 3 + su) * 32 + tp, sb0 + q * NW,
                               ctr, w, sq, st, rates, rc, buf, dec)  # fmt: skip
                sg[e] = 1 + neg if m > 0 else 0
                if dec:
                    sym[i] = signed_of[2 * m + neg]
                tap = tap + 1 if tap + 1 < kk else 0
            kp[:] = kc[pad:]
        start += rows * cols


def _shapes(shapes: Sequence[tuple[int, int]]) -> np.ndarray:
    """int64 (n, 3): rows, cols and kernel width of each tensor."""
    return np.array([(r, c, kernel_width(c)) for r, c in shapes], dtype=np.int64).reshape(-1, 3)


def encode_message(tensors: Sequence[TensorSymbols], state: FastState | None = None) -> bytes:
    """One stream of the tensors in the order given, statistics carried from one to the
    next (``state``: the statistics to start from and update; default fresh)."""
    if not tensors:
        return b""
    state = FastState() if state is None else state
    sym = np.concatenate([np.asarray(x.symbols, dtype=np.int64).ravel() for x in tensors])
    shapes = _shapes([x.shape for x in tensors])
    rc, buf = rc_encoder(59 * sym.size + 16)  # <= 36 decisions of <= 13 bits a symbol
    mag_of, neg_of, signed_of = symbol_tables(tensors[0].grid)
    _code(sym, shapes, mag_of, neg_of, signed_of, state.counters, state.weights, _SQ, _ST,
          _RATES, _BASE, rc, buf, False)  # fmt: skip
    return rc_bytes(rc, buf)


def decode_message(
    data: bytes, shapes: Sequence[tuple[int, int]], grid: FixedGrid,
    state: FastState | None = None,
) -> list[np.ndarray]:  # fmt: skip
    """Inverse of :func:`encode_message`: the signed symbols (int64, each its shape)."""
    state = FastState() if state is None else state
    rc, src = rc_decoder(data)
    shp = _shapes(shapes)
    sym = np.zeros(int(np.sum(shp[:, 0] * shp[:, 1])), dtype=np.int64)
    mag_of, neg_of, signed_of = symbol_tables(grid)
    _code(sym, shp, mag_of, neg_of, signed_of, state.counters, state.weights, _SQ, _ST,
          _RATES, _BASE, rc, src, True)  # fmt: skip
    ends = np.cumsum(shp[:, 0] * shp[:, 1])[:-1]
    parts = np.split(sym, ends)
    return [s.reshape(int(r), int(c)) for s, (r, c, _) in zip(parts, shp, strict=True)]


class CMFastCoder(CMCoder):
    """Fast context-mixing binary arithmetic coder of one tensor; see the module
    docstring."""

    name = "cm_fast"
    encode_message = staticmethod(encode_message)
    decode_message = staticmethod(decode_message)
