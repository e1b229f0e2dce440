"""PowerSGD (Vogels et al. 2019): rank-r approximation by one warm-started power iteration.

As ``torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook`` does per matrix, for one
user (no all-reduce: the orthogonalisation uses the user's own P). Per update tensor with
``ndim >= 2``, viewed as a matrix ``M`` of shape (n, m) = (shape[0], the rest), e.g. a conv
kernel (out, in*kh*kw), with rank ``r' = min(r, n, m)``:

1. error feedback (optional, :class:`~gradcomp.compression.memory.ResidualMemory`):
   ``M <- M + e``;
2. ``P = M Q`` (n, r') with ``Q`` (m, r') the previous round's Q of this tensor (warm start;
   the first time standard normal draws from the ``seed``, orthonormalised);
3. orthonormalise the columns of P (reduced QR); ``Q = M^T P``;
4. send P and Q as float32; the receiver's matrix is ``P Q^T``; ``e <- M - P Q^T``.

Like the hook (``min_compression_rate = 2``), a matrix is sent this way only when
``2 (n + m) r' < n m``; other matrices and tensors with ``ndim < 2`` (biases, BatchNorm) are
sent raw as float32 (their memory residual is zero).

Rate parts: ``payload_fixed_bits = payload_huffman_bits = 32 (n + m) r'`` per low-rank
matrix (nothing is entropy coded), ``raw_bits = 32`` per entry of the raw tensors; no
positions, no side info. ``n_sent`` counts the float32 numbers sent.

Byte format: :mod:`gradcomp.wire.low_rank` (P and Q as float32; the receiver knows r' from
the spec's rank and the shape, :meth:`PowerSGD.matrix_rank`). NaN or infinite numbers are
refused on both sides (the sender: :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`
when P, Q or a raw tensor overflow float32; the receiver:
:class:`~gradcomp.wire.records.NonFiniteDecodeError`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import torch

from gradcomp.compression.inputs import WIRE_LIMITS, checked_update, refuse_non_finite
from gradcomp.compression.memory import ResidualMemory
from gradcomp.compression.rates import FLOAT_BITS, RateBreakdown

__all__ = ["LowRank", "PowerSGD"]

MIN_COMPRESSION_RATE = 2  # the DDP hook's default


@dataclass
class LowRank:
    """What one tensor sends: float32 factors ``p`` (n, r) and ``q`` (m, r), or ``raw``."""

    p: torch.Tensor | None = None
    q: torch.Tensor | None = None
    raw: torch.Tensor | None = None

    def matrix(self) -> torch.Tensor:
        if self.raw is not None:
            return self.raw.to(torch.float64)
        p, q = cast(torch.Tensor, self.p), cast(torch.Tensor, self.q)  # set without raw
        return p.to(torch.float64) @ q.to(torch.float64).T

    @property
    def numbers(self) -> int:
        if self.raw is not None:
            return self.raw.numel()
        return cast(torch.Tensor, self.p).numel() + cast(torch.Tensor, self.q).numel()


class PowerSGD:
    """``powersgd``: rank-``rank`` PowerSGD of a whole update (see the module doc).

    compress(update) -> (payload: name -> :class:`LowRank`, ctx: name -> (shape, dtype));
    decompress -> the update's tensors; rate -> :class:`RateBreakdown`.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: P, Q or a raw
    tensor beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "powersgd"
    wire_code = 32  # its byte in the wire's header: never reused
    title = "PowerSGD"
    #: spec keys this kind takes besides name (``rate`` is the rank r, 1..``max_rate``)
    spec_keys = ("rate", "error_feedback", "memory_decay", "seed")
    max_rate = 1024

    def __init__(self, rank: int, *, memory: ResidualMemory | None = None, seed: int = 0):
        if rank < 1:
            raise ValueError(f"PowerSGD rank must be >= 1, got {rank}")
        self.rank = int(rank)
        self.memory = memory
        self.generator = torch.Generator().manual_seed(int(seed))
        self.q_memory: dict[str, torch.Tensor] = {}
        self.step = 0  # updates compressed (the index of the last one's bytes + 1)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> PowerSGD:
        memory = ResidualMemory(spec["memory_decay"]) if spec["error_feedback"] else None
        return cls(spec["rate"], memory=memory, seed=spec["seed"])

    def matrix_rank(self, shape: tuple[int, ...]) -> int:
        """r' of a tensor of this shape, or 0 when it is sent raw."""
        if len(shape) < 2:
            return 0
        n, m = shape[0], math.prod(shape[1:])
        r = min(self.rank, n, m)
        return r if MIN_COMPRESSION_RATE * (n + m) * r < n * m else 0

    def start_q(self, name: str, columns: int, r: int) -> torch.Tensor:
        """The Q a power iteration of ``name`` starts from: the last one (warm start), else
        an orthonormalised Gaussian draw from this compressor's generator (``columns x r``,
        float64 on the CPU)."""
        q = self.q_memory.get(name)
        if q is None:
            q = torch.randn(columns, r, generator=self.generator, dtype=torch.float64)
            q = torch.linalg.qr(q).Q
        return q

    def _low_rank(self, name: str, matrix: torch.Tensor, r: int) -> LowRank:
        q = self.start_q(name, matrix.shape[1], r).to(matrix.device)
        p = torch.linalg.qr(matrix @ q).Q
        q = matrix.T @ p
        self.q_memory[name] = q
        return LowRank(p=p.to(torch.float32), q=q.to(torch.float32))

    def compress(self, update: Mapping[str, torch.Tensor]):
        """(payload, ctx) of one update; a refused update (an error raised here) leaves the
        compressor as it was: its step, warm-start Qs, generator and memory."""
        update = checked_update(update)
        saved = (self.step, dict(self.q_memory), self.generator.get_state(),
                 None if self.memory is None else dict(self.memory.residuals))  # fmt: skip
        try:
            return self._compress(update)
        except BaseException:
            self.step, self.q_memory, state, residuals = saved
            self.generator.set_state(state)
            if self.memory is not None and residuals is not None:
                self.memory.residuals = residuals
            raise

    def _compress(self, update: Mapping[str, torch.Tensor]):
        payload, ctx = {}, {}
        self.step += 1
        for name, t in update.items():
            t = t.detach()
            if self.memory is not None:
                t = self.memory.compensate(t, name)
            r = self.matrix_rank(tuple(t.shape))
            if r:
                sent = self._low_rank(name, t.reshape(t.shape[0], -1).to(torch.float64), r)
            else:
                sent = LowRank(raw=t.to(torch.float32).clone())
            payload[name], ctx[name] = sent, (tuple(t.shape), t.dtype)
            recon = sent.matrix().reshape(t.shape)
            refuse_non_finite(name, self.kind, recon.to(t.dtype), t, WIRE_LIMITS["f4"])
            if self.memory is not None:
                self.memory.update(t, name, recon)
        return payload, ctx

    def decompress(self, payload, ctx) -> dict[str, torch.Tensor]:
        return {n: p.matrix().reshape(ctx[n][0]).to(ctx[n][1]) for n, p in payload.items()}

    def rate(self, payload, ctx) -> RateBreakdown:
        out = RateBreakdown()
        for name, p in payload.items():
            bits = FLOAT_BITS * p.numbers
            numel = math.prod(ctx[name][0])
            if p.raw is not None:
                out += RateBreakdown(raw_bits=bits, n_entries=numel, n_sent=p.numbers)
            else:
                out += RateBreakdown(
                    payload_fixed_bits=bits,
                    payload_huffman_bits=bits,
                    n_entries=numel,
                    n_sent=p.numbers,
                )
        return out
