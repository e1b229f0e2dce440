"""What a compressor takes, checked before any work: one update, a mapping from tensor name
to a floating-point torch tensor, every entry finite.

Every built-in compressor's ``compress`` and the study's uplink call :func:`checked_update`
first, so a wrong input fails with an error that says what it takes, and a NaN or an
infinity fails with :class:`NonFiniteUpdateError` naming the tensor and how many entries,
never by spreading through a quantizer's levels into a whole tensor of NaNs (one NaN in the
minimum or maximum of uniform's range, or in a fitted law, poisons every level).
A finite entry that the kind's format cannot carry (a float16 entry above 65504, a float64
entry beyond float32's range) fails the same way, as :class:`OutOfRangeUpdateError` (a
:class:`NonFiniteUpdateError`), when the compressor checks its reconstruction before it
sends anything: every built-in kind refuses rather than clamps (a clamped gradient would be
a wrong number a user does not see; the float8 kind's documented saturation to its grid is
the one exception).

>>> import torch
>>> checked_update({"w": torch.ones(3)})["w"].shape
torch.Size([3])
>>> checked_update({"w": torch.tensor([1.0, float("nan")])})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
gradcomp.compression.inputs.NonFiniteUpdateError: update tensor 'w' has 1 non-finite ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

__all__ = [
    "WIRE_LIMITS",
    "NonFiniteUpdateError",
    "OutOfRangeUpdateError",
    "check_sendable",
    "checked_update",
    "refuse_non_finite",
]


class NonFiniteUpdateError(ValueError):
    """An update tensor holds NaN or infinite entries; ``tensor`` names it, ``count`` says
    how many."""

    def __init__(self, tensor: str, count: int, total: int, nan: int):
        self.tensor, self.count = tensor, count
        super().__init__(
            f"update tensor {tensor!r} has {count} non-finite entries of {total} ({nan} NaN, "
            f"{count - nan} infinite): refused before encoding"
        )


class OutOfRangeUpdateError(NonFiniteUpdateError):
    """Finite entries of an update tensor that the kind's format cannot carry: its
    reconstruction (what the receiver decodes) would hold NaN or infinite values, e.g. a
    float16 entry above 65504, or a float64 entry beyond float32's range where the kind sends
    float32 numbers (raw entries, side values, levels or factors); ``tensor`` names it,
    ``kind`` the kind, ``count`` how many entries (or levels) are beyond, ``carrier`` what
    the kind sends them as. The one error for values a kind's format cannot carry; a
    :class:`NonFiniteUpdateError`, so that whoever handles one handles both."""

    def __init__(
        self,
        tensor: str,
        kind: str,
        count: int,
        total: int,
        largest: float,
        limit: float,
        carrier: str = "numbers",
    ):
        self.tensor, self.count, self.kind = tensor, count, kind
        self.largest, self.limit, self.carrier = largest, limit, carrier
        ValueError.__init__(
            self,
            f"update tensor {tensor!r} would decode with {count} of {total} entries NaN or "
            f"infinite: {kind} cannot carry its largest entry {largest:.6g} (its {carrier} "
            f"hold |x| <= {limit:.6g}); refused before encoding",
        )


#: The largest magnitude of each float format the kinds send (their ``wire_dtype``; float32
#: for the side values, levels and factors of the others).
WIRE_LIMITS = {"f2": 65504.0, "f4": float(torch.finfo(torch.float32).max),
               "f8": float(torch.finfo(torch.float64).max)}  # fmt: skip


def refuse_non_finite(
    tensor: str, kind: str, reconstruction: torch.Tensor, sent: torch.Tensor, limit: float
) -> None:
    """Raise :class:`OutOfRangeUpdateError` when the sender's ``reconstruction`` of tensor
    ``tensor`` (what a receiver decodes, in the tensor's dtype) holds NaN or infinite values
    although ``sent`` (its finite entries) does not."""
    finite = torch.isfinite(reconstruction)
    if not bool(finite.all()):
        largest = float(sent.detach().abs().max()) if sent.numel() else 0.0
        raise OutOfRangeUpdateError(
            tensor, kind, int((~finite).sum()), reconstruction.numel(), largest, limit
        )


def check_sendable(kind: str, tensor: str, values: np.ndarray, carrier: str) -> None:
    """:class:`OutOfRangeUpdateError` when finite ``values`` of tensor ``tensor`` (its
    entries, or the levels designed from them) exceed float32's range, that of the
    ``carrier`` (e.g. "float32 levels") the kind sends them with."""
    a = np.abs(np.asarray(values, dtype=np.float64))
    limit = WIRE_LIMITS["f4"]
    largest = float(np.max(a)) if a.size else 0.0
    if largest > limit:
        raise OutOfRangeUpdateError(
            tensor, kind, int((a > limit).sum()), a.size, largest, limit, carrier
        )


def _what(value: Any) -> str:
    kind = type(value).__name__
    if type(value).__module__ == "numpy":
        return f"a numpy {kind} (convert it with torch.from_numpy)"
    return f"a {kind}"


def checked_update(update: Any, who: str = "compress") -> Mapping[str, torch.Tensor]:
    """``update`` itself once it is a mapping of str names to floating-point torch tensors
    with finite entries; TypeError (what ``who`` takes, and what it got) or
    :class:`NonFiniteUpdateError` otherwise."""
    takes = f"{who} takes one update: a dict of tensor name -> floating-point torch tensor"
    if isinstance(update, torch.Tensor):
        raise TypeError(f"{takes}, got a single tensor: pass {{'name': tensor}}")
    if not isinstance(update, Mapping):
        raise TypeError(f"{takes}, got {_what(update)}")
    for name, t in update.items():
        if not isinstance(name, str):
            raise TypeError(f"{takes}; the name {name!r} is {_what(name)}, not a str")
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{takes}; entry {name!r} is {_what(t)}")
        if not torch.is_floating_point(t):
            raise TypeError(f"{takes}; entry {name!r} is not floating point ({t.dtype})")
        if t.is_meta:
            raise TypeError(f"{takes}; entry {name!r} is a meta tensor (a shape, no values)")
        finite = torch.isfinite(t)
        if not bool(finite.all()):
            bad = int((~finite).sum())
            nan = int(torch.isnan(t).sum())
            raise NonFiniteUpdateError(name, bad, t.numel(), nan)
    return update
