"""The interface every compressor of the federated study implements: the built-in ones
(:class:`~gradcomp.compression.update_compression.PipelineCompressor` for a ``quantizer`` kind,
the registry's :data:`~gradcomp.compression.registry.COMPRESSORS` for a ``compressor`` kind)
and a user's own class (:mod:`~gradcomp.compression.user_compressors`)."""

from __future__ import annotations

from typing import Any, Protocol

import torch

from gradcomp.compression.rates import RateBreakdown

__all__ = ["Compressor"]


class Compressor(Protocol):
    """One user's uplink compressor; may keep state (error feedback) across rounds.

    Optional: ``kept_masks(payload, ctx) -> {name: bool tensor}``, the entries it selected;
    the byte format (:mod:`gradcomp.wire`): ``to_bytes(payload, ctx) -> bytes`` and, on the
    class, ``from_bytes(data, layout, *, rnd, **constructor keywords) -> {name: tensor}``,
    the receiver's decode without this object (the built-in kinds: their format's module in
    :mod:`gradcomp.wire` instead). Without them the compressor's bits are self-reported.
    """

    def compress(self, update: dict[str, torch.Tensor]) -> tuple[Any, Any]:
        """Update (name -> tensor) -> (payload, ctx)."""
        ...

    def decompress(self, payload: Any, ctx: Any) -> dict[str, torch.Tensor]:
        """The server's reconstruction of the update, with the same names and shapes."""
        ...

    def rate(self, payload: Any, ctx: Any) -> RateBreakdown:
        """Uplink bits of ``payload`` by part."""
        ...
