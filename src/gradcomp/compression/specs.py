"""Compressor specs: the one place where a compressor's settings are checked and built.

A *spec* is a plain dict describing one compressor at one rate and M (what one federated run
uses); :func:`build_compressor` turns it into a compressor object: a :class:`QuantizerPipeline`
(memory, sparsifier, value quantizer, Huffman) for a ``quantizer`` kind, a self-contained
compressor of :data:`COMPRESSORS` for a ``compressor`` kind (PowerSGD), or a user's
class for ``class`` (:mod:`~gradcomp.compression.user_compressors`).
:func:`check_spec` returns a :class:`CheckedSpec` (read-only, every key filled in), which
:func:`build_compressor` builds without checking it again; the workflow checks every spec once,
before any job starts, and a job rebuilds its spec with :meth:`CheckedSpec.trusted`.

Spec keys (``None`` means absent):

- exactly one of ``quantizer`` (a kind of :data:`gradcomp.compression.registry.QUANTIZERS`,
  which includes the field's qsgd, terngrad and scaled_sign), ``compressor`` (a kind of
  :data:`gradcomp.compression.registry.COMPRESSORS`; it takes only ``name`` and the
  keys in its class's ``spec_keys``) or ``class`` (``"package.module:Class"``; it takes
  ``name``, ``rate`` (integer >= 0), ``M``, ``seed`` and ``options``, a mapping of
  constructor keywords).
- ``family``: the fitted law of a ``lloyd`` quantizer (required there, refused elsewhere).
- ``lloyd_fit``: ``"update"`` (default: fit the tensor's whole update, design for its law
  beyond the top-K threshold) or ``"survivors"`` (the paper's code: fit the kept values as
  if untruncated); ``lloyd`` only.
- ``rate``: bits per sent value, an integer in 1..16 (qsgd: 2..16) for kinds without a fixed
  rate; kinds with one (none: 32, float16: 16, terngrad: 2, scaled_sign: 1) accept only that
  value. For powersgd, the rank r.
- ``M``: weight exponent >= 0 of the |g|^M distortion (kinds that take M; others only 0).
- ``sparsifier``: ``"topk"`` (global top-K), ``"randomk"`` (random-K scaled by 1/p, positions
  from a 32-bit seed; unscaled with ``error_feedback``, whose memory diverges otherwise) or
  ``"none"`` (dense, no positions); default ``"topk"`` when a ``topk`` fraction is given,
  else ``"none"``.
- ``topk``: keep fraction in (0, 1] of the sparsifier (paper Y: 0.452, the ``lossy.topk``
  default).
- ``topk_budget_percent``: P > 0; keep P / (100 rate) instead (capped at 1).
- ``min_entries``: integer >= 0, default 1000: smaller tensors are sent raw at 32 bits.
- ``error_feedback`` (bool, default False), ``memory_decay`` (in [0, 1], default 1).
- ``slip`` (bool, default False): the authors' code as released: uniform 2^R + 1 levels, and
  the Lloyd quantizer with seeded random initial levels, one update and labels indexed into
  the unsorted levels (:mod:`gradcomp.quantization.released_lloyd`).
- ``seed`` (int, default 0): every random draw (channel noise, stochastic rounding, random-K
  positions, PowerSGD's first Q); the workflow gives each user its own.
- ``huffman`` (bool, default True): entropy-code level indices with a real Huffman bitstream.
- ``memory_mode``: ``"residual"`` (default), ``"m22"`` or ``"m22_slip"``
  (:mod:`~gradcomp.compression.memory`; the m22 modes need ``error_feedback`` and default
  ``memory_decay`` to 0.3); quantizer kinds only.
- A kind's own options (its class's ``options``: key -> default, checked by its
  ``check_option``): float8 ``float8_format`` / ``float8_scaling`` / ``float8_ties``, qsgd
  ``bucket_size``, count_sketch ``rows`` / ``sketch_k_ratio`` / ``min_entries`` /
  ``sketch_scope`` / ``sketch_feedback`` / ``sketch_hash`` / ``sketch_topk``
  (:mod:`~gradcomp.compression.count_sketch`; a count sketch takes no ``topk``: k is set by
  its columns, and a sketch worse than sending nothing on a test vector is refused); other
  kinds refuse them. A kind may check its options together (class method
  ``check_together(spec) -> (key, why) | None``).
- ``states``: trellis states of a ``tcq`` quantizer, a power of 2 in 4..256 (default 8;
  refused elsewhere). ``tcq`` takes a ``family`` like ``lloyd`` and a rate in 1..8.
- ``name``: a label (lowercase letters and digits in a config entry).

Compressor entries (one compressor over several rates and M values) are expanded into
specs by :mod:`gradcomp.compression.entries`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradcomp.compression import user_compressors
from gradcomp.compression.lloyd_quantizer import FIT_TO, LLOYD_FAMILIES
from gradcomp.compression.memory import DEFAULT_DECAY, MEMORY_MODES, ResidualMemory
from gradcomp.compression.random_k import RandomK
from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.update_compression import Quantize, QuantizerPipeline
from gradcomp.compression.value_quantizers import ValueQuantizer

__all__ = [
    "SOURCE_KEYS",
    "SPARSIFIERS",
    "SPEC_KEYS",
    "COMPRESSORS",
    "SpecError",
    "build_compressor",
    "check_spec",
    "is_int",
    "is_number",
    "make_quantizer",
    "variant_label",
]

#: The spec keys that say what builds the compressor: exactly one of them is given.
SOURCE_KEYS = ("quantizer", "compressor", "class")
SPARSIFIERS = ("topk", "randomk", "none")
#: Keys only some kinds take (their classes' ``options``); the other kinds refuse them.
OPTION_KEYS = (
    "float8_format",
    "float8_scaling",
    "float8_ties",
    "bucket_size",
    "rows",
    "sketch_scope",
    "sketch_k_ratio",
    "sketch_feedback",
    "sketch_hash",
    "sketch_topk",
)
SPEC_KEYS = (
    "name", "quantizer", "family", "lloyd_fit", "rate", "M", "sparsifier", "topk",
    "topk_budget_percent", "min_entries", "error_feedback", "memory_decay", "slip", "seed",
    "huffman", "compressor", "class", "options", "memory_mode", "states", *OPTION_KEYS,
)  # fmt: skip


class SpecError(ValueError):
    """A compressor spec is invalid; ``key`` names the offending key."""

    def __init__(self, key: str, message: str):
        self.key, self.message = key, message
        super().__init__(f"compressor spec key {key!r}: {message}")


class CheckedSpec(Mapping[str, Any]):
    """A spec that passed :func:`check_spec`: every key of :data:`SPEC_KEYS` (None where the
    kind does not take it), read-only. Made by :func:`check_spec`, or by :meth:`trusted` from
    the :meth:`plain` dict of one (a workflow job's param, checked when the workflow started)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any], _token: object = None):
        if _token is not _CHECKED:
            raise TypeError("a CheckedSpec comes from check_spec or CheckedSpec.trusted")
        self._values = dict(values)

    @classmethod
    def trusted(cls, plain: Mapping[str, Any]) -> CheckedSpec:
        """The spec of :meth:`plain`'s dict, not checked again (only its keys are compared)."""
        if set(plain) != set(SPEC_KEYS):
            raise ValueError(f"not a checked spec: keys {sorted(set(plain) ^ set(SPEC_KEYS))}")
        return cls(plain, _CHECKED)

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
        """The same spec with random draws seeded ``seed`` (an integer)."""
        if not is_int(seed):
            raise SpecError("seed", f"must be an integer, got {seed!r}")
        return CheckedSpec({**self._values, "seed": int(seed)}, _CHECKED)


_CHECKED = object()


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def check_spec(spec: Mapping[str, Any]) -> CheckedSpec:
    """The spec with defaults filled in and the top-K fraction resolved; raises :class:`SpecError`.

    The result has every key of :data:`SPEC_KEYS` (None where the kind does not take it);
    ``topk`` is the keep fraction actually used (``topk_budget_percent`` applied) or None when
    ``sparsifier`` is ``"none"``.
    """
    return CheckedSpec(_checked(spec), _CHECKED)


def _checked(spec: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise TypeError("compressor spec must be a mapping")
    for key in spec:
        if key not in SPEC_KEYS:
            raise SpecError(key, f"unknown key; allowed keys are {', '.join(SPEC_KEYS)}")
    s = {k: v for k, v in spec.items() if v is not None}
    sources = [k for k in SOURCE_KEYS if k in s]
    if len(sources) > 1:
        raise SpecError(sources[1], f"give one of {', '.join(SOURCE_KEYS)}, not several")
    if sources == ["compressor"]:
        return _check_update_kind(s)
    if sources == ["class"]:
        return _check_class(s)
    if "options" in s:
        raise SpecError("options", "only class specs take options")

    kind = s.get("quantizer")
    if kind not in QUANTIZERS:
        raise SpecError("quantizer", f"{kind!r} is not one of {tuple(QUANTIZERS)}")
    cls = QUANTIZERS[kind]

    family = s.get("family")
    if cls.takes_family:
        if family not in LLOYD_FAMILIES:
            raise SpecError(
                "family", f"{family!r} is not one of {LLOYD_FAMILIES} ({kind} needs one)"
            )
    elif family is not None:
        raise SpecError("family", f"only lloyd quantizers take a family, not {kind}")
    lloyd_fit = s.get("lloyd_fit", "update")
    if lloyd_fit not in FIT_TO:
        raise SpecError("lloyd_fit", f"{lloyd_fit!r} is not one of {FIT_TO}")

    rate = s.get("rate")
    if cls.fixed_rate is not None:
        if rate is not None and rate != cls.fixed_rate:
            raise SpecError("rate", f"{kind} sends {cls.fixed_rate} bits per entry, not {rate}")
        rate = cls.fixed_rate
    else:
        low, high = getattr(cls, "min_rate", 1), getattr(cls, "max_rate", 16)
        if not (is_int(rate) and low <= rate <= high):
            raise SpecError(
                "rate", f"{kind} needs an integer rate in {low}..{high} bits, got {rate!r}"
            )

    states = s.get("states")
    allowed_states = getattr(cls, "states_allowed", None)
    if allowed_states is not None:
        states = 8 if states is None else states
        if not (is_int(states) and states in allowed_states):
            raise SpecError("states", f"{kind} takes states in {allowed_states}, got {states!r}")
    elif states is not None:
        raise SpecError("states", f"only trellis quantizers (tcq) take states, not {kind}")

    memory_mode = s.get("memory_mode", "residual")
    if memory_mode not in MEMORY_MODES:
        raise SpecError("memory_mode", f"{memory_mode!r} is not one of {MEMORY_MODES}")
    if memory_mode != "residual" and not s.get("error_feedback", False):
        raise SpecError("memory_mode", f"{memory_mode} is a memory: it needs error_feedback true")
    common = _check_common(s, DEFAULT_DECAY[memory_mode])
    if not cls.takes_M and common["M"] != 0:
        raise SpecError("M", f"only lloyd quantizers take M, not {kind}")

    sparsifier = s.get("sparsifier", "topk" if {"topk", "topk_budget_percent"} & set(s) else "none")
    if sparsifier not in SPARSIFIERS:
        raise SpecError("sparsifier", f"{sparsifier!r} is not one of {SPARSIFIERS}")
    topk = s.get("topk", 1.0)
    if not (is_number(topk) and 0 < topk <= 1):
        raise SpecError("topk", f"must be a fraction in (0, 1], got {topk!r}")
    budget = s.get("topk_budget_percent")
    if budget is not None:
        if not (is_number(budget) and budget > 0):
            raise SpecError("topk_budget_percent", f"must be a number > 0, got {budget!r}")
        topk = min(1.0, budget / (100.0 * rate))

    min_entries = s.get("min_entries", 1000)
    if not (is_int(min_entries) and min_entries >= 0):
        raise SpecError("min_entries", f"must be an integer >= 0, got {min_entries!r}")

    return _full_spec(
        {**common, **_check_options(s, kind, cls)},
        memory_mode=memory_mode,
        name=str(s.get("name", kind)),
        quantizer=kind,
        family=family,
        lloyd_fit=lloyd_fit,
        rate=int(rate),
        sparsifier=sparsifier,
        topk=float(topk) if sparsifier != "none" else None,
        topk_budget_percent=budget,
        min_entries=int(min_entries),
        states=None if states is None else int(states),
    )


def _check_options(s: Mapping[str, Any], kind: str, cls: type) -> dict[str, Any]:
    """The kind's own options (class attribute ``options``: key -> default), checked by the
    class's ``check_option``; another kind's option keys are refused."""
    takes = getattr(cls, "options", {})
    for key in OPTION_KEYS:
        if key in s and key not in takes:
            raise SpecError(key, f"{kind} does not take {key}")
    out = {}
    for key, default in takes.items():
        value = s.get(key, default)
        problem = cls.check_option(key, value)
        if problem is not None:
            raise SpecError(key, problem)
        out[key] = value
    return out


def _check_common(s: Mapping[str, Any], default_decay: float = 1.0) -> dict[str, Any]:
    """The checked keys every kind may take: M, the flags, memory decay and seed."""
    M = s.get("M", 0)
    if not (is_number(M) and M >= 0 and math.isfinite(M)):
        raise SpecError("M", f"must be a number >= 0, got {M!r}")
    for key in ("error_feedback", "slip", "huffman"):
        if key in s and not isinstance(s[key], bool):
            raise SpecError(key, f"must be true or false, got {s[key]!r}")
    decay = s.get("memory_decay", default_decay)
    if not (is_number(decay) and 0 <= decay <= 1):
        raise SpecError("memory_decay", f"must be in [0, 1], got {decay!r}")
    seed = s.get("seed", 0)
    if not is_int(seed):
        raise SpecError("seed", f"must be an integer, got {seed!r}")
    return {
        "M": float(M),
        "error_feedback": s.get("error_feedback", False),
        "memory_decay": float(decay),
        "slip": s.get("slip", False),
        "seed": int(seed),
        "huffman": s.get("huffman", True),
    }


def _full_spec(common: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """Every key of :data:`SPEC_KEYS`: ``values``, then ``common``, else None."""
    return {k: values.get(k, common.get(k)) for k in SPEC_KEYS}


def _refuse_other_keys(s: Mapping[str, Any], kind: str, takes: tuple[str, ...]) -> None:
    for key in s:
        if key not in ("name", *takes) and not (key == "M" and s[key] == 0):
            raise SpecError(key, f"{kind} does not take {key} (it takes {', '.join(takes)})")


def _check_update_kind(s: Mapping[str, Any]) -> dict[str, Any]:
    kind = s["compressor"]
    cls = COMPRESSORS.get(kind)
    if cls is None:
        raise SpecError("compressor", f"{kind!r} is not one of {tuple(COMPRESSORS)}")
    options = getattr(cls, "options", {})
    _refuse_other_keys(s, kind, ("compressor", *cls.spec_keys, *options))
    rate = s.get("rate")
    if not (is_int(rate) and 1 <= rate <= cls.max_rate):
        raise SpecError("rate", f"{kind} needs an integer rate in 1..{cls.max_rate}, got {rate!r}")
    common = {k: v for k, v in _check_common(s).items() if k in cls.spec_keys}
    common.update(_check_options(s, kind, cls))
    spec = _full_spec(common, name=str(s.get("name", kind)), compressor=kind, rate=int(rate))
    together = getattr(cls, "check_together", None)
    problem = together(spec) if together is not None else None
    if problem is not None:
        raise SpecError(*problem)
    return spec


def _check_class(s: Mapping[str, Any]) -> dict[str, Any]:
    path = s["class"]
    _refuse_other_keys(s, f"class {path}", ("class", "rate", "M", "seed", "options"))
    try:
        cls = user_compressors.load_class(path)
    except ValueError as err:
        raise SpecError("class", str(err)) from None
    rate = s.get("rate")
    if rate is not None and not (is_int(rate) and rate >= 0):
        raise SpecError("rate", f"must be an integer >= 0, got {rate!r}")
    options = s.get("options", {})
    if not (isinstance(options, Mapping) and all(isinstance(k, str) for k in options)):
        raise SpecError("options", f"must be a mapping of keywords, got {options!r}")
    common = _check_common(s)
    spec = _full_spec(
        {"seed": common["seed"], "M": common["M"] if "M" in s else None},
        name=str(s.get("name", path)),
        rate=None if rate is None else int(rate),
        options=dict(options),
        **{"class": path},
    )
    try:
        user_compressors.check_constructor(cls, user_compressors.constructor_kwargs(spec))
    except ValueError as err:
        raise SpecError("class", str(err)) from None
    return spec


def make_quantizer(
    spec: Mapping[str, Any], *, fit_fn: Callable[..., Any] | None = None
) -> ValueQuantizer:
    """The value quantizer of a checked spec (see :func:`check_spec`), from the registry."""
    return QUANTIZERS[spec["quantizer"]].from_spec(spec, fit_fn=fit_fn)


def build_compressor(
    spec: Mapping[str, Any],
    *,
    fit_fn: Callable[..., Any] | None = None,
    entropy_coder: Callable[[np.ndarray], Any] | None = None,
) -> Any:
    """The compressor of a spec (see the module doc); raises :class:`SpecError`. A
    :class:`CheckedSpec` is built as it is, any other mapping is checked first.

    A :class:`QuantizerPipeline` for a ``quantizer`` kind (its entropy coder: ``entropy_coder``,
    else the quantizer's own ``entropy_coder`` method if it has one, else Huffman), else the
    ``compressor`` kind's or the user's class. Each has ``compress``, ``decompress``, ``rate``.
    """
    s = spec if isinstance(spec, CheckedSpec) else check_spec(spec)
    if s["compressor"] is not None:
        return COMPRESSORS[s["compressor"]].from_spec(s)
    if s["class"] is not None:
        return user_compressors.build_user_compressor(s)
    quantizer = make_quantizer(s, fit_fn=fit_fn)
    sparsifier = None
    if s["sparsifier"] == "topk":
        sparsifier = TopK(s["topk"])
    elif s["sparsifier"] == "randomk":
        # with error feedback unscaled (Stich et al. 2018): the scaled one's memory diverges
        sparsifier = RandomK(s["topk"], seed=s["seed"], unbiased=not s["error_feedback"])
    return QuantizerPipeline(
        Quantize(quantizer, s["min_entries"]),
        topk=sparsifier,
        memory=(
            ResidualMemory(s["memory_decay"], s["memory_mode"]) if s["error_feedback"] else None
        ),
        huffman=s["huffman"],
        entropy_coder=entropy_coder or getattr(quantizer, "entropy_coder", None),
        name=s["name"],
    )


def variant_label(name: str, rate: int, M: int) -> str:
    """``{name}/R{rate}_M{M}``: a run's folder and a variant's label for people (tables carry
    the name, rate and M as columns; nothing parses a label back)."""
    return f"{name}/R{rate}_M{M}"
