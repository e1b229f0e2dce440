"""The server's decoder of a user class's bytes (:mod:`gradcomp.wire`): the class's own
``from_bytes`` (:mod:`~gradcomp.compression.user_compressors` says what it takes), its result
checked against the layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from gradcomp.compression.user_compressors import constructor_kwargs, load_class
from gradcomp.wire.records import check_finite

__all__ = ["UserReceiver"]


class UserReceiver:
    """The server's decoder of a user class's bytes: its ``from_bytes`` with the layout, the
    update's index and the constructor keywords of ``spec`` (a checked spec with the user's
    seed); the result is checked against the layout (names, shapes) and for NaN or infinite values
    (:class:`~gradcomp.wire.records.NonFiniteDecodeError`) and moved to the CPU."""

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
