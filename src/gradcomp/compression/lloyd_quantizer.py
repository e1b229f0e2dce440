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

``slip=True`` is the authors' quantizer as released
(:mod:`gradcomp.quantization.released_lloyd`): random initial levels (drawn from a stream
seeded by ``seed``) left unsorted, one centroid update, and values labelled with the sorted
thresholds but reconstructed with the unsorted levels, so not by their nearest level. Its side
information adds the range of the random draw, ``min(|min x|, |max x|)``; the receiver
redraws the levels from the shared seed.

If the fit or the design fails (e.g. constant values) or gives a non-finite level, uniform
min-max levels are used instead and a warning is logged: no NaN reaches the model.
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
    level_bits,
    level_values,
)
from gradcomp.distributions.fitting import FAMILIES as LLOYD_FAMILIES
from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.released_lloyd import released_design, released_labels
from gradcomp.quantization.symmetric_law import SymmetricLaw

log = logging.getLogger(__name__)

__all__ = ["FIT_TO", "LLOYD_FAMILIES", "LloydQuantizer", "default_fit"]

FIT_TO = ("update", "survivors")


@lru_cache(maxsize=256)
def _standard_normal_levels(n_levels: int, M: float):
    return lloyd_design("norm", {"loc": 0.0, "scale": 1.0}, n_levels, M).levels


def default_fit(x: np.ndarray, family: str, label: str, floc: float | None = None):
    """The model-based quantizers' default ``fit_fn``: :func:`gradcomp.distributions.fit`."""
    from gradcomp.distributions import fit

    return fit(x, family, floc=floc, label=label)


class LloydQuantizer(ValueQuantizer):
    """Lloyd quantizer for a fitted law (see the module doc); 2^R levels, R = ``rate``.

    ``fit_fn(x, family, label, floc)`` fits the law (default
    :func:`gradcomp.distributions.fit`); ``seed`` seeds the random initial levels of ``slip``.
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
        seed: int = 0,
    ):
        if family not in LLOYD_FAMILIES:
            raise ValueError(f"unknown Lloyd family {family!r}; expected one of {LLOYD_FAMILIES}")
        if fit_to not in FIT_TO:
            raise ValueError(f"unknown fit_to {fit_to!r}; expected one of {FIT_TO}")
        self.rate, self.family, self.M = int(rate), family, float(M)
        self.fit_to, self.slip = fit_to, bool(slip)
        self.fit_fn = fit_fn or default_fit
        self._slip_rng = np.random.default_rng([int(seed), 0x534C4950])  # "SLIP"

    @classmethod
    def from_spec(cls, spec, *, fit_fn=None, **kwargs):
        return cls(
            spec["rate"],
            spec["family"],
            spec["M"],
            fit_to=spec.get("lloyd_fit", "update"),
            slip=spec["slip"],
            fit_fn=fit_fn,
            seed=spec.get("seed") or 0,
        )

    @property
    def n_levels(self) -> int:
        return 2**self.rate

    def _fit(self, x: np.ndarray, full: np.ndarray | None, name: str):
        """(law parameters, tau): the whole update's law with loc 0 and tau the smallest kept
        magnitude (``fit_to="update"``), else the survivors' law (norm: their mean and std)."""
        if self.fit_to == "update" and full is not None:
            params = self.fit_fn(full, self.family, name, 0.0).params
            return {k: float(v) for k, v in params.items()}, float(np.min(np.abs(x)))
        if self.family == "norm":
            mean, std = float(x.mean()), float(x.std())
            if not std > 0:
                raise ValueError("zero standard deviation")
            return {"loc": mean, "scale": std}, 0.0
        return {k: float(v) for k, v in self.fit_fn(x, self.family, name).params.items()}, 0.0

    def _side(self, params: dict[str, float], tau: float, fit_update: bool) -> dict[str, float]:
        """The parameters sent, 32 bits each."""
        if fit_update:  # loc is fixed at 0
            return {**{k: v for k, v in params.items() if k != "loc"}, "tau": tau}
        if self.family == "norm":
            return {"mean": params["loc"], "std": params["scale"]}
        return dict(params)

    def _design(self, x: np.ndarray, full: np.ndarray | None, name: str):
        """Converged Lloyd levels (sorted, L) and the side information."""
        params, tau = self._fit(x, full, name)
        fit_update = self.fit_to == "update" and full is not None
        if self.family == "norm" and not fit_update:
            levels = params["loc"] + params["scale"] * _standard_normal_levels(
                self.n_levels, self.M
            )
        else:
            levels = lloyd_design(self.family, params, self.n_levels, self.M, tau=tau).levels
        return levels, self._side(params, tau, fit_update)

    def _encode_slip(self, values, x: np.ndarray, full: np.ndarray | None, name: str):
        """The released quantizer (see the module doc), as :class:`QuantizedValues`."""
        params, tau = self._fit(x, full, name)
        law = SymmetricLaw.from_family(self.family, params)
        x_min, x_max = float(x.min()), float(x.max())
        listed, thresholds = released_design(
            law, self.n_levels, self.M, x_min, x_max, self._slip_rng, tau=tau
        )
        _check_finite(listed)
        order = np.argsort(listed, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        indices = rank[released_labels(x, thresholds)]  # into the sorted levels
        side = self._side(params, tau, self.fit_to == "update" and full is not None)
        side["init_range"] = min(abs(x_min), abs(x_max))
        return QuantizedValues(
            self.kind,
            values.numel(),
            indices=torch.from_numpy(indices).to(values.device),
            levels=listed[order],
            side=side,
            value_bits=level_bits(self.n_levels),
        )

    def encode(
        self, values: torch.Tensor, name: str = "", full: torch.Tensor | None = None
    ) -> QuantizedValues:
        x = values.detach().to("cpu", torch.float64).numpy()
        whole = None if full is None else full.detach().to("cpu", torch.float64).numpy()
        try:
            if self.slip:
                return self._encode_slip(values, x, whole, name)
            levels, side = self._design(x, whole, name)
            _check_finite(levels)
        except (ValueError, ArithmeticError) as exc:  # GradientDataError is a ValueError
            log.warning(
                "lloyd %s on %r failed (%s); using uniform min-max levels", self.family, name, exc
            )
            q = UniformQuantizer(self.rate).encode(values, name)
            q.kind = self.kind
            return q
        return level_values(self.kind, values, levels, side)


def _check_finite(levels: np.ndarray) -> None:
    if not np.all(np.isfinite(levels)):
        raise FloatingPointError(f"non-finite Lloyd levels {levels}")
