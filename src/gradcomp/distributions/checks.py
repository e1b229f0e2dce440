"""Input checks for the fits: gradient entries as one flat float64 array, or a clear error."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["GradientDataError", "check_gradient", "split_zeros"]


class GradientDataError(ValueError):
    """The gradient data cannot be fitted (empty, non-finite, all zero, constant, ...).

    The message names the tensor label the caller passed.
    """


def check_gradient(x: Any, label: str = "tensor") -> np.ndarray:
    """Validate gradient entries and return them as a flat float64 array.

    Args:
        x: array-like of any shape (numpy array, CPU/GPU torch tensor, list), real numbers.
        label: name of the tensor, used in error messages.

    Returns:
        1-D float64 array of all entries: a view of ``x`` when it already is contiguous
        float64 (do not modify it), otherwise one copy.

    Raises:
        GradientDataError: for empty input, NaN or infinite entries (counted), all-zero input
            or constant input.  The message contains ``label``.
    """
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch tensor, without importing torch
        x = x.detach().cpu().double().numpy()  # the one copy; also takes bf16 / fp16
    try:
        a = np.asarray(x)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise GradientDataError(f"{label}: cannot convert to an array ({exc})") from exc
    if a.dtype.kind not in "biuf":
        raise GradientDataError(f"{label}: expected real numbers, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise GradientDataError(f"{label}: no entries to fit (empty tensor)")
    lo, hi = float(a.min()), float(a.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        n_nan = int(np.count_nonzero(np.isnan(a)))
        n_inf = int(np.count_nonzero(np.isinf(a)))
        raise GradientDataError(
            f"{label}: {n_nan} NaN and {n_inf} infinite entries out of {a.size}"
        )
    if lo == hi:
        if lo == 0.0:
            raise GradientDataError(f"{label}: all {a.size} entries are zero")
        raise GradientDataError(f"{label}: all {a.size} entries equal {lo!r} (constant)")
    return a


def split_zeros(a: np.ndarray, label: str = "tensor") -> tuple[np.ndarray, int]:
    """The non-zero entries of checked entries ``a`` and the number of exact zeros.

    Returns ``(a, 0)`` itself when there is no zero.  Raises :class:`GradientDataError`
    (naming ``label``) when the non-zero entries are all equal: no continuous law can be
    fitted to them.  (All-zero input is rejected earlier, by :func:`check_gradient`.)
    """
    nonzero = a != 0
    n_zeros = a.size - int(np.count_nonzero(nonzero))
    if n_zeros == 0:
        return a, 0
    rest = a[nonzero]
    if rest.size and rest.min() == rest.max():
        raise GradientDataError(
            f"{label}: the {rest.size} non-zero entries all equal {float(rest[0])!r} "
            f"({n_zeros} exact zeros besides): no continuous law to fit"
        )
    return rest, n_zeros
