"""A whole model update through one compressor: memory, sparsifier, value quantizer, Huffman.

A model update is a ``dict[str, torch.Tensor]`` (name -> delta). :class:`UpdateCompressor`
composes

1. optional error feedback (:class:`~gradcomp.compression.memory.ResidualMemory`: the residual
   of the previous round is added before compressing, and the new residual kept);
2. an optional sparsifier (global top-K, :class:`~gradcomp.compression.sparsifiers.TopK`)
   across all tensors of the update;
3. a per-tensor value quantizer (:class:`Quantize`) applied to the sent entries of the
   tensors with more than ``min_entries`` entries; smaller tensors (first conv, biases,
   BatchNorm) are sent unquantized at 32 bits per sent entry;
4. a Huffman code (a real bitstream, :class:`gradcomp.coding.HuffmanCode`) of the level
   indices, designed on their empirical counts (its code table is charged).

GRACE's interface: ``compress(update) -> (payload, ctx)``: ``payload`` holds what goes over the
uplink (positions, level indices or values, bitstream, fitted parameters); ``ctx`` what the
receiver knows anyway (names, shapes, dtypes). ``decompress(payload, ctx)`` rebuilds the
update (from the Huffman bitstream when there is one); ``rate(payload, ctx)`` counts the
uplink bits by part (:class:`~gradcomp.compression.rates.RateBreakdown`).

Sent entries: with a sparsifier, the selected entries that are non-zero (a zero needs no
value); without one, every entry (dense: no position bits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from gradcomp.compression.memory import ResidualMemory
from gradcomp.compression.rates import RateBreakdown, position_code_bits
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.value_quantizers import PassThrough, QuantizedValues, ValueQuantizer

__all__ = ["Quantize", "TensorCompressor", "TensorCtx", "TensorPayload", "UpdateCompressor"]


class Quantize:
    """Which value quantizer a tensor gets: ``quantizer`` for tensors with more than
    ``min_entries`` entries, :class:`PassThrough` (raw, 32 bits) for the others.

    ``quantizer`` is a :class:`ValueQuantizer` or a factory ``name -> ValueQuantizer``.
    """

    def __init__(
        self, quantizer: ValueQuantizer | Callable[[str], ValueQuantizer], min_entries: int = 1000
    ):
        if min_entries < 0:
            raise ValueError("min_entries must be >= 0")
        self.quantizer = quantizer
        self.min_entries = int(min_entries)
        self._raw = PassThrough()

    def applies_to(self, tensor: torch.Tensor) -> bool:
        return tensor.numel() > self.min_entries

    def for_tensor(self, name: str, tensor: torch.Tensor) -> tuple[ValueQuantizer, bool]:
        """(quantizer, raw) for this tensor."""
        if not self.applies_to(tensor):
            return self._raw, True
        q = self.quantizer
        return (q if isinstance(q, ValueQuantizer) else q(name)), False


def _default_entropy_coder(counts: np.ndarray):
    from gradcomp.coding import HuffmanCode

    return HuffmanCode.from_pmf(counts)


@dataclass
class TensorCtx:
    """What the receiver knows about a tensor without being told: shape, dtype, device."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class TensorPayload:
    """What one tensor sends.

    positions : int64 sorted flat indices of the sent entries, or None (dense, no top-K).
    position_method : "none" (dense), "dense", "bitmap" or "gaps"; position_bits : bits.
    quantized : the values; raw : sent unquantized as a small tensor (counts as raw bits).
    bitstream / code : Huffman bitstream of the level indices and its code, or None.
    """

    positions: torch.Tensor | None
    position_method: str
    position_bits: int
    quantized: QuantizedValues
    raw: bool = False
    bitstream: Any = None
    code: Any = None


