"""``lloyd``: paper Y's model-based quantizer, Lloyd levels under ``|g|^M`` weighting for a
law fitted per tensor; both ends design the same levels from the parameters sent.

What the law is fitted to (``fit_to``):

- ``"update"`` (default): the family is fitted, with loc fixed at 0, to the tensor's whole
  update before sparsification (``full``), and Lloyd is designed on its conditional law on
  ``|x| >= tau``, tau being the smallest kept magnitude: the law of what is quantized. Side
  information: the shape (beta / c; none for norm and laplace), the scale and tau, 32 bits
  each. Without sparsification tau = 0 and this is the plain fit of the tensor.
- ``"survivors"`` (the paper's code): the family is fitted to the kept values as if they
  were untruncated, with a free loc (``family="norm"``: standardised by their mean and
  standard deviation, the Gaussian Lloyd-Max levels); top-K leaves a hole around zero that
  such a fit does not model.

``slip=True`` stops Lloyd after one iteration, started from uniform levels on +-3 std (the
authors' code's init is random; this is a deterministic stand-in). If the fit fails (e.g.
constant values), uniform min-max levels are used instead and a warning is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from gradcomp.compression.value_quantizers import (
    QuantizedValues,
    UniformQuantizer,
    ValueQuantizer,
    level_values,
)
from gradcomp.distributions.fitting import FAMILIES as LLOYD_FAMILIES
from gradcomp.quantization.lloyd import lloyd_design

log = logging.getLogger(__name__)

__all__ = ["FIT_TO", "LLOYD_FAMILIES", "LloydQuantizer"]

FIT_TO = ("update", "survivors")


@lru_cache(maxsize=256)
def _standard_normal_levels(n_levels: int, M: float, one_iteration: bool, init: str | None):
    res = lloyd_design(
        "norm", {"loc": 0.0, "scale": 1.0}, n_levels, M, one_iteration=one_iteration, init=init
    )
    return res.levels


def _default_fit(x: np.ndarray, family: str, label: str, floc: float | None = None):
    from gradcomp.distributions import fit

    return fit(x, family, floc=floc, label=label)


class LloydQuantizer(ValueQuantizer):
    """Lloyd quantizer for a fitted law (see the module doc); 2^R levels, R = ``rate``.

    ``fit_fn(x, family, label, floc)`` fits the law (default
    :func:`gradcomp.distributions.fit`).
    """

    kind = "lloyd"
    takes_M = True
    takes_family = True
    uses_full_tensor = True

    def __init__(
        self,
        rate: int,
        family: str = "gennorm",
        M: float = 0.0,
        *,
        fit_to: str = "update",
        slip: bool = False,
        fit_fn: Callable[..., Any] | None = None,
    ):
        if family not in LLOYD_FAMILIES:
            raise ValueError(f"unknown Lloyd family {family!r}; expected one of {LLOYD_FAMILIES}")
        if fit_to not in FIT_TO:
            raise ValueError(f"unknown fit_to {fit_to!r}; expected one of {FIT_TO}")
        self.rate, self.family, self.M = int(rate), family, float(M)
        self.fit_to, self.slip = fit_to, bool(slip)
        self.fit_fn = fit_fn or _default_fit

    @classmethod
    def from_spec(cls, spec, *, fit_fn=None, **kwargs):
        return cls(
            spec["rate"],
            spec["family"],
            spec["M"],
            fit_to=spec.get("lloyd_fit", "update"),
            slip=spec["slip"],
            fit_fn=fit_fn,
        )

    @property
    def n_levels(self) -> int:
        return 2**self.rate

    def _design_survivors(self, x: np.ndarray, name: str) -> tuple[np.ndarray, dict[str, float]]:
        init = "uniform" if self.slip else None
        if self.family == "norm":
            mean, std = float(x.mean()), float(x.std())
            if not std > 0:
                raise ValueError("zero standard deviation")
            z = _standard_normal_levels(self.n_levels, self.M, self.slip, init)
            return mean + std * z, {"mean": mean, "std": std}
        params = {k: float(v) for k, v in self.fit_fn(x, self.family, name).params.items()}
        res = lloyd_design(
            self.family, params, self.n_levels, self.M, one_iteration=self.slip, init=init
        )
        return res.levels, params

    def _design_update(
        self, x: np.ndarray, full: np.ndarray, name: str
    ) -> tuple[np.ndarray, dict[str, float]]:
        params = {k: float(v) for k, v in self.fit_fn(full, self.family, name, 0.0).params.items()}
        tau = float(np.min(np.abs(x)))
        res = lloyd_design(
            self.family,
            params,
            self.n_levels,
            self.M,
            tau=tau,
            one_iteration=self.slip,
            init="uniform" if self.slip else None,
        )
        side = {k: v for k, v in params.items() if k != "loc"}  # loc is fixed at 0
        return res.levels, {**side, "tau": tau}

    def encode(
        self, values: torch.Tensor, name: str = "", full: torch.Tensor | None = None
    ) -> QuantizedValues:
        x = values.detach().to("cpu", torch.float64).numpy()
        try:
            if self.fit_to == "update" and full is not None:
                whole = full.detach().to("cpu", torch.float64).numpy()
                levels, side = self._design_update(x, whole, name)
            else:
                levels, side = self._design_survivors(x, name)
        except ValueError as exc:  # GradientDataError is a ValueError
            log.warning(
                "lloyd %s on %r failed (%s); using uniform min-max levels", self.family, name, exc
            )
            q = UniformQuantizer(self.rate).encode(values, name)
            q.kind = self.kind
            return q
        return level_values(self.kind, values, levels, side)
