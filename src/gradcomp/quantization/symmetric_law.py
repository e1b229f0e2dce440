"""Centred symmetric laws of the fitted families and their closed-form truncated cell
moments, the ingredients of the M-weighted Lloyd design (:mod:`gradcomp.quantization.lloyd`).

Closed-form partial moments
---------------------------
Every supported family is, once centred (``loc`` subtracted), a symmetric density of
the form

    f(x) = p / (2 s Gamma(a0)) * (|x|/s)^gamma0 * exp(-(|x|/s)^p),   a0 = (gamma0 + 1)/p,

with (p, gamma0, s) = (beta, 0, scale) for GenNorm, (2, 0, sigma*sqrt(2)) for the
normal, (1, 0, scale) for Laplace and (c, c - 1, scale) for the double Weibull.
Substituting t = (x/s)^p, for 0 <= u <= v <= inf and any real n >= 0:

    int_u^v x^n f(x) dx = s^n Gamma(a_n) / (2 Gamma(a0)) * [P(a_n, (v/s)^p) - P(a_n, (u/s)^p)],
    a_n = (n + gamma0 + 1) / p,

with P the regularised lower incomplete gamma function (``scipy.special.gammainc``;
the difference is taken as ``Q(u) - Q(v)`` with ``Q = gammaincc`` when P(u) > 1/2,
which keeps tail cells accurate). A cell [a, b] is split at 0: its positive part
[max(a,0), max(b,0)] contributes ``int x^(M+j)``, its mirrored negative part
[max(-b,0), max(-a,0)] contributes ``(-1)^j int x^(M+j)``. Infinite ends are fine
(P(a, inf) = 1).

Location
--------
Designs are made on the centred law: the weight is ``|x - loc|^M`` and levels are
shifted back by ``loc``. Gradient fits have ``|loc|`` much smaller than ``scale``, so
this is the usual practice; it is exact for ``loc = 0``. Internally everything is
computed on the unit-scale law (levels scale with ``s``, distortion with ``s^(M+2)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import special

from gradcomp.distributions.fitting import FAMILIES
from gradcomp.quantization.tail_gamma import log_gammaincc, tail_quantile

__all__ = [
    "SymmetricLaw",
    "expected_distortion",
    "partial_moments",
    "reference_partial_moments_quad",
]


@dataclass(frozen=True)
class SymmetricLaw:
    """Centred symmetric law ``f(x) ∝ (|x|/s)^gamma0 exp(-(|x|/s)^p)`` (see module doc).

    Attributes
    ----------
    p, gamma0 : shape exponents (dimensionless).
    scale : s, in the units of x.
    loc : location removed before design (units of x).
    family : name of the scipy family it was built from.
    """

    p: float
    gamma0: float
    scale: float
    loc: float = 0.0
    family: str = "gennorm"

    @classmethod
    def from_family(cls, family: str, params: dict[str, float]) -> SymmetricLaw:
        """Build from a scipy family name and its parameters (scipy names).

        ``gennorm``: beta, loc, scale; ``norm``/``laplace``: loc, scale;
        ``dweibull``: c, loc, scale. ``loc`` defaults to 0.
        """
        try:
            loc = float(params.get("loc", 0.0))
            scale = float(params["scale"])
            if family == "gennorm":
                p, gamma0, s = float(params["beta"]), 0.0, scale
            elif family == "norm":
                p, gamma0, s = 2.0, 0.0, scale * math.sqrt(2.0)
            elif family == "laplace":
                p, gamma0, s = 1.0, 0.0, scale
            elif family == "dweibull":
                c = float(params["c"])
                p, gamma0, s = c, c - 1.0, scale
            else:
                raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
        except KeyError as exc:
            raise ValueError(f"family {family!r} needs parameter {exc.args[0]!r}") from None
        if not (p > 0 and s > 0 and np.isfinite(p) and np.isfinite(s)):
            raise ValueError(f"invalid parameters for {family!r}: {params}")
        return cls(p=p, gamma0=gamma0, scale=s, loc=loc, family=family)

    @classmethod
    def stacked(cls, laws) -> SymmetricLaw:
        """B laws as one, unit scale, for designing B quantizers at once: p and gamma0 of
        shape (B, 1), so that the moment methods take cells of shape (B, L) and give each
        law's numbers bit for bit as the law alone would (elementwise arithmetic, and one
        continued-fraction stopping rule per law)."""
        p = np.array([[law.p] for law in laws], dtype=np.float64)
        gamma0 = np.array([[law.gamma0] for law in laws], dtype=np.float64)
        # a stack's p and gamma0 are (B, 1) arrays where one law's are floats
        return cls(p=cast(float, p), gamma0=cast(float, gamma0), scale=1.0, loc=0.0, family="stack")

    def take(self, rows) -> SymmetricLaw:
        """The laws ``rows`` (an index array) of a :meth:`stacked` law, still stacked."""
        p, gamma0 = cast(np.ndarray, self.p), cast(np.ndarray, self.gamma0)  # (B, 1) each
        return SymmetricLaw(p[rows], gamma0[rows], 1.0, 0.0, self.family)

    @property
    def unit(self) -> SymmetricLaw:
        """The same shape with scale 1 and loc 0."""
        return SymmetricLaw(self.p, self.gamma0, 1.0, 0.0, self.family)

    def _alpha(self, n: float | np.ndarray) -> float | np.ndarray:
        return (n + self.gamma0 + 1.0) / self.p

    def pdf(self, x: np.ndarray) -> np.ndarray:
        """Density of the centred law at ``x`` (loc ignored), shape of ``x``."""
        z = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        log_norm = math.log(self.p / (2.0 * self.scale)) - special.gammaln(self._alpha(0.0))
        with np.errstate(divide="ignore"):
            return np.exp(log_norm + self.gamma0 * np.log(z) - z**self.p)

    def abs_moment(self, n: float) -> float:
        """E|X|^n of the centred law."""
        return self.scale**n * math.exp(
            special.gammaln(self._alpha(n)) - special.gammaln(self._alpha(0.0))
        )

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """Log density of the centred law at ``x`` (loc ignored), shape of ``x``."""
        z = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        log_norm = math.log(self.p / (2.0 * self.scale)) - special.gammaln(self._alpha(0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            power = np.where(self.gamma0 == 0.0, 0.0, self.gamma0 * np.log(z))
        return log_norm + power - z**self.p

    def _power(self, z: np.ndarray) -> np.ndarray:
        """``z ** p``; for a stack, law by law with p a Python float on a contiguous array,
        as for one law (numpy squares for p = 2 but calls pow for an array of exponents)."""
        if np.ndim(self.p) == 0:
            return z**self.p
        out = np.empty_like(z)
        for i, p in enumerate(cast(np.ndarray, self.p)[:, 0].tolist()):
            out[..., i, :] = np.ascontiguousarray(z[..., i, :]) ** p
        return out

    def half_moment(self, n, u, v, log_shift: float = 0.0) -> np.ndarray:
        """``int_u^v x^n f(x) dx / exp(log_shift)`` for ``0 <= u <= v <= inf`` (closed form,
        broadcasting).

        ``n`` may be an array (e.g. shape (J, 1) against u, v of shape (K,)). Tail cells are
        computed in log space (:func:`~gradcomp.quantization.tail_gamma.log_gammaincc`), so
        with ``log_shift`` the log mass beyond a far threshold the result stays finite where
        the unshifted integral underflows.
        """
        a = self._alpha(np.asarray(n, dtype=np.float64))
        log_const = (
            math.log(0.5)
            + np.asarray(n, dtype=np.float64) * math.log(self.scale)
            + special.gammaln(a)
            - special.gammaln(self._alpha(0))
            - log_shift
        )
        tu = self._power(np.asarray(u, dtype=np.float64) / self.scale)
        tv = self._power(np.asarray(v, dtype=np.float64) / self.scale)
        # both ends in one call of each function (the same numbers, half the overhead)
        full = np.broadcast_shapes(np.shape(a), np.shape(tu), np.shape(tv))
        ends = np.stack([np.broadcast_to(tu, full), np.broadcast_to(tv, full)])
        a = np.broadcast_to(a, full)
        pu, pv = special.gammainc(a, ends)
        # a stack of laws (axis -2): each law's continued fraction stops on its own
        p_shape: tuple[int, ...] = np.shape(self.p)  # (B, 1) for a stack, () for one law
        groups = np.arange(p_shape[0]).reshape(-1, 1) if np.ndim(self.p) else None
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            diff = pv - pu  # empty parts give 0, whatever log_shift
            lower = np.where(diff > 0, np.exp(log_const + np.log(diff)), 0.0)
            log_qu, log_qv = log_gammaincc(a, ends, groups)
            log_upper = log_qu + np.log1p(-np.exp(log_qv - log_qu))
            upper = np.where(tv > tu, np.exp(log_const + log_upper), 0.0)
        return np.where(pu < 0.5, lower, upper)

    def cell_moments(self, a, b, M: float, orders=(0, 1, 2), log_shift: float = 0.0) -> np.ndarray:
        """``int_a^b x^j |x|^M f(x) dx`` for each j in ``orders``; shape (len(orders), *a.shape).

        ``a <= b`` may be infinite and may straddle 0 (x is the centred variable). Divided
        by ``exp(log_shift)`` (see :meth:`half_moment`).
        """
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        j = np.asarray(orders, dtype=np.float64).reshape((-1,) + (1,) * a.ndim)
        # positive parts [max(a,0), max(b,0)] and mirrored negative parts, in one call
        u = np.stack([np.maximum(a, 0.0), np.maximum(-b, 0.0)])
        v = np.stack([np.maximum(b, 0.0), np.maximum(-a, 0.0)])
        h = self.half_moment(M + j[:, None], u, v, log_shift)
        return h[:, 0] + (-1.0) ** j * h[:, 1]

    def symmetric_gamma_quantiles(
        self, alpha: float, factor: float, n: int, tau: float = 0.0
    ) -> np.ndarray:
        """Quantiles ``(k + 1/2)/n`` of the symmetric law with ``|x|^p / factor ~ Gamma(alpha)``,
        restricted to ``|x| >= tau``.

        Unit scale. With ``alpha = (M + gamma0 + 1)/p, factor = 1`` this is the
        ``|x|^M``-tilted law; with ``alpha = ((M + gamma0)/3 + 1)/p, factor = 3`` the
        Panter-Dite point density ``(|x|^M f)^(1/3)``.
        """
        u = (np.arange(n) + 0.5) / n
        q = np.abs(2.0 * u - 1.0)
        t = tail_quantile(alpha, tau**self.p / factor if tau > 0 else 0.0, q)
        return np.sign(2.0 * u - 1.0) * (factor * t) ** (1.0 / self.p)

    def truncated_cell_moments(
        self, a, b, M: float, tau: float, orders=(0, 1, 2), log_shift: float = 0.0
    ) -> np.ndarray:
        """:meth:`cell_moments` of the law restricted to ``|x| >= tau`` (not renormalised,
        but divided by ``exp(log_shift)``): each cell ``[a, b]`` is cut to its parts in
        ``(-inf, -tau]`` and ``[tau, inf)``. For a :meth:`stacked` law ``tau`` is (B, 1),
        all positive or all zero."""
        if np.all(np.asarray(tau) <= 0):
            return self.cell_moments(a, b, M, orders, log_shift)
        if np.any(np.asarray(tau) <= 0):
            raise ValueError("a stack of laws is truncated everywhere or nowhere")
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        # both sides in one call (the same numbers as two calls, half the numpy overhead)
        lo = np.stack([np.maximum(a, tau), np.minimum(a, -tau)])
        hi = np.stack([np.maximum(b, tau), np.minimum(b, -tau)])
        both = self.cell_moments(lo, hi, M, orders, log_shift)
        return both[:, 0] + both[:, 1]

    def log_tail_mass(self, tau: float) -> float:
        """``log P(|X| >= tau)`` of the centred law, finite far beyond where it underflows."""
        if tau <= 0:
            return 0.0
        return float(log_gammaincc(self._alpha(0.0), (tau / self.scale) ** self.p))


def _as_law(family: str | SymmetricLaw, params: dict[str, float] | None) -> SymmetricLaw:
    if isinstance(family, SymmetricLaw):
        return family
    return SymmetricLaw.from_family(family, params or {})


def partial_moments(
    family: str, params: dict[str, float], a, b, M: float, order: int = 0
) -> np.ndarray:
    """Closed-form ``int_a^b (x-loc)^order |x-loc|^M f(x) dx`` for the fitted law.

    ``a``, ``b``: interval ends in the units of x (arrays broadcast; may be +-inf).
    Returns an array of the broadcast shape, in units of x^(order + M).
    """
    law = _as_law(family, params)
    a, b = np.broadcast_arrays(np.asarray(a, float) - law.loc, np.asarray(b, float) - law.loc)
    return law.cell_moments(a, b, M, orders=(order,))[0]


def _distortion_rows(m: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The distortion of each row of ``levels`` (..., L) from its cell moments (3, ..., L):
    a contiguous array summed along its last axis, in the order of a 1-D sum of each row."""
    return np.sum(np.ascontiguousarray(m[2] - 2.0 * levels * m[1] + levels**2 * m[0]), axis=-1)