class TensorCompressor:
    """Compresses one tensor: optional mask of kept entries, value quantizer, Huffman code."""

    def __init__(
        self,
        quantizer: ValueQuantizer,
        *,
        raw: bool = False,
        huffman: bool = True,
        entropy_coder: Callable[[np.ndarray], Any] | None = None,
    ):
        self.quantizer = quantizer
        self.raw = raw
        self.huffman = huffman
        self.entropy_coder = entropy_coder or _default_entropy_coder

    def compress(
        self, tensor: torch.Tensor, name: str = "", mask: torch.Tensor | None = None
    ) -> tuple[TensorPayload, TensorCtx]:
        """``mask`` (bool, tensor's shape): kept entries; None sends every entry."""
        ctx = TensorCtx(tuple(tensor.shape), tensor.dtype, tensor.device)
        flat = tensor.detach().reshape(-1)
        if mask is None:
            positions, method, pos_bits = None, "none", 0
            values = flat
        else:
            positions = torch.nonzero(mask.reshape(-1) & (flat != 0)).squeeze(1)
            pos_bits, method = position_code_bits(positions.cpu().numpy(), flat.numel())
            values = flat[positions]
        if values.numel():
            extra = {"full": flat} if self.quantizer.uses_full_tensor else {}
            quantized = self.quantizer.encode(values, name, **extra)
        else:
            quantized = QuantizedValues(self.quantizer.kind, 0)
        payload = TensorPayload(positions, method, pos_bits, quantized, raw=self.raw)
        if self.huffman and quantized.indices is not None and quantized.n:
            idx = quantized.indices.cpu().numpy()
            code = self.entropy_coder(np.bincount(idx, minlength=len(quantized.levels)))
            payload.bitstream, payload.code = code.encode(idx), code
        return payload, ctx

    def reconstruct(
        self, payload: TensorPayload, ctx: TensorCtx, *, from_bitstream: bool = True
    ) -> torch.Tensor:
        """The receiver's tensor (ctx's shape, dtype and device)."""
        q = payload.quantized
        out = torch.zeros(ctx.numel, dtype=torch.float64, device=ctx.device)
        if q.n:
            indices = None
            if from_bitstream and payload.bitstream is not None:
                decoded = payload.code.decode(payload.bitstream, q.n)
                indices = torch.from_numpy(decoded).to(ctx.device)
            values = self.quantizer.decode(q, indices).to(ctx.device)
            if payload.positions is None:
                out = values
            else:
                out[payload.positions.to(ctx.device)] = values
        return out.reshape(ctx.shape).to(ctx.dtype)

    def decompress(self, payload: TensorPayload, ctx: TensorCtx) -> torch.Tensor:
        return self.reconstruct(payload, ctx)

    def rate(self, payload: TensorPayload, ctx: TensorCtx) -> RateBreakdown:
        q = payload.quantized
        fixed = q.n * q.value_bits
        if payload.raw:
            return RateBreakdown(
                position_bits=payload.position_bits, raw_bits=fixed, n_entries=ctx.numel, n_sent=q.n
            )
        coded, table = fixed, 0
        if payload.bitstream is not None:
            coded, table = len(payload.bitstream), payload.code.side_info_bits()
        return RateBreakdown(
            payload_fixed_bits=fixed,
            payload_huffman_bits=coded,
            position_bits=payload.position_bits,
            side_bits=q.side_bits if q.n else 0,
            huffman_side_bits=table,
            raw_bits=0,
            n_entries=ctx.numel,
            n_sent=q.n,
        )


class UpdateCompressor:
    """Top-K + per-tensor quantizer + Huffman + optional error feedback for an update.

    compress(update: dict[str, Tensor]) -> (payload: dict[str, TensorPayload],
    ctx: dict[str, TensorCtx]); decompress -> dict of tensors with the update's names,
    shapes, dtypes and devices; rate -> summed :class:`RateBreakdown`;
    rate_per_tensor -> name -> :class:`RateBreakdown`.
    """

    def __init__(
        self,
        quantize: Quantize,
        *,
        topk: TopK | None = None,
        memory: ResidualMemory | None = None,
        huffman: bool = True,
        entropy_coder: Callable[[np.ndarray], Any] | None = None,
        name: str = "",
    ):
        self.quantize = quantize
        self.topk = topk
        self.memory = memory
        self.huffman = huffman
        self.entropy_coder = entropy_coder
        self.name = name
        self._coders: dict[str, TensorCompressor] = {}

    def _coder(self, name: str, tensor: torch.Tensor) -> TensorCompressor:
        quantizer, raw = self.quantize.for_tensor(name, tensor)
        coder = TensorCompressor(
            quantizer, raw=raw, huffman=self.huffman, entropy_coder=self.entropy_coder
        )
        self._coders[name] = coder
        return coder

    def compress(self, update: Mapping[str, torch.Tensor]):
        for name, t in update.items():
            if not torch.is_floating_point(t):
                raise TypeError(f"update entry {name!r} is not floating point ({t.dtype})")
        tensors = {n: t.detach() for n, t in update.items()}
        if self.memory is not None:
            tensors = {n: self.memory.compensate(t, n) for n, t in tensors.items()}
        masks = self.topk.select(tensors) if self.topk is not None else {}
        payload, ctx = {}, {}
        for name, t in tensors.items():
            coder = self._coder(name, t)
            payload[name], ctx[name] = coder.compress(t, name, masks.get(name))
            if self.memory is not None:
                sent = coder.reconstruct(payload[name], ctx[name], from_bitstream=False)
                self.memory.update(t, name, sent)
        return payload, ctx

    def decompress(
        self, payload: Mapping[str, TensorPayload], ctx: Mapping[str, TensorCtx]
    ) -> dict[str, torch.Tensor]:
        return {n: self._coders[n].decompress(p, ctx[n]) for n, p in payload.items()}

    def kept_masks(
        self, payload: Mapping[str, TensorPayload], ctx: Mapping[str, TensorCtx]
    ) -> dict[str, torch.Tensor]:
        """Name -> boolean mask (the tensor's shape, CPU) of the entries whose value was sent."""
        out = {}
        for name, p in payload.items():
            c = ctx[name]
            if p.positions is None:
                out[name] = torch.ones(c.shape, dtype=torch.bool)
            else:
                mask = torch.zeros(c.numel, dtype=torch.bool)
                mask[p.positions.cpu()] = True
                out[name] = mask.reshape(c.shape)
        return out

    def rate_per_tensor(self, payload, ctx) -> dict[str, RateBreakdown]:
        return {n: self._coders[n].rate(p, ctx[n]) for n, p in payload.items()}

    def rate(self, payload, ctx) -> RateBreakdown:
        return RateBreakdown.sum(self.rate_per_tensor(payload, ctx).values())
