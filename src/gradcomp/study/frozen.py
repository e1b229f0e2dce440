"""Read-only config values: :func:`freeze` makes a section read-only all the way down (the
study's sections hold nothing a rule could change), :func:`plain` turns a frozen value back
into lists and dicts, as a workflow param.

>>> f = freeze({"rates": [2, 3]})
>>> f["rates"], plain(f)
((2, 3), {'rates': [2, 3]})
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gradcomp.compression.specs import CheckedSpec

__all__ = ["freeze", "plain"]


def freeze(value: Any) -> Any:
    """``value`` read-only all the way down: mappings as ``MappingProxyType``, lists as tuples."""
    if isinstance(value, Mapping) and not isinstance(value, CheckedSpec):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """A frozen value as plain lists and dicts (checked specs as their dicts): a param."""
    if isinstance(value, CheckedSpec):
        return value.plain()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
