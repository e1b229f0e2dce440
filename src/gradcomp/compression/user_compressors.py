"""A user's own compressor class, named in a spec as ``class: "package.module:Class"``.

The class implements :class:`gradcomp.compression.protocol.Compressor`:
``compress(update: dict[str, Tensor]) -> (payload, ctx)``, ``decompress(payload, ctx) ->
dict[str, Tensor]`` (the update's names and shapes) and ``rate(payload, ctx) ->``
:class:`~gradcomp.compression.rates.RateBreakdown` (optionally ``kept_masks(payload, ctx)``).
One object is built per user and compresses all of that user's rounds, as
``Class(seed=..., rate=R, M=m, **options)``: ``seed`` always (run seed and user, for
stochastic compressors), ``rate`` and ``M`` only when the config entry lists ``rates`` or
``M``, and ``options`` the entry's other keys. The module must be importable (on
``PYTHONPATH``, or in the folder Snakemake runs in).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "REQUIRED_METHODS",
    "build_user_compressor",
    "check_constructor",
    "constructor_kwargs",
    "load_class",
]

REQUIRED_METHODS = ("compress", "decompress", "rate")
_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def load_class(path: Any) -> type:
    """The class at ``"package.module:Class"``; ValueError saying what is wrong."""
    if not (isinstance(path, str) and _PATH.match(path)):
        raise ValueError(f"{path!r} is not of the form 'package.module:Class'")
    module_name, class_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is the user's to fix, not a crash here
        raise ValueError(f"cannot import module {module_name!r} ({exc})") from exc
    cls = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        raise ValueError(f"module {module_name!r} has no class {class_name!r}")
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise ValueError(
            f"{path} lacks the compressor method(s) {', '.join(missing)} "
            f"(needs {', '.join(REQUIRED_METHODS)})"
        )
    return cls


def constructor_kwargs(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords the class of a checked spec is built with (see the module doc)."""
    kwargs = {**spec["options"], "seed": spec["seed"]}
    kwargs.update({k: spec[k] for k in ("rate", "M") if spec[k] is not None})
    return kwargs


def check_constructor(cls: type, kwargs: Mapping[str, Any]) -> None:
    """ValueError unless ``cls(**kwargs)`` matches the constructor's signature."""
    try:
        inspect.signature(cls).bind(**kwargs)
    except TypeError as exc:
        raise ValueError(
            f"{cls.__module__}:{cls.__qualname__} cannot take {sorted(kwargs)} ({exc})"
        ) from exc


def build_user_compressor(spec: Mapping[str, Any]):
    """One compressor object from a checked spec with a ``class``."""
    return load_class(spec["class"])(**constructor_kwargs(spec))
