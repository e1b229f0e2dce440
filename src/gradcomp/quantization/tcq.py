"""Trellis-coded quantization (TCQ; Marcellin and Fischer 1990) under the ``|g|^M`` weighted
squared error ``d(x, y) = |x|^M (x - y)^2``.

Codebook and subsets
--------------------
A TCQ at R bits per entry has a *union codebook* of ``L = 2^(R+1)`` levels ``y_0 .. y_{L-1}``
(at design, the sorted levels of a rate R+1 scalar quantizer) split into four subsets
``D_d = {y_j : j mod 4 = d}``, d = 0..3, of ``2^(R-1)`` levels each. ``A_0 = D_0 u D_2`` and
``A_1 = D_1 u D_3`` are the two interleaved halves of the codebook. The labels j define the
code: refined levels keep their label even if their order changes.

Trellis
-------
A rate-1/2 binary convolutional code with ``S = 2^nu`` states in Ungerboeck's systematic
parity-check form ``(h0, h1)``, with the polynomials of his table for one-dimensional
(amplitude) modulation, the trellises Marcellin and Fischer use (8 states: h0 = 13, h1 = 04,
octal). The state holds the nu pending parity checks (observer form):

- at state s the coded bit ``z0 = s & 1`` says which half ``A_z0`` the entry is drawn from;
- the branch bit ``z1`` (free, one per entry) picks the subset ``D_(z0 + 2 z1)``;
- the next state is ``(s >> 1) ^ z0 (h0 >> 1) ^ z1 (h1 >> 1)``.

With h0 odd with bit nu set and h1 even below ``2^nu``, both branches leaving a state use the
same half and so do both entering one (bit nu-1 of the next state is z0), which is TCQ's set
partitioning rule.

Words (what is sent)
--------------------
One R-bit word per entry, ``w = 2 m + z1``: the branch bit z1 and the index m of the level in
its subset (the level is ``y_(4 m + d)``), plus the initial state (nu bits).

Search and refinement
---------------------
:func:`viterbi` finds the path of least total weighted distortion. The weight ``|x_i|^M`` does
not depend on the level, so each branch's best level is the nearest level of its subset; the
search loops over entries and is vectorised over states. :func:`refine_codebook` is the
TCQ-Lloyd iteration (each level becomes the weighted centroid of the entries its label was
chosen for, then the Viterbi search again); neither step increases the distortion.

Measured performance
--------------------
On 200k i.i.d. samples (an independent re-implementation agrees within 0.005 dB), SQNR gain
in dB of 8-state TCQ over the rate-R scalar optimum (6.02 R dB for U(-1, 1); Max's Lloyd-Max
for N(0, 1)), with the doubled codebook as designed -> after 10 TCQ-Lloyd steps:

====  ==============  ==============
R     uniform         Gaussian
====  ==============  ==============
1     -0.07 -> 0.31   0.40 -> 0.80
2      0.54 -> 0.67   1.01 -> 1.40
3      0.81 -> 0.87   1.35 -> 1.62
4      0.95 -> 0.97   1.57 -> 1.67
====  ==============  ==============

The edges of the codebook keep the uniform gain below the trellis's granular gain at low
rates: without edges (high rate) 8 states gain 1.09 dB and 256 states 1.31 dB; 256 states
gain 0.91-0.93 dB on the uniform source at R = 2 (refined; by sample and start state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "TCQ_STATES",
    "UNGERBOECK_1D",
    "TCQPath",
    "Trellis",
    "refine_codebook",
    "subset_nearest",
    "tcq_decode",
    "viterbi",
]

#: Ungerboeck's parity-check polynomials (h0, h1) for amplitude modulation, by nu = log2 S.
UNGERBOECK_1D = {
    2: (0o5, 0o2),
    3: (0o13, 0o04),
    4: (0o23, 0o04),
    5: (0o45, 0o10),
    6: (0o103, 0o024),
    7: (0o235, 0o126),
    8: (0o515, 0o362),
}
TCQ_STATES = tuple(2**nu for nu in UNGERBOECK_1D)
_CHUNK = 2048  # entries per block of precomputed branch costs


class Trellis:
    """The TCQ trellis of ``states`` = 2^nu states from parity checks ``(h0, h1)``.

    Attributes (int64 arrays): ``next_state`` (S, 2) by branch bit z1; ``half`` (S,) the
    coded bit z0 of each state; ``pred`` (S, 2) the two predecessors of each state and
    ``pred_bit`` (S, 2) the branch bit leading from each; ``pred_subset`` (S, 2) that
    branch's subset d.
    """

    def __init__(self, states: int, h0: int, h1: int):
        nu = int(round(math.log2(states))) if states > 1 else 0
        if states < 2 or 2**nu != states:
            raise ValueError(f"states must be a power of 2 >= 2, got {states}")
        if not (h0 & 1 and h0 >> nu == 1 and h1 % 2 == 0 and 0 < h1 < states):
            raise ValueError(f"(h0, h1) = ({h0:o}, {h1:o}) octal do not fit {states} states")
        self.states, self.nu, self.h0, self.h1 = states, nu, h0, h1
        s = np.arange(states, dtype=np.int64)
        self.half = s & 1
        self.next_state = np.stack(
            [(s >> 1) ^ (self.half * (h0 >> 1)) ^ (z1 * (h1 >> 1)) for z1 in (0, 1)], axis=1
        )
        pred = np.full((states, 2), -1, dtype=np.int64)
        pred_bit = np.zeros((states, 2), dtype=np.int64)
        for z1 in (0, 1):  # the predecessor reached by z1 goes in column z1
            pred[self.next_state[:, z1], z1] = s
            pred_bit[self.next_state[:, z1], z1] = z1
        if np.any(pred < 0):
            raise ValueError(f"(h0, h1) = ({h0:o}, {h1:o}) octal is not a valid trellis")
        self.pred, self.pred_bit = pred, pred_bit
        self.pred_subset = self.half[pred] + 2 * pred_bit

    @classmethod
    @lru_cache(maxsize=16)
    def ungerboeck(cls, states: int = 8) -> Trellis:
        """Ungerboeck's amplitude-modulation trellis with ``states`` in :data:`TCQ_STATES`."""
        if states not in TCQ_STATES:
            raise ValueError(f"states must be one of {TCQ_STATES}, got {states!r}")
        return cls(states, *UNGERBOECK_1D[int(math.log2(states))])

    def subset(self, state, z1):
        """Subset d of the branch with bit ``z1`` leaving ``state`` (broadcasting)."""
        return self.half[state] + 2 * np.asarray(z1)


