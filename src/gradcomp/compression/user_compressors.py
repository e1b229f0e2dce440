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

Optional, the byte format (:mod:`gradcomp.wire`): ``to_bytes(payload, ctx) ->
bytes`` on the object and a class method (or static method) ``from_bytes(data, layout, *,
rnd, **keywords) -> dict[str, Tensor]`` that decodes without the sender's object, from the
bytes, the :class:`~gradcomp.wire.records.UpdateLayout`, the update's index ``rnd`` and
the constructor's keywords (the receiver's: the same rate, M and options, and the user's
seed). With both the study counts 8 x the bytes and decodes them at the server
(:class:`~gradcomp.wire.user_receiver.UserReceiver`); without, the class's own ``rate`` is
used and its rows say that the bits are self-reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradcomp.plugins import check_constructor, import_class

__all__ = [
    "REQUIRED_METHODS",
    "build_user_compressor",
    "check_constructor",
    "constructor_kwargs",
    "load_class",
]

REQUIRED_METHODS = ("compress", "decompress", "rate")


def load_class(path: Any) -> type[Any]:
    """The compressor class at ``"package.module:Class"``; ValueError saying what is wrong."""
    cls = import_class(path)
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


def build_user_compressor(spec: Mapping[str, Any]):
    """One compressor object from a checked spec with a ``class``."""
    return load_class(spec["class"])(**constructor_kwargs(spec))
