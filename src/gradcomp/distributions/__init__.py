"""Maximum-likelihood fits of gradient entries (Norm, Laplace, GenNorm, double Weibull) and
their goodness of fit, in scipy.stats' names (``beta``, ``c``, ``loc``, ``scale``). The
library's floor: it imports no other package of it.
"""

from gradcomp.distributions.checks import GradientDataError, check_gradient
from gradcomp.distributions.fitting import (
    FAMILIES,
    SHAPE_BOUNDS,
    FittedDistribution,
    fit,
    fit_all,
    fit_gennorm,
    param_names,
)
from gradcomp.distributions.goodness_of_fit import (
    TAIL_LEVELS,
    goodness_of_fit,
    ks_statistic,
    tail_probabilities,
    trimmed_w2,
)

__all__ = [
    "FAMILIES",
    "SHAPE_BOUNDS",
    "TAIL_LEVELS",
    "FittedDistribution",
    "GradientDataError",
    "check_gradient",
    "fit",
    "fit_all",
    "fit_gennorm",
    "goodness_of_fit",
    "ks_statistic",
    "param_names",
    "tail_probabilities",
    "trimmed_w2",
]
