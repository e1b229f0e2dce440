"""What a compressor takes, checked before any work: one update, a mapping from tensor name
to a floating-point torch tensor, every entry finite.

Every built-in compressor's ``compress`` and the study's uplink call :func:`checked_update`
first, so a wrong input fails with an error that says what it takes, and a NaN or an
infinity fails with :class:`NonFiniteUpdateError` naming the tensor and how many entries,
never by spreading through a quantizer's levels into a whole tensor of NaNs (one NaN in the
minimum or maximum of uniform's range, or in a fitted law, poisons every level).

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

__all__ = ["FLOAT32_MAX", "NonFiniteUpdateError", "UnsendableValuesError", "check_sendable",
           "checked_update"]  # fmt: skip

#: The largest float32: levels or side values a kind sends as float32 cannot exceed it.
FLOAT32_MAX = float(np.finfo(np.float32).max)


class NonFiniteUpdateError(ValueError):
    """An update tensor holds NaN or infinite entries; ``tensor`` names it, ``count`` says
    how many."""

    def __init__(self, tensor: str, count: int, total: int, nan: int):
        self.tensor, self.count = tensor, count
        super().__init__(
            f"update tensor {tensor!r} has {count} non-finite entries of {total} ({nan} NaN, "
            f"{count - nan} infinite): refused before encoding"
        )


class UnsendableValuesError(ValueError):
    """An update tensor's values are finite but beyond what its kind sends them with (levels
    or side values as float32); ``tensor`` names it, ``kind`` the quantizer."""

    def __init__(self, kind: str, tensor: str, largest: float, carrier: str):
        self.kind, self.tensor, self.largest = kind, tensor, largest
        super().__init__(
            f"{kind}: update tensor {tensor!r} has |value| up to {largest:.4g}, beyond the "
            f"{FLOAT32_MAX:.4g} that its {carrier} can hold: refused before encoding"
        )


def check_sendable(kind: str, tensor: str, values: np.ndarray, carrier: str) -> None:
    """:class:`UnsendableValuesError` when finite ``values`` exceed float32's range, that of
    the ``carrier`` (e.g. "float32 levels") the kind sends them with."""
    largest = float(np.max(np.abs(values))) if np.size(values) else 0.0
    if largest > FLOAT32_MAX:
        raise UnsendableValuesError(kind, tensor, largest, carrier)


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
