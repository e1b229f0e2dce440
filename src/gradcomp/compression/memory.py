"""Error-feedback memory (GRACE's ``Memory``): what compression dropped, added back next time."""

from __future__ import annotations

import torch

__all__ = ["ResidualMemory"]


class ResidualMemory:
    """Error-feedback memory: per tensor name, the residual of the last compression.

    ``compensate`` returns ``tensor + decay * residual`` (the tensor itself the first
    time); ``update`` stores ``residual = tensor - compressed_decompressed`` where
    ``tensor`` is the compensated tensor that was compressed.
    """

    def __init__(self, decay: float = 1.0):
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"decay must be in [0, 1], got {decay}")
        self.decay = float(decay)
        self.residuals: dict[str, torch.Tensor] = {}

    def compensate(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        residual = self.residuals.get(name)
        if residual is None:
            return tensor
        return tensor + self.decay * residual.to(tensor.dtype)

    def update(
        self, tensor: torch.Tensor, name: str, compressed_decompressed: torch.Tensor
    ) -> None:
        residual = tensor - compressed_decompressed.to(tensor.dtype)
        self.residuals[name] = residual.detach().clone()
