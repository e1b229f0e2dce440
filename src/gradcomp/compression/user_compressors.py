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

Optional, the byte format (:mod:`gradcomp.compression.wire`): ``to_bytes(payload, ctx) ->
bytes`` on the object and a class method (or static method) ``from_bytes(data, layout, *,
rnd, **keywords) -> dict[str, Tensor]`` that decodes without the sender's object, from the
bytes, the :class:`~gradcomp.compression.wire.UpdateLayout`, the update's index ``rnd`` and
the constructor's keywords (the receiver's: the same rate, M and options, and the user's
seed). With both the study counts 8 x the bytes and decodes them at the server
(:class:`UserReceiver`); without, the class's own ``rate`` is used and its rows say that the
bits are self-reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from gradcomp.compression.wire_records import check_finite
from gradcomp.plugins import check_constructor, import_class

__all__ = [
    "REQUIRED_METHODS",
    "UserReceiver",
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


class UserReceiver:
    """The server's decoder of a user class's bytes: its ``from_bytes`` with the layout, the
    update's index and the constructor keywords of ``spec`` (a checked spec with the user's
    seed); the result is checked against the layout (names, shapes) and for NaN or infinite values
    (:class:`~gradcomp.compression.wire_records.NonFiniteDecodeError`) and moved to the CPU."""

    def __init__(self, spec: Mapping[str, Any], layout, *, rnd: int):
        self.cls = load_class(spec["class"])
        if not callable(getattr(self.cls, "from_bytes", None)):
            raise TypeError(f"{spec['class']} has no from_bytes: its bits are self-reported")
        self.layout, self.rnd, self.kwargs = layout, int(rnd), constructor_kwargs(spec)

    def decode(self, data) -> dict[str, torch.Tensor]:
        out = self.cls.from_bytes(bytes(data), self.layout, rnd=self.rnd, **self.kwargs)
        decoded = {}
        for name, shape, _ in self.layout:
            t = out.get(name) if isinstance(out, Mapping) else None
            if t is None or tuple(t.shape) != shape:
                got = None if t is None else tuple(t.shape)
                raise ValueError(
                    f"{self.cls.__name__}.from_bytes gave tensor {name!r} shape {got}, "
                    f"the layout's is {shape}"
                )
            decoded[name] = t.detach().to("cpu")
            check_finite(decoded[name], f"tensor {name!r}")
        return decoded
