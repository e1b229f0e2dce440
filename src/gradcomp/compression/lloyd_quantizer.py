"""``lloyd``: paper Y's model-based quantizer, Lloyd levels under ``|g|^M`` weighting for a
law fitted per tensor; both ends design the same levels from the parameters sent.

What the law is fitted to (``fit_to``):

- ``"update"`` (default): the family is fitted, with loc fixed at 0, to the tensor's whole
  update before sparsification (``full``), and Lloyd is designed on its conditional law on
  ``|x| >= tau``, tau being the smallest kept magnitude: the law of what is quantized. Side
  information: the shape (beta / c; none for norm and laplace), the scale and tau, 32 bits
  each. Without sparsification tau is the smallest magnitude, about 0: the plain fit.
- ``"survivors"`` (the paper's code): the family is fitted to the kept values as if they
  were untruncated, with a free loc (``family="norm"``: standardised by their mean and
  standard deviation, the Gaussian Lloyd-Max levels); top-K leaves a hole around zero that
  such a fit does not model.

``slip=True`` is the authors' quantizer as released
(:mod:`gradcomp.quantization.released_lloyd`): random initial levels (drawn from a stream
seeded by ``seed``) left unsorted, one centroid update, and values labelled with the sorted
thresholds but reconstructed with the unsorted levels, so not by their nearest level. Its side
information adds the range of the random draw, ``min(|min x|, |max x|)``; the draw's stream
is seeded by (``seed``, the update's index, the tensor's name), so the receiver redraws the
same levels (:meth:`LloydQuantizer.slip_rng`).

Side values travel as float32 (:attr:`LloydQuantizer.side_names`) and both ends design the
levels from the rounded values, so the receiver's levels are the sender's bit for bit.
:meth:`LloydQuantizer.encode_many` and :meth:`LloydQuantizer.read_sides` design the levels
of all tensors of an update together (:func:`design_levels`), the same levels as one by one.

If the fit or the design fails (e.g. constant values) or gives a non-finite level, uniform
min-max levels are used instead and a warning is logged: no NaN reaches the model. A 1-bit
design flag (charged with the side information) tells the receiver which levels to build;
the fallback's side values are the uniform quantizer's min and max.
"""

from __future__ import annotations

import logging
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, cast

import numpy as np
import torch

from gradcomp.coding.fields import FieldReader, FieldWriter
from gradcomp.compression.value_quantizers import (
    QuantizedValues,
    UniformQuantizer,
    ValueQuantizer,
    as_sent,
    level_bits,
    level_values,
    read_side_floats,
    write_side_floats,
)
from gradcomp.distributions.fitting import FAMILIES as LLOYD_FAMILIES
from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.lloyd_batch import lloyd_levels_batch
from gradcomp.quantization.released_lloyd import released_design, released_labels
from gradcomp.quantization.symmetric_law import SymmetricLaw

log = logging.getLogger(__name__)

__all__ = [
    "FIT_TO", "LLOYD_FAMILIES", "LloydQuantizer", "LloydValues", "default_fit", "design_levels",
    "forget_designs", "lloyd_levels",
]  # fmt: skip

