"""A checked compressor spec and its keys: :class:`CheckedSpec` (read-only, every key filled
in), :class:`SpecError` (naming the key at fault), the keys every spec may take and the
kinds' own options, derived from the registered kinds' classes (:func:`option_keys`), so that
a kind registered later takes its options without any list here changing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

import numpy as np

from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS

__all__ = [
    "BASE_KEYS",
    "DEFAULT_TOPK",
    "MAX_M",
    "MAX_SEED",
    "SOURCE_KEYS",
    "SPARSIFIERS",
    "CheckedSpec",
    "SpecError",
    "is_int",
    "is_number",
    "option_keys",
    "spec_keys",
]

#: The keep fraction of a ``topk`` or ``randomk`` sparsifier given without ``topk``: paper
#: Y's 45.2%, the one default of the library, the config (``lossy.topk``) and the DDP hook.
DEFAULT_TOPK = 0.452
#: The largest weight exponent M of a design (every kind that takes M): up to it
#: the weights ``|g / max|g||^M`` of entries down to 2^-16 of the largest stay normal float64
#: numbers (2^(-16 M) >= 2^-1022), so a design tells them apart; the study uses M <= 4.
MAX_M = 63
#: The largest compressor seed: every kind's draws take it (a count sketch's hash seeds are
#: ``1_000_003 seed + index``, below 2^63 up to here; torch's generators take 64 bits), and a
#: user's seed ``1000 seed + user`` (:func:`~gradcomp.compression.specs.user_seed`) must stay
#: below it too: the workflow's 32-bit run seeds give user seeds up to 4.3e12.
MAX_SEED = 2**43 - 1
#: The spec keys that say what builds the compressor: exactly one of them is given.
SOURCE_KEYS = ("quantizer", "compressor", "class")
SPARSIFIERS = ("topk", "randomk", "none")
#: The keys of the spec itself, whatever the kind (a kind's own options come after them).
BASE_KEYS = (
    "name", "quantizer", "family", "lloyd_fit", "rate", "M", "sparsifier", "topk",
    "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip", "seed",
    "huffman", "compressor", "class", "options", "memory_mode", "states",
)  # fmt: skip


def option_keys() -> tuple[str, ...]:
    """Keys only some kinds take: the union of the registered kinds' ``options`` (their
    classes' key -> default), in registry order, less :data:`BASE_KEYS` (a kind may give a
    base key its own default, as count_sketch does ``min_entries``)."""
    keys: dict[str, None] = {}
    for cls in (*QUANTIZERS.values(), *COMPRESSORS.values()):
        keys.update(dict.fromkeys(k for k in getattr(cls, "options", {}) if k not in BASE_KEYS))
    return tuple(keys)


def spec_keys() -> tuple[str, ...]:
    """Every key a spec may take: :data:`BASE_KEYS`, then :func:`option_keys`."""
    return (*BASE_KEYS, *option_keys())


class SpecError(ValueError):
    """A compressor spec is invalid; ``key`` names the offending key, ``other`` the key that
    contradicts it (None when it is wrong on its own)."""

    def __init__(self, key: str, message: str, other: str | None = None):
        self.key, self.message, self.other = key, message, other
        super().__init__(f"compressor spec key {key!r}: {message}")


class CheckedSpec(Mapping[str, Any]):
    """A spec that passed :func:`~gradcomp.compression.specs.check_spec`: every key of
    :func:`spec_keys` (None where the kind does not take it), read-only. Made by check_spec,
    or by :meth:`trusted` from the :meth:`plain` dict of one (a workflow job's param, checked
    when the workflow started)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any], _token: object = None):
        if _token is not CHECKED:
            raise TypeError("a CheckedSpec comes from check_spec or CheckedSpec.trusted")
        self._values = dict(values)

    @classmethod
    def trusted(cls, plain: Mapping[str, Any]) -> CheckedSpec:
        """The spec of :meth:`plain`'s dict, not checked again (only its keys are compared)."""
        keys = set(spec_keys())
        if set(plain) != keys:
            raise ValueError(f"not a checked spec: keys {sorted(set(plain) ^ keys)}")
        return cls(plain, CHECKED)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"CheckedSpec({self._values!r})"

    def __reduce__(self):
        return (CheckedSpec.trusted, (self._values,))

    def plain(self) -> dict[str, Any]:
        """A plain dict copy (a workflow param); :meth:`trusted` turns it back."""
        return dict(self._values)

    def with_seed(self, seed: int) -> CheckedSpec:
        """The same spec with random draws seeded ``seed`` (an integer in 0..:data:`MAX_SEED`)."""
        if not (is_int(seed) and 0 <= seed <= MAX_SEED):
            raise SpecError("seed", f"must be an integer in 0..{MAX_SEED} (2^43 - 1), got {seed!r}")
        return CheckedSpec({**self._values, "seed": int(seed)}, CHECKED)


#: The token that only the checker holds: a CheckedSpec made with it was checked.
CHECKED = object()


def is_number(v: Any) -> TypeGuard[int | float | np.integer | np.floating]:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def is_int(v: Any) -> TypeGuard[int | np.integer]:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
