"""Maximum-likelihood fits of gradient entries: Norm, Laplace, GenNorm and double Weibull.

Paper L models the entries of one gradient tensor as i.i.d. draws from a continuous law and
compares a normal (Norm) fit with a generalized normal (GenNorm, shape ``beta``) fit; a later
script of the authors adds Laplace.  This module fits all of them by maximum likelihood, in
scipy.stats' parametrisation and keyword names:

=========  ======================  ==================================================
family     params                  density of ``z = (x - loc) / scale``, times 1/scale
=========  ======================  ==================================================
norm       ``loc, scale``          ``exp(-z**2 / 2) / sqrt(2 pi)``
laplace    ``loc, scale``          ``exp(-|z|) / 2``
gennorm    ``beta, loc, scale``    ``beta / (2 Gamma(1/beta)) exp(-|z|**beta)``
dweibull   ``c, loc, scale``       ``c / 2 |z|**(c-1) exp(-|z|**c)``
=========  ======================  ==================================================

Everything is computed in float64 on every entry, whatever the input dtype.

Exact zeros (dead units, unused parameters, a last batch that never touched a unit) are an
atom that no continuous law has: left in, they make the GenNorm likelihood unbounded as
``beta -> 0`` and the fit degenerates onto the shape bound.  So by default (``zero_atom``)
a fit is the mixture ``p0 * delta_0 + (1 - p0) * F``: ``p0`` is the share of exact zeros
(its maximum-likelihood estimate) and the family ``F`` is fitted to the non-zero entries.
``params`` keep scipy's names for ``F``; :class:`FittedDistribution`'s cdf, sf and ppf are
those of the mixture.

GenNorm and double Weibull are fitted exactly by their profile likelihood in the shape
(:mod:`gradcomp.distributions.power_family`), with a free GenNorm location found by
:mod:`gradcomp.distributions.free_location`; Norm and Laplace have closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.stats

from gradcomp.distributions.checks import GradientDataError, check_gradient, split_zeros
from gradcomp.distributions.free_location import fit_power
from gradcomp.distributions.power_family import (
    DWEIBULL,
    GENNORM,
    SHAPE_BOUNDS,
    Moments,
    gennorm_log_scale,
    gennorm_loglik,
    mean_abs_power,
)

__all__ = [
    "FAMILIES",
    "SHAPE_BOUNDS",
    "FittedDistribution",
    "GradientDataError",
    "check_gradient",
    "fit",
    "fit_all",
    "fit_gennorm",
    "param_names",
]

FAMILIES: tuple[str, ...] = ("norm", "laplace", "gennorm", "dweibull")


def param_names(family: str) -> list[str]:
    """The family's scipy parameter names: shapes (gennorm ``beta``, dweibull ``c``), then
    ``loc`` and ``scale``."""
    shapes = getattr(scipy.stats, family).shapes
    return [*(shapes.split(", ") if shapes else []), "loc", "scale"]


# --------------------------------------------------------------------------------------------
# Fitted distribution
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FittedDistribution:
    """A maximum-likelihood fit of one family to one tensor.

    Attributes:
        family: one of :data:`FAMILIES` (the scipy.stats name).
        params: scipy keyword parameters, e.g. ``{"beta": .., "loc": .., "scale": ..}``;
            ``loc`` and ``scale`` are in the units of the data.
        n: number of entries fitted.
        loglik: total log-likelihood of the fitted entries (float64, nats).
        fixed: names of parameters held fixed rather than estimated (``("loc",)`` when the
            caller passed ``floc``); they do not count in :attr:`n_params`.
        p0: probability of an exact zero (the atom of the mixture ``p0 * delta_0 +
            (1 - p0) * F``), 0 when the entries had no zeros or the fit ignored them.
    """

    family: str
    params: dict[str, float]
    n: int
    loglik: float
    fixed: tuple[str, ...] = field(default=())
    p0: float = 0.0

    @property
    def n_params(self) -> int:
        """Number of free (estimated) parameters; ``p0`` counts when it is positive."""
        return len(self.params) - len(self.fixed) + (self.p0 > 0)

    @property
    def shape_at_bound(self) -> bool:
        """True when the shape (gennorm ``beta``, dweibull ``c``) ended on :data:`SHAPE_BOUNDS`:
        the maximum lies outside the searched range, or the data are degenerate."""
        shape = self.params.get("beta", self.params.get("c"))
        lo, hi = SHAPE_BOUNDS
        return shape is not None and not lo * (1 + 1e-9) < shape < hi * (1 - 1e-9)

    @property
    def aic(self) -> float:
        """Akaike information criterion ``2 k - 2 loglik`` (k = :attr:`n_params`)."""
        return 2.0 * self.n_params - 2.0 * self.loglik

    @property
    def bic(self) -> float:
        """Bayesian information criterion ``k ln(n) - 2 loglik``."""
        return self.n_params * math.log(self.n) - 2.0 * self.loglik

    def frozen(self) -> Any:
        """The scipy.stats frozen distribution of the continuous part ``F``."""
        return getattr(scipy.stats, self.family)(**self.params)

    def pdf(self, x: Any) -> np.ndarray:
        """Density of the continuous part, ``(1 - p0) f(x)`` (any shape; same shape out);
        the atom at zero has no density."""
        return (1.0 - self.p0) * self.frozen().pdf(x)

    def logpdf(self, x: Any) -> np.ndarray:
        """``log((1 - p0) f(x))`` (any shape; same shape out)."""
        return math.log1p(-self.p0) + self.frozen().logpdf(x)

    def cdf(self, x: Any) -> np.ndarray:
        """``P(X <= x)`` of the mixture (any shape; same shape out)."""
        x = np.asarray(x, dtype=np.float64)
        return (1.0 - self.p0) * self._continuous(x, upper=False) + self.p0 * (x >= 0)

    def sf(self, x: Any) -> np.ndarray:
        """``P(X > x)`` of the mixture, accurate in the upper tail (any shape; same shape out)."""
        x = np.asarray(x, dtype=np.float64)
        return (1.0 - self.p0) * self._continuous(x, upper=True) + self.p0 * (x < 0)

    def _continuous(self, x: np.ndarray, *, upper: bool) -> np.ndarray:
        """``F(x)`` (``upper``: ``1 - F(x)``) of the continuous part, the numbers scipy's
        ``law.cdf`` / ``law.sf`` give: the family's own ``_cdf`` / ``_sf`` of the
        standardised points, 0 or 1 at infinite ones. Not ``frozen().cdf``, whose freezing
        costs ~1 ms, nor ``law.cdf``, whose argument checks cost ~80 us a call: model pmfs
        call this per coder and tensor. Parameters outside the family's range go through
        ``law.cdf`` (NaN, as scipy says)."""
        law = getattr(scipy.stats, self.family)
        shapes = [self.params[k] for k in param_names(self.family)[:-2]]
        loc, scale = self.params["loc"], self.params["scale"]
        if not (scale > 0 and all(v > 0 for v in shapes)):
            return (law.sf if upper else law.cdf)(x, **self.params)
        z = (x - loc) / scale
        out = np.where(z > 0, 0.0 if upper else 1.0, 1.0 if upper else 0.0)
        out[np.isnan(z)] = np.nan
        finite = np.isfinite(z)
        out[finite] = (law._sf if upper else law._cdf)(z[finite], *shapes)
        return out

    def ppf(self, q: Any) -> np.ndarray:
        """Quantile function of the mixture at levels ``q`` in [0, 1] (any shape; same shape
        out): ``0`` for the levels the atom covers."""
        continuous = self.frozen()
        if self.p0 == 0:
            return continuous.ppf(q)
        q = np.asarray(q, dtype=np.float64)
        below = (1.0 - self.p0) * continuous.cdf(0.0)  # P(X < 0)
        level = np.where(q < below, q, np.maximum(q - self.p0, below)) / (1.0 - self.p0)
        inside = (q >= below) & (q <= below + self.p0)
        return np.where(inside, 0.0, continuous.ppf(np.clip(level, 0.0, 1.0)))


# --------------------------------------------------------------------------------------------
# Norm and Laplace: closed forms
# --------------------------------------------------------------------------------------------


def _fit_closed_form(
    a: np.ndarray,
    family: str,
    floc: float | None,
) -> tuple[dict[str, float], float, tuple[str, ...]]:
    """Norm (loc = mean) and Laplace (loc = median) as GenNorm with beta fixed at 2 and 1.

    For beta fixed, the GenNorm scale MLE is ``(beta * mean|x - loc|**beta)**(1/beta)`` and
    the log-likelihood per entry ``log(beta/2) - lgamma(1/beta) - 1/beta - log(scale)``;
    Norm's ``scale`` (the standard deviation) is GenNorm's divided by sqrt(2).
    """
    beta = 2.0 if family == "norm" else 1.0
    if floc is not None:
        loc = float(floc)
    else:
        loc = float(np.mean(a)) if family == "norm" else float(np.median(a))
    log_mean_pow = math.log(mean_abs_power(a, loc, beta))
    m = Moments(log_mean_pow, math.nan, math.nan, math.nan)
    loglik = a.size * gennorm_loglik(beta, m)
    scale = math.exp(gennorm_log_scale(beta, m)) / (math.sqrt(2.0) if beta == 2.0 else 1.0)
    return {"loc": loc, "scale": scale}, loglik, ("loc",) if floc is not None else ()


# --------------------------------------------------------------------------------------------
# Public fitting API
# --------------------------------------------------------------------------------------------


def _fit_checked(
    a: np.ndarray,
    family: str,
    floc: float | None,
    label: str,
    xtol: float = 1e-10,
    n_zeros: int = 0,
) -> FittedDistribution:
    """Fit ``family`` to the entries ``a`` (the non-zero ones when ``n_zeros`` zeros were
    split off: the fit is then the mixture with ``p0 = n_zeros / (a.size + n_zeros)``)."""
    if family in ("norm", "laplace"):
        params, loglik, fixed = _fit_closed_form(a, family, floc)
    elif family in ("gennorm", "dweibull"):
        fam = GENNORM if family == "gennorm" else DWEIBULL
        params, loglik, fixed = fit_power(a, fam, floc, xtol, label)
    else:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    n = a.size + n_zeros
    p0 = n_zeros / n
    if n_zeros:
        loglik += n_zeros * math.log(p0) + a.size * math.log1p(-p0)
    return FittedDistribution(family, params, int(n), float(loglik), fixed, p0)


def _prepared(x: Any, label: str, zero_atom: bool) -> tuple[np.ndarray, int]:
    """Checked float64 entries, and the number of zeros split off (0 unless ``zero_atom``)."""
    a = check_gradient(x, label)
    return split_zeros(a, label) if zero_atom else (a, 0)


def fit(
    x: Any,
    family: str,
    *,
    floc: float | None = None,
    label: str = "tensor",
    zero_atom: bool = True,
) -> FittedDistribution:
    """Maximum-likelihood fit of one family to all entries of ``x``.

    Args:
        x: gradient entries, any shape and real dtype (see :func:`check_gradient`).
        family: one of :data:`FAMILIES`.
        floc: fix ``loc`` at this value (e.g. 0) instead of estimating it.
        label: tensor name for error messages.
        zero_atom: model exact zeros as an atom ``p0`` and fit the family to the non-zero
            entries (see the module docstring); False fits the family to every entry, which
            degenerates (shape on its lower bound) when there are exact zeros.

    Returns:
        The fit; ``loglik`` is the float64 total log-likelihood of all entries (the atom's
        ``n0 log p0 + (n - n0) log(1 - p0)`` included).

    Notes:
        norm: loc = mean, scale = RMS deviation (closed form).  laplace: loc = median,
        scale = mean absolute deviation.  gennorm: exact MLE, see :func:`fit_gennorm`.
        dweibull: exact MLE of ``c`` and ``scale`` by the same profile method as gennorm, with
        ``loc = floc`` or, when free, the sample median (moved off the data if an entry equals
        it) rather than a full 3-parameter optimisation: the dweibull likelihood is unbounded
        as loc approaches any entry when ``c < 1``, so a free-loc MLE does not exist.
        For the same reason dweibull raises :class:`GradientDataError` if entries equal a
        fixed ``floc`` (e.g. exact zeros with ``floc=0``).

    Raises:
        GradientDataError: bad data (message contains ``label``): empty, non-finite, all
            zero, constant, or (with ``zero_atom``) non-zero entries that are all equal.
        ValueError: unknown family.

    Example (a Laplace sample: GenNorm's shape beta near 1)::

        >>> import numpy as np
        >>> g = np.random.default_rng(1).laplace(scale=0.01, size=10_000)
        >>> law = fit(g, "gennorm")
        >>> law.family, round(law.params["beta"], 2)
        ('gennorm', 1.01)
    """
    a, n_zeros = _prepared(x, label, zero_atom)
    return _fit_checked(a, family, floc, label, n_zeros=n_zeros)


def fit_gennorm(
    x: Any,
    *,
    floc: float | None = None,
    label: str = "tensor",
    xtol: float = 1e-10,
    zero_atom: bool = True,
) -> FittedDistribution:
    """Exact GenNorm MLE (``beta, loc, scale``) of all entries of ``x``.

    For given ``beta`` and ``loc`` the scale MLE is ``scale**beta = beta/n sum|x-loc|**beta``;
    the profile log-likelihood in ``beta`` is maximised by safeguarded Newton from the
    moment-ratio estimate (``E|x| / sqrt(E x**2)`` inverted in beta) to relative tolerance
    ``xtol``, with ``beta`` kept in :data:`SHAPE_BOUNDS`.  A free ``loc`` is found by an outer
    1-D maximisation of the profile in loc (see :func:`_fit_free_loc`): started from the fit
    of a 1/16 subsample on large inputs, to within 1e-7 nats (beta > 1) or, for beta <= 1,
    where the profile is rough, by an exhaustive search over the entries near its optimum.
    The log-likelihood is at least scipy.stats.gennorm.fit's in all cases tried (up to
    ~1e-6 relative for beta < 0.5 on a few hundred entries, where the profile in loc is
    jagged on the scale of its width).

    Cost: about 5 streamed passes over the data with ``floc`` and about 10 with a free loc
    on large inputs; one float64 array of ``x.size`` entries besides the float64 copy of
    non-float64 input.

    Args:
        x: gradient entries, any shape and real dtype.
        floc: fix ``loc`` (e.g. 0) instead of estimating it.
        label: tensor name for error messages.
        xtol: relative tolerance on ``beta``.
        zero_atom: as in :func:`fit`.
    """
    a, n_zeros = _prepared(x, label, zero_atom)
    return _fit_checked(a, "gennorm", floc, label, xtol, n_zeros)


def fit_all(
    x: Any,
    families: Iterable[str] = FAMILIES,
    *,
    floc: float | None = None,
    label: str = "tensor",
    zero_atom: bool = True,
) -> dict[str, FittedDistribution]:
    """Fit each of ``families`` to ``x`` (checked and converted once); ``{family: fit}``.
    Keywords as in :func:`fit`."""
    a, n_zeros = _prepared(x, label, zero_atom)
    return {fam: _fit_checked(a, fam, floc, label, n_zeros=n_zeros) for fam in families}
