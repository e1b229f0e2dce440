"""Error-feedback memory (GRACE's ``Memory``): what compression dropped, added back next time.

Two modes (``memory_mode`` in a spec):

- ``"residual"`` (default; GRACE, EF-SGD): the whole residual of the last compression, dropped
  entries included, is added to the whole tensor before anything is selected;
- ``"m22"``: the follow-up paper's "k-means with memory" (M22, arXiv 2301.09269; the authors'
  ``main.py``), done correctly: entries are selected on the update itself, the memory is added
  to the kept entries only (``v = x + beta m`` there), the quantizer is designed on and labels
  v, and the memory of a kept entry becomes its quantization error ``v - Q(v)``; a dropped
  entry's memory is left as it was (M22 carries it over); what top-K drops is never stored;
- ``"m22_slip"``: M22 as released, with its two slips: the labels are computed from the
  uncompensated values x with the levels designed on v, and the stored error is
  ``beta m + v - Q`` (beta x memory added twice). The first slip is applied by
  :class:`~gradcomp.compression.update_compression.TensorCompressor` (``label_values``).

The decay beta defaults to 1 for ``residual`` and to M22's 0.3 for the m22 modes.
"""

from __future__ import annotations

import torch

__all__ = ["DEFAULT_DECAY", "MEMORY_MODES", "ResidualMemory"]

MEMORY_MODES = ("residual", "m22", "m22_slip")
#: The decay of each mode when none is given (M22: ``beta = 0.3``).
DEFAULT_DECAY = {"residual": 1.0, "m22": 0.3, "m22_slip": 0.3}


class ResidualMemory:
    """Error-feedback memory: per tensor name, the residual of the last compression.

    ``residual`` mode: ``compensate`` returns ``tensor + decay * residual`` (the tensor itself
    the first time); ``update`` stores ``residual = tensor - compressed_decompressed`` where
    ``tensor`` is the compensated tensor that was compressed. The m22 modes use
    :meth:`compensate_kept` and ``update(..., kept=mask)`` instead (see the module doc).
    """

    def __init__(self, decay: float | None = None, mode: str = "residual"):
        if mode not in MEMORY_MODES:
            raise ValueError(f"memory_mode must be one of {MEMORY_MODES}, got {mode!r}")
        decay = DEFAULT_DECAY[mode] if decay is None else decay
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"decay must be in [0, 1], got {decay}")
        self.decay = float(decay)
        self.mode = mode
        self.residuals: dict[str, torch.Tensor] = {}

    @property
    def before_selection(self) -> bool:
        """True when the memory is added to the whole tensor before entries are selected."""
        return self.mode == "residual"

    @property
    def m22_as_released(self) -> bool:
        """``m22_slip``: M22's two slips (labels from the uncompensated values; beta x memory
        twice)."""
        return self.mode == "m22_slip"

    def compensate(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        residual = self.residuals.get(name)
        if residual is None:
            return tensor
        return tensor + self.decay * residual.to(tensor.dtype)

    def compensate_kept(
        self, tensor: torch.Tensor, name: str, kept: torch.Tensor | None
    ) -> torch.Tensor:
        """``tensor + decay * memory`` on the ``kept`` entries (bool, tensor's shape; None:
        all), the tensor elsewhere."""
        residual = self.residuals.get(name)
        if residual is None:
            return tensor
        added = self.decay * residual.to(tensor.dtype)
        return tensor + (added if kept is None else added * kept.to(tensor.dtype))

    def update(
        self,
        tensor: torch.Tensor,
        name: str,
        compressed_decompressed: torch.Tensor,
        kept: torch.Tensor | None = None,
    ) -> None:
        residual = tensor - compressed_decompressed.to(tensor.dtype)
        if self.mode != "residual":
            old = self.residuals.get(name)
            old = torch.zeros_like(residual) if old is None else old.to(residual.dtype)
            if self.m22_as_released:
                residual = residual + self.decay * old
            if kept is not None:
                residual = torch.where(kept, residual, old)
        self.residuals[name] = residual.detach().clone()