FIT_TO = ("update", "survivors")
#: The flag that says whether the levels are the Lloyd design or the uniform fallback.
DESIGN_FLAG_BITS = 1
_SLIP = 0x534C4950  # "SLIP"


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

    Beyond its format (an entry whose reconstruction would be NaN or infinite: side values
    or levels beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "lloyd"
    wire_code = 5  # its byte in the wire's header: never reused
    title = "Lloyd"
    takes_M = True
    takes_family = True
    uses_full_tensor = True
    uses_step = True
    nearest_labels = True
    takes_slip = True
    lloyd_fits: ClassVar[tuple[str, ...]] = FIT_TO

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
        self.seed = int(seed)

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

    def n_symbols(self) -> int:
        return self.n_levels

    @property
    def side_names(self) -> tuple[str, ...]:
        """The side values sent, in order (float32 each): the law's shape (gennorm's beta,
        dweibull's c), then its scale and tau (``fit_to="update"``, loc fixed at 0), or the
        survivors' mean and std (norm) or shape, loc and scale; ``slip`` adds the range of
        its random initial levels."""
        shape = {"gennorm": ("beta",), "dweibull": ("c",)}.get(self.family, ())
        if self.fit_to == "update":
            names = (*shape, "scale", "tau")
        elif self.family == "norm":
            names = ("mean", "std")
        else:
            names = (*shape, "loc", "scale")
        return (*names, "init_range") if self.slip else names

    def _fit(self, x: np.ndarray, full: np.ndarray | None, name: str) -> dict[str, float]:
        """The side values (not yet rounded): the whole update's law with loc 0 and tau the
        smallest kept magnitude (``fit_to="update"``; without ``full`` the values are the
        whole tensor), else the survivors' law (norm: their mean and std)."""
        if self.fit_to == "update":
            params = self.fit_fn(x if full is None else full, self.family, name, 0.0).params
            return {**{k: float(v) for k, v in params.items() if k != "loc"},
                    "tau": float(np.min(np.abs(x)))}  # fmt: skip
        if self.family == "norm":
            mean, std = float(x.mean()), float(x.std())
            if not std > 0:
                raise ValueError("zero standard deviation")
            return {"mean": mean, "std": std}
        return {k: float(v) for k, v in self.fit_fn(x, self.family, name).params.items()}

    def _law(self, side: dict[str, float]) -> tuple[dict[str, float], float]:
        """(scipy parameters, tau) of the law the side values describe."""
        if self.family == "norm" and self.fit_to != "update":
            return {"loc": side["mean"], "scale": side["std"]}, 0.0
        params = {k: side[k] for k in self.side_names if k not in ("tau", "init_range")}
        return {"loc": 0.0, **params}, side.get("tau", 0.0)

    def slip_rng(self, name: str, step: int) -> np.random.Generator:
        """The stream of ``slip``'s random initial levels for tensor ``name`` in update
        ``step``: from the spec's seed, so that the receiver draws the same."""
        return np.random.default_rng([self.seed, int(step), zlib.crc32(name.encode()), _SLIP])

    def _designed(self, side: dict[str, float], name: str, step: int):
        """(sorted levels, thresholds in list order or None) from the side values as sent."""
        params, tau = self._law(side)
        if self.slip:
            law = SymmetricLaw.from_family(self.family, params)
            r = side["init_range"]
            listed, thresholds = released_design(
                law, self.n_levels, self.M, -r, r, self.slip_rng(name, step), tau=tau
            )
            _check_finite(listed)
            return listed, thresholds
        if self.family == "norm" and self.fit_to != "update":
            levels = params["loc"] + params["scale"] * _standard_normal_levels(
                self.n_levels, self.M
            )
        else:
            levels = lloyd_levels(self.family, tuple(params.items()), self.n_levels, self.M, tau)
        _check_finite(levels)
        return levels, None

    def _side(self, values: torch.Tensor, full: torch.Tensor | None, name: str):
        """(values as float64 numpy, side values as sent) of one tensor."""
        x = values.detach().to("cpu", torch.float64).numpy()
        whole = None if full is None else full.detach().to("cpu", torch.float64).numpy()
        side = self._fit(x, whole, name)
        if self.slip:
            side["init_range"] = min(abs(float(x.min())), abs(float(x.max())))
        return x, {k: as_sent(side[k]) for k in self.side_names}

    def _design_ahead(self, sides: list[dict[str, float]]) -> None:
        """Design the levels of all ``sides`` at once, so that :meth:`_designed` finds them
        (:func:`design_levels`); failures are left for :meth:`_designed` to meet."""
        if self.slip or (self.family == "norm" and self.fit_to != "update"):
            return
        laws = [self._law(side) for side in sides]
        requests = [(tuple(params.items()), tau) for params, tau in laws]
        design_levels(self.family, requests, self.n_levels, self.M)

    def encode(
        self, values: torch.Tensor, name: str = "", full: torch.Tensor | None = None, step: int = 0
    ) -> LloydValues:
        return self.encode_many([(values, name, {"full": full, "step": step})])[0]

    def encode_many(self, items) -> list[LloydValues]:
        """:meth:`encode` of each ``(values, name, {"full": ..., "step": ...})``: every fit
        first, then the designs together, then the labels."""
        prepared = []
        for values, name, extra in items:
            try:
                prepared.append(self._side(values, extra.get("full"), name))
            except (ValueError, ArithmeticError) as exc:  # GradientDataError is a ValueError
                prepared.append(exc)
        self._design_ahead([p[1] for p in prepared if not isinstance(p, Exception)])
        return [
            self._encode_one(values, name, extra.get("step", 0), p)
            for (values, name, extra), p in zip(items, prepared, strict=True)
        ]

    def _encode_one(self, values: torch.Tensor, name: str, step: int, prepared) -> LloydValues:
        try:
            if isinstance(prepared, Exception):
                raise prepared
            x, side = prepared
            levels, thresholds = self._designed(side, name, step)
        except (ValueError, ArithmeticError) as exc:
            log.warning(
                "lloyd %s on %r failed (%s); using uniform min-max levels", self.family, name, exc
            )
            q = UniformQuantizer(self.rate).encode(values, name)
            return LloydValues(self.kind, q.n, q.indices, levels=q.levels, side=q.side,
                               value_bits=q.value_bits, fallback=True)  # fmt: skip
        if thresholds is None:
            q = level_values(self.kind, values, levels, side)
            return LloydValues(self.kind, q.n, q.indices, levels=q.levels, side=side,
                               value_bits=q.value_bits)  # fmt: skip
        order = np.argsort(levels, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        indices = rank[released_labels(x, thresholds)]  # into the sorted levels
        return LloydValues(
            self.kind,
            values.numel(),
            indices=torch.from_numpy(indices).to(values.device),
            levels=levels[order],
            side=side,
            value_bits=level_bits(self.n_levels),
        )

    def write_side(self, q: QuantizedValues, w: FieldWriter) -> None:
        fallback = cast(LloydValues, q).fallback  # what this kind's encode returns
        w.u8(int(fallback))
        write_side_floats(w, q.side, UniformQuantizer.side_names if fallback else self.side_names)

    def read_side(self, r: FieldReader, n: int, *, name: str, step: int) -> LloydValues:
        return self.read_sides([(r, n, name, step)])[0]

    def read_sides(self, heads) -> list[LloydValues]:
        """:meth:`read_side` of each ``(reader, n, name, step)``: every side read first, then
        the designs together, then each tensor's levels (an error names its record)."""
        fields = []
        for r, _, _, _ in heads:
            fallback = r.u8("design")
            if fallback > 1:
                raise r.error("design", f"{fallback} is neither 0 (Lloyd) nor 1 (uniform fallback)")
            names = UniformQuantizer.side_names if fallback else self.side_names
            fields.append((bool(fallback), read_side_floats(r, names)))
        self._design_ahead([side for fallback, side in fields if not fallback])
        bits = level_bits(self.n_levels)
        out = []
        for (r, n, name, step), (fallback, side) in zip(heads, fields, strict=True):
            if fallback:
                levels = UniformQuantizer(self.rate).levels(side)
            else:
                try:
                    levels, _ = self._designed(side, name, step)
                except (ValueError, ArithmeticError) as exc:
                    fields_read = ", ".join(self.side_names)
                    raise r.error(fields_read, f"no levels from {side}: {exc}") from None
                levels = np.sort(levels)
            out.append(LloydValues(self.kind, n, levels=levels, side=side, value_bits=bits,
                                   fallback=fallback))  # fmt: skip
        return out


@dataclass
class LloydValues(QuantizedValues):
    """:class:`QuantizedValues` of a Lloyd design, or of its uniform ``fallback`` (when the fit
    or the design failed); the 1-bit design flag is charged with the side information."""

    fallback: bool = False

    @property
    def side_bits(self) -> int:
        return super().side_bits + DESIGN_FLAG_BITS


#: designed levels by (family, params, n_levels, M, tau), oldest first
_DESIGNS: OrderedDict[tuple, np.ndarray] = OrderedDict()
_DESIGNS_KEPT = 1024


def design_levels(
    family: str, requests: Sequence[tuple[tuple, float]], n_levels: int, M: float
) -> list[np.ndarray | ValueError]:
    """Converged Lloyd levels (sorted, L, read only) for each ``(params, tau)`` of a law of
    ``family`` (params: the scipy parameters as a tuple of items), or the ValueError its
    design met. The ones not designed before are designed together
    (:func:`~gradcomp.quantization.lloyd_batch.lloyd_levels_batch`, the same numbers as
    :func:`~gradcomp.quantization.lloyd.lloyd_design` alone): both ends design the same levels
    from the same rounded side values, and a kept design is the same numbers as a fresh one."""
    keys = [(family, params, n_levels, M, tau) for params, tau in requests]
    found: dict[tuple, np.ndarray | ValueError] = {k: _DESIGNS[k] for k in keys if k in _DESIGNS}
    todo, laws = [], []
    for key in dict.fromkeys(k for k in keys if k not in found):
        try:
            laws.append(SymmetricLaw.from_family(family, dict(key[1])))
            todo.append(key)
        except ValueError as exc:
            found[key] = exc
    if todo:
        designed = lloyd_levels_batch(laws, [k[4] for k in todo], n_levels, M)
        for key, levels in zip(todo, designed, strict=True):
            found[key] = levels
            if isinstance(levels, np.ndarray) and np.all(np.isfinite(levels)):
                levels.setflags(write=False)
                _DESIGNS[key] = levels
        while len(_DESIGNS) > _DESIGNS_KEPT:
            _DESIGNS.popitem(last=False)
    return [found[k] for k in keys]


def lloyd_levels(family: str, params: tuple, n_levels: int, M: float, tau: float) -> np.ndarray:
    """:func:`design_levels` of one law; raises its ValueError."""
    levels = design_levels(family, [(params, tau)], n_levels, M)[0]
    if isinstance(levels, ValueError):
        raise levels
    return levels


def forget_designs() -> None:
    """Empty the kept designs (a test or bench of a receiver that designs its own levels)."""
    _DESIGNS.clear()


def _check_finite(levels: np.ndarray) -> None:
    if not np.all(np.isfinite(levels)):
        raise FloatingPointError(f"non-finite Lloyd levels {levels}")
