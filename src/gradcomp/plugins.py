"""A user's own class named in the config as ``"package.module:Class"`` (a compressor, a
coder or a bound): importing it and checking its constructor, with errors that say what is
wrong. What methods the class needs is checked by the registry that takes it."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["check_constructor", "import_class"]

_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def import_class(path: Any) -> type:
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
    return cls


def check_constructor(cls: type, kwargs: Mapping[str, Any]) -> None:
    """ValueError unless ``cls(**kwargs)`` matches the constructor's signature."""
    try:
        inspect.signature(cls).bind(**kwargs)
    except TypeError as exc:
        raise ValueError(
            f"{cls.__module__}:{cls.__qualname__} cannot take {sorted(kwargs)} ({exc})"
        ) from exc