@dataclass
class TCQPath:
    """A coded sequence of n entries.

    words : int64 (n,) R-bit words ``2 m + z1``; labels : int64 (n,) codebook labels j of the
    reconstruction; initial_state : the trellis state before the first entry;
    reconstruction : float64 (n,); distortion : total weighted squared error (units x^(M+2)).
    """

    words: np.ndarray
    labels: np.ndarray
    initial_state: int
    reconstruction: np.ndarray
    distortion: float


def _check_codebook(levels) -> np.ndarray:
    y = np.asarray(levels, dtype=np.float64)
    n = y.size
    if y.ndim != 1 or n < 4 or n & (n - 1) or not np.all(np.isfinite(y)):
        raise ValueError(f"a TCQ codebook needs 2^(R+1) >= 4 finite levels, got shape {y.shape}")
    return y


def subset_nearest(x: np.ndarray, levels) -> tuple[np.ndarray, np.ndarray]:
    """Nearest level of each subset for each entry.

    x : (n,); levels : (2^(R+1),) union codebook by label. Returns ``m`` int64 (n, 4), the
    index in subset d of the nearest level, and ``y`` float64 (n, 4), that level.
    """
    y = _check_codebook(levels)
    m = np.empty((x.size, 4), dtype=np.int64)
    for d in range(4):
        sub = y[d::4]
        order = np.argsort(sub, kind="stable")
        s = sub[order]
        k = np.searchsorted(0.5 * (s[1:] + s[:-1]), x, side="left")
        m[:, d] = order[k]
    return m, y[4 * m + np.arange(4)]


