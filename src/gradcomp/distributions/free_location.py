"""Free location of the GenNorm MLE: an outer 1-D maximisation of the shape profile in loc.

Started from the fit of a subsample on large inputs; for ``beta <= 1``, where the profile in
loc has a cusp at every entry, it ends with an exhaustive search over the entries near the
optimum (:func:`_refine_loc_on_entries`).  The double Weibull takes the sample median (its
free-loc likelihood is unbounded for ``c < 1``).  :func:`fit_power` is the entry point.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gradcomp.distributions.power_family import (
    CHUNK,
    AbsDeviations,
    PowerFamily,
    ShapeFit,
    blocks,
    newton_step,
    profile_fit,
)

_sum = np.add.reduce
_SEED = 0
_PILOT_RATIO = 16  # a free-loc fit on n entries starts from a fit on n / _PILOT_RATIO of them
_PILOT_MIN = 1 << 12  # ... when that subsample has at least this many entries
_SEARCH_XTOL = 3e-4  # relative shape tolerance inside the loc search (value is extrapolated)
# nats: the loc search stops when the predicted further gain is below this; a profile with
# cusps (beta <= 1) is rough at about this level, and is refined on the entries afterwards
_LOC_LL_TOL = {"smooth": 1e-7, "cusps": 1e-3}
_PILOT_LL_TOL = 1e-2
_TAYLOR_ORDER = 6  # far-field expansion in :func:`_refine_loc_on_entries`
_REFINE_MIN_ENTRIES = 256  # its window holds at least about this many entries
_REFINE_CANDIDATES = (128, 1 << 20)  # it tries at least that many, or (budget / near ones)


def _robust_spread(a: np.ndarray) -> float:
    """A positive scale of ``a``: IQR / 1.349, else mean abs deviation, else range."""
    q25, q50, q75 = np.quantile(a, [0.25, 0.5, 0.75])
    for s in (
        (q75 - q25) / 1.349,
        float(np.mean(np.abs(a - q50))) * 1.2533,
        float(a.max() - a.min()),
    ):
        if s > 0:
            return float(s)
    return 1.0


def _maximize_by_score(
    fg: Callable[[float], tuple[float, float]],
    x0: float,
    k0: float,
    ll_tol: float,
    lo: float,
    hi: float,
    max_evals: int = 40,
) -> tuple[float, float]:
    """Maximise a smooth concave-near-the-top ``f`` from slopes ``fg(x) = (f', pending)``.

    Newton steps ``x += f'/k`` with the curvature ``k = -f''`` taken from the secant of the
    last two slopes (``k0`` before that, or when the secant is not positive), kept inside the
    bracket that slope signs have established (bisection otherwise) and inside ``[lo, hi]``.
    Stops when the predicted further gain ``f'**2 / (2 k) + pending`` is at most ``ll_tol``;
    ``pending`` is what other, inner coordinates still have to gain at ``x``: a slope taken
    with them off their optimum is off too, so while ``pending`` is not small against the
    slope's own gain, ``x`` is evaluated again instead.

    Returns:
        ``(x, k)``: the last point evaluated and the curvature used there.
    """
    left, right = lo, hi
    k, prev = k0, None
    x = x0
    for _ in range(max_evals):
        g, pending = fg(x)
        gain = g * g / (2 * k)
        if gain + pending <= ll_tol or g == 0:
            break
        # with a positive definite Hessian, |slope error| <= |slope| sqrt(pending / gain):
        # until that is small, evaluate the same x again (the inner coordinates converge)
        if pending > 0.01 * gain:
            continue
        if g > 0:
            left = x
        else:
            right = x
        if prev is not None and x != prev[0]:
            ks = (prev[1] - g) / (x - prev[0])
            if ks > 0:
                k = ks
        prev = (x, g)
        if right - left <= 4e-16 * max(abs(left), abs(right)):
            break
        nxt = x + g / k
        x = nxt if left < nxt < right else 0.5 * (left + right)
    return x, k


def _maximize_by_value(
    f: Callable[[float], float],
    x0: float,
    h: float,
    ll_tol: float,
    lo: float,
    hi: float,
    require_tight: bool,
    max_evals: int = 80,
) -> tuple[float, float]:
    """Maximise a unimodal, possibly non-smooth ``f`` from values only.

    Starts from ``x0`` and ``x0 +- h``, steps outward until the best point has a lower
    neighbour on each side, then evaluates the vertex of the parabola through the best point
    and its two neighbours (golden-section points where that vertex is unusable) until the
    parabola predicts a gain of at most ``ll_tol``.  With ``require_tight`` (for peaks that
    may be sharper than a parabola), both neighbours must also be within ``100 * ll_tol`` of
    the best value.

    Returns:
        ``(x_best, curvature)``: the best point evaluated and ``-f''`` of the last parabola.
    """
    pts: dict[float, float] = {}

    def ev(x: float) -> None:
        x = min(max(x, lo), hi)
        if x not in pts:
            pts[x] = f(x)

    for x in (x0, x0 - h, x0 + h):
        ev(x)
    curv = math.nan
    while len(pts) < max_evals:
        xs = sorted(pts)
        i = max(range(len(xs)), key=lambda j: pts[xs[j]])
        b, fb = xs[i], pts[xs[i]]
        if i in (0, len(xs) - 1):  # best on the edge: expand
            if b in (lo, hi) or len(xs) < 2:  # at a bound, or h vanished next to x0
                break
            ev(b + 2.0 * (b - (xs[1] if i == 0 else xs[-2])))
            continue
        a, c = xs[i - 1], xs[i + 1]
        d1, d2 = (fb - pts[a]) / (b - a), (pts[c] - fb) / (c - b)
        curv = 2.0 * (d1 - d2) / (c - a)  # >= 0: b is the best of the three
        u = 0.5 * (a + b) + d1 / curv if curv > 0 else math.nan
        gain = 0.5 * curv * (u - b) ** 2 if curv > 0 else math.inf
        if gain <= ll_tol and (not require_tight or fb - min(pts[a], pts[c]) <= 100 * ll_tol):
            break
        if gain <= ll_tol:  # parabola flat but bracket wide: tighten the wider side
            u = b + 0.1 * (c - b) if c - b > b - a else b - 0.1 * (b - a)
        elif not (a < u < c) or min(u - a, abs(u - b), c - u) < 1e-3 * (c - a):
            u = b + 0.382 * (c - b) if c - b > b - a else b - 0.382 * (b - a)
        if u in pts or c - a <= 4e-16 * max(abs(a), abs(c)):
            break
        ev(u)
    return max(pts, key=pts.__getitem__), curv


def _maximize_parabola(
    f: Callable[[float], float], x0: float, delta: float, lo: float, hi: float
) -> tuple[float, float] | None:
    """Vertex of the parabola through ``f`` at ``x0`` and ``x0 +- delta`` (not evaluated).

    Re-centres (up to 3 times) while the vertex lies beyond the outer points.  Suits a
    function that is near-quadratic at the scale ``delta`` but rough below it; the vertex is
    then refined by :func:`_refine_loc_on_entries`.  Returns ``(vertex, -f'')``, or None if
    the points do not show a maximum.
    """
    for _ in range(4):
        x0 = min(max(x0, lo + delta), hi - delta)
        fm, fc, fp = f(x0 - delta), f(x0), f(x0 + delta)
        k = (2 * fc - fm - fp) / delta**2
        if not k > 0:
            return None
        v = x0 + (fp - fm) / (2 * delta * k)
        if abs(v - x0) <= delta:
            return v, k
        x0 += math.copysign(min(abs(v - x0), 4 * delta), v - x0)
    return None


def _binom(b: float, k: int) -> float:
    """Generalised binomial coefficient ``b (b-1) ... (b-k+1) / k!``."""
    return math.prod((b - j) / (j + 1) for j in range(k))


def _refine_loc_on_entries(dev: AbsDeviations, mu: float, beta: float, half_width: float) -> float:
    """Best GenNorm loc within ``mu +- half_width`` at fixed ``beta <= 1``; returns it.

    For fixed ``beta`` the profile log-likelihood in loc is ``C - n/beta log S(loc)`` with
    ``S(loc) = sum |x - loc|**beta``.  For ``beta <= 1`` each term is concave in loc between
    entries, so ``-log S`` is convex there: the profile is rough, with its local maxima on
    entries (the roughness is worth ~1e-2 nats on 10^6 entries and ~0.1 on 10^3, and bends
    the profile away from a parabola even at the scale of its standard error).

    One streamed pass splits the entries at radius ``R = 4 half_width`` around ``mu``: the
    near ones are kept, and the far ones are summed into a Taylor expansion of their part of
    ``S`` in the shift (order :data:`_TAYLOR_ORDER`, convergent since shifts are at most
    ``R/4``).  ``S`` is then evaluated at ``mu`` and every entry in the window or, if there
    are too many (:data:`_REFINE_CANDIDATES`), on a grid of 21 points over the window and at
    the entries within 1.5 grid steps of the best grid point (nearest first); the lowest
    ``S`` wins.  Cost: one pass plus at most ~2**20 powers.
    """
    a, n = dev.a, dev.n
    ymax = math.exp(dev._log_ymax(mu))  # work in units of max|x - mu|: nothing overflows
    w = half_width / ymax
    r = 4 * w
    far = np.zeros(_TAYLOR_ORDER + 1)  # sums over far entries of |u|**beta / u**k
    near_parts = []
    m = min(n, CHUNK)
    u, p, is_near = np.empty(m), np.empty(m), np.empty(m, dtype=bool)
    for sl in blocks(n):
        k = sl.stop - sl.start
        uk, pk, nk = u[:k], p[:k], is_near[:k]
        np.subtract(a[sl], mu, out=uk)
        np.multiply(uk, 1.0 / ymax, out=uk)
        np.abs(uk, out=pk)
        np.less_equal(pk, r, out=nk)
        if has_near := bool(nk.any()):
            near_parts.append(uk[nk].copy())
            uk[nk], pk[nk] = 1.0, 1.0
        np.log(pk, out=pk)
        np.multiply(pk, beta, out=pk)
        np.exp(pk, out=pk)
        if has_near:
            pk[nk] = 0.0
        np.divide(1.0, uk, out=uk)
        far[0] += _sum(pk)
        for j in range(1, _TAYLOR_ORDER + 1):
            pk *= uk
            far[j] += _sum(pk)
    near = np.concatenate(near_parts) if near_parts else np.empty(0)
    # far part of S(mu + c) = sum_k binom(beta, k) (-c)**k far[k]
    coef = np.array([_binom(beta, j) * far[j] for j in range(_TAYLOR_ORDER + 1)])

    def s_rel(c: np.ndarray) -> np.ndarray:
        """``S(mu + c ymax) / ymax**beta``, in blocks of candidates to bound memory."""
        out = np.polynomial.polynomial.polyval(-c, coef)
        for i in range(0, c.size, 32):
            out[i : i + 32] += (np.abs(near[:, None] - c[None, i : i + 32]) ** beta).sum(axis=0)
        return out

    grid = np.linspace(-w, w, 21)
    cand = near[np.abs(near) <= w]
    max_cand = max(_REFINE_CANDIDATES[0], _REFINE_CANDIDATES[1] // max(near.size, 1))
    if cand.size > max_cand:  # many entries in the window: locate on a grid first
        s_grid = s_rel(grid)
        g = grid[np.argmin(s_grid)]
        cand = cand[np.abs(cand - g) <= 1.5 * (grid[1] - grid[0])]
        cand = cand[np.argsort(np.abs(cand - g))[:max_cand]]
    else:
        s_grid = s_rel(np.zeros(1))
        grid = np.zeros(1)
    best = grid[np.argmin(s_grid)]
    if cand.size:
        s_cand = s_rel(cand)
        if s_cand.min() < s_grid.min():
            best = cand[np.argmin(s_cand)]
    return mu + ymax * float(best)


def _fit_free_loc(
    a: np.ndarray, fam: PowerFamily, xtol: float, label: str, final: bool = True
) -> tuple[ShapeFit, float]:
    """Joint MLE of (shape, loc, scale); returns the fit and ``-d2l/dloc2`` (nats/unit^2).

    The profile log-likelihood ``l(loc)`` (shape and scale at their MLE for each loc) is
    maximised in one dimension.  Each evaluation is one streamed pass at the new loc
    (:meth:`AbsDeviations.moments_and_score`) with a warm shape; the value includes the gain
    of the Newton step in the shape, which also warms the next evaluation.

    * For gennorm beta > 1 the profile is smooth: Newton steps on its slope
      (:func:`_maximize_by_score`; by the envelope theorem the slope at fixed shape), first
      curvature ``n I(loc)``, to a predicted gain below 1e-7 nats.
    * For beta <= 1 each entry puts a cusp into the profile and its slope is noisy; values
      only: the parabola through the pilot's loc and one pilot standard error either side
      (:func:`_maximize_parabola`), or, without a pilot or below beta = 0.6 (where the
      Fisher information of loc is infinite and the peak sharper than a parabola),
      :func:`_maximize_by_value`; then an exhaustive search at fixed shape over the entries
      around the vertex (:func:`_refine_loc_on_entries`).

    On large inputs the search starts from the fit of a random ``1/16`` subsample
    (recursively) and needs only a few full passes.  The shape is finally solved to ``xtol``
    at the final loc.  ``final=False`` (subsample fits) skips the refinement and stops the
    search at a looser tolerance.
    """
    n = a.size
    dev = AbsDeviations(a, with_mean_log=fam.needs_mean_log)
    start, pilot_curv, curv = _start(a, dev, fam, xtol, label)
    smooth = start.theta > 1.0
    ll_tol = _LOC_LL_TOL["smooth" if smooth else "cusps"] if final else _PILOT_LL_TOL
    warm = [start.theta]
    fits: dict[float, ShapeFit] = {}

    def evaluate(loc: float, with_score: bool) -> tuple[float, float, float]:
        """(profile value, its slope at the current shape, the shape's pending gain)."""
        m, ratio = dev.moments_and_score(loc, warm[0], with_score)
        fits[loc] = fit = newton_step(fam, warm[0], m, n, loc)
        if fit.next_theta == fit.next_theta:
            warm[0] = fit.next_theta
        return fit.loglik + fit.gain, n * ratio, fit.gain

    if not curv > 0:  # no pilot: the model's Fisher information of loc, else a robust spread
        curv = _loc_curvature(a, fam, start, label)
    if smooth:
        mu, curv = _maximize_by_score(
            lambda x: evaluate(x, True)[1:], start.loc, curv, ll_tol, dev.xmin, dev.xmax
        )
    else:

        def value(x: float) -> float:
            return evaluate(x, False)[0]

        found = None
        if pilot_curv > 0 and start.theta > 0.6:
            sd = 1.0 / math.sqrt(pilot_curv)
            found = _maximize_parabola(value, start.loc, sd, dev.xmin, dev.xmax)
        if found is None:
            found = _maximize_by_value(value, start.loc, 2.5 / math.sqrt(curv), ll_tol, dev.xmin,
                                       dev.xmax, require_tight=True)  # fmt: skip
        mu, curv = found
    if not final:
        return profile_fit(fam, dev, mu, warm[0], _SEARCH_XTOL, label), curv
    if not smooth:
        last = next(reversed(fits.values()))
        half = _refine_half_width(fam, last, warm[0], curv, n)
        mu = _refine_loc_on_entries(dev, mu, warm[0], half)
    return profile_fit(fam, dev, mu, warm[0], xtol, label), curv


def _start(a: np.ndarray, dev: AbsDeviations, fam: PowerFamily, xtol: float,
           label: str) -> tuple[ShapeFit, float, float]:  # fmt: skip
    """The search's start, its curvature and that expected on all entries: the fit of a
    random subsample on large inputs, else the profile fit at the median (NaN, NaN)."""
    n = a.size
    if n // _PILOT_RATIO < _PILOT_MIN:
        median = float(np.median(a))
        return profile_fit(fam, dev, median, None, _SEARCH_XTOL, label), math.nan, math.nan
    rng = np.random.default_rng(_SEED)
    sub = a[rng.integers(0, n, n // _PILOT_RATIO)]
    start, pilot_curv = _fit_free_loc(sub, fam, xtol, label, final=False)
    return start, pilot_curv, pilot_curv * n / sub.size


def _loc_curvature(a: np.ndarray, fam: PowerFamily, start: ShapeFit, label: str) -> float:
    """The profile's curvature at ``start`` without a pilot: ``n I(loc)``, or from a robust
    spread where the Fisher information of loc is infinite."""
    if fam.loc_information is None:  # unreachable: fit_power searches no loc without it
        raise ValueError(f"{label}: {fam.name} has no free loc to search")
    scale = math.exp(fam.log_scale(start.theta, start.moments))
    curv = a.size * fam.loc_information(start.theta) / scale**2
    return curv if math.isfinite(curv) else a.size / _robust_spread(a) ** 2


def _refine_half_width(fam: PowerFamily, last: ShapeFit, theta: float, curv: float,
                       n: int) -> float:  # fmt: skip
    """The window of :func:`_refine_loc_on_entries`: one standard error, and at least
    :data:`_REFINE_MIN_ENTRIES` entries expected (``last``: the search's last fit)."""
    scale = math.exp(fam.log_scale(last.theta, last.moments))
    f_mode = theta / (2.0 * math.gamma(1.0 / theta) * scale)
    se = 1.0 / math.sqrt(curv) if curv > 0 else 0.0
    return max(se, _REFINE_MIN_ENTRIES / (2.0 * n * f_mode))


def _median_off_data(a: np.ndarray) -> float:
    """The median, moved halfway to the nearest other value if an entry equals it."""
    med = float(np.median(a))
    if not np.any(a == med):
        return med
    cands = []
    above, below = a[a > med], a[a < med]
    if above.size:
        cands.append(0.5 * (med + float(above.min())))
    if below.size:
        cands.append(0.5 * (med + float(below.max())))
    return min(cands, key=lambda v: abs(v - med))


def fit_power(
    a: np.ndarray, fam: PowerFamily, floc: float | None, xtol: float, label: str
) -> tuple[dict[str, float], float, tuple[str, ...]]:
    if floc is None and fam.loc_information is not None:
        fit, _ = _fit_free_loc(a, fam, xtol, label)
    else:
        loc = float(floc) if floc is not None else _median_off_data(a)
        dev = AbsDeviations(a, with_mean_log=fam.needs_mean_log)
        fit = profile_fit(fam, dev, loc, None, xtol, label)
    params = {
        fam.shape: float(fit.theta),
        "loc": float(fit.loc),
        "scale": math.exp(fam.log_scale(fit.theta, fit.moments)),
    }
    return params, float(fit.loglik), ("loc",) if floc is not None else ()