def _distortion_from_moments(m: np.ndarray, levels: np.ndarray) -> float:
    return float(_distortion_rows(m, levels))


def _edges(thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cells' lower and upper ends (..., L) from the thresholds (..., L - 1)."""
    t = np.asarray(thresholds, dtype=np.float64)
    inf = np.full(t.shape[:-1] + (1,), np.inf)
    return np.concatenate([-inf, t], axis=-1), np.concatenate([t, inf], axis=-1)


def expected_distortion(
    family: str | SymmetricLaw,
    params: dict[str, float] | None,
    levels,
    M: float,
    thresholds=None,
    tau: float = 0.0,
) -> float:
    """Expected M-weighted distortion ``E |X - loc|^M (X - Q(X))^2`` per entry (closed form).

    ``levels``: shape (L,), sorted, in units of x. ``thresholds``: shape (L-1,);
    default midpoints (nearest-level cells). ``tau``: the expectation is conditional on
    ``|X - loc| >= tau`` (units of x). Units: x^(M+2).
    """
    law = _as_law(family, params)
    y = (np.asarray(levels, dtype=np.float64) - law.loc) / law.scale
    t = (
        _midpoints(y)
        if thresholds is None
        else (np.asarray(thresholds, dtype=np.float64) - law.loc) / law.scale
    )
    lo, hi = _edges(t)
    unit = law.unit
    log_mass = unit.log_tail_mass(tau / law.scale)
    m = unit.truncated_cell_moments(lo, hi, M, tau / law.scale, log_shift=log_mass)
    return _distortion_from_moments(m, y) * law.scale ** (M + 2.0)


def _midpoints(levels: np.ndarray) -> np.ndarray:
    """Midpoints of adjacent levels along the last axis."""
    return 0.5 * (levels[..., :-1] + levels[..., 1:])


def reference_partial_moments_quad(
    law: SymmetricLaw, a, b, M: float, orders=(0, 1, 2)
) -> np.ndarray:
    """The same as :meth:`SymmetricLaw.cell_moments` by ``scipy.integrate.quad``.

    Reference for tests and the benchmark only (slow); split at 0 where the
    integrand may be singular or kinked.
    """
    from scipy import integrate

    a = np.atleast_1d(np.asarray(a, dtype=np.float64))
    b = np.atleast_1d(np.asarray(b, dtype=np.float64))
    out = np.zeros((len(orders), a.size))
    for i, j in enumerate(orders):

        def integrand(x, j=j):
            return x**j * abs(x) ** M * law.pdf(x)

        for k, (lo, hi) in enumerate(zip(a, b, strict=True)):
            pieces = [(lo, min(hi, 0.0)), (max(lo, 0.0), hi)]
            out[i, k] = sum(
                integrate.quad(integrand, u, v, epsabs=0.0, epsrel=1e-13, limit=200)[0]
                for u, v in pieces
                if u < v
            )
    return out