def viterbi(
    x,
    levels,
    trellis: Trellis,
    weights=None,
    initial_state: int | None = None,
) -> TCQPath:
    """The path of least ``sum_i weights_i (x_i - y_i)^2`` through ``trellis``.

    x : (n,) float; levels : (2^(R+1),) union codebook by label; weights : (n,) >= 0 or None
    (all 1); initial_state : fixed start, or None to let the search choose it.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    n, S = x.size, trellis.states
    if not np.all(np.isfinite(x)):
        raise ValueError("TCQ input has non-finite values")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != x.shape:
        raise ValueError(f"weights have shape {w.shape}, expected {x.shape}")
    m, y = subset_nearest(x, levels)
    cost = w[:, None] * (x[:, None] - y) ** 2  # (n, 4) by subset

    metric = np.zeros(S)
    if initial_state is not None:
        metric[:] = np.inf
        metric[int(initial_state)] = 0.0
    flat_pred = trellis.pred.T.ravel()  # (2S,): predecessors by z1 column, then state
    flat_subset = trellis.pred_subset.T.ravel()
    choice = np.empty((n, S), dtype=bool)  # True: the branch with z1 = 1 survives
    cand = np.empty(2 * S)
    a, b = cand[:S], cand[S:]
    for start in range(0, n, _CHUNK):
        branch = cost[start : start + _CHUNK][:, flat_subset]  # (B, 2S)
        for i, row in enumerate(branch):
            np.take(metric, flat_pred, out=cand)
            cand += row
            np.less(b, a, out=choice[start + i])
            np.minimum(a, b, out=metric)

    state = int(np.argmin(metric))
    distortion = float(metric[state])
    z1 = np.empty(n, dtype=np.int64)
    pred, path_choice = trellis.pred.tolist(), choice
    for t in range(n - 1, -1, -1):
        bit = int(path_choice[t, state])
        z1[t] = bit
        state = pred[state][bit]
    states = _state_sequence(trellis, state, z1)
    d = trellis.half[states] + 2 * z1
    mm = m[np.arange(n), d]
    labels = 4 * mm + d
    y_all = np.asarray(levels, dtype=np.float64)
    return TCQPath(2 * mm + z1, labels, state, y_all[labels], distortion)


def _state_sequence(trellis: Trellis, initial_state: int, z1: np.ndarray) -> np.ndarray:
    """States before each entry, int64 (n,), walking the branch bits from ``initial_state``."""
    nxt = trellis.next_state.tolist()
    out, s = [], int(initial_state)
    for bit in z1.tolist():
        out.append(s)
        s = nxt[s][bit]
    return np.asarray(out, dtype=np.int64)


def tcq_decode(words, initial_state: int, levels, trellis: Trellis) -> np.ndarray:
    """Reconstruction float64 (n,) from the R-bit ``words`` and the initial state alone."""
    y = _check_codebook(levels)
    w = np.asarray(words, dtype=np.int64).ravel()
    if not 0 <= int(initial_state) < trellis.states:
        raise ValueError(f"initial state {initial_state} is not one of {trellis.states} states")
    if w.size and (w.min() < 0 or w.max() >= y.size // 2):
        raise ValueError(f"TCQ words must lie in 0..{y.size // 2 - 1}")
    z1 = w & 1
    d = trellis.half[_state_sequence(trellis, initial_state, z1)] + 2 * z1
    return y[4 * (w >> 1) + d]


def refine_codebook(
    x,
    levels,
    trellis: Trellis,
    weights=None,
    *,
    n_iter: int = 8,
    rtol: float = 1e-4,
) -> tuple[np.ndarray, list[float]]:
    """TCQ-Lloyd: alternate the Viterbi search and weighted centroids of each label's entries.

    Returns the refined codebook (2^(R+1),) by label and the distortion history (of the start
    codebook, then after each centroid step). Labels that no entry chose keep their level.
    Stops after ``n_iter`` steps or when a step gains less than ``rtol`` (relative).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    w = np.ones(x.size) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    y = _check_codebook(levels).copy()
    path = viterbi(x, y, trellis, w)
    history = [path.distortion]
    for _ in range(n_iter):
        num = np.bincount(path.labels, w * x, minlength=y.size)
        den = np.bincount(path.labels, w, minlength=y.size)
        y = np.where(den > 0, num / np.where(den > 0, den, 1.0), y)
        path = viterbi(x, y, trellis, w)
        history.append(path.distortion)
        if history[-2] - history[-1] <= rtol * history[-2]:
            break
    return y, history
