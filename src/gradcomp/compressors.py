"""GRACE-like compressors for model updates (paper Y), on plain torch tensors.

A model update is a ``dict[str, torch.Tensor]`` (name -> delta). :class:`UpdateCompressor`
composes

1. optional error feedback (:class:`ResidualMemory`: the residual of the previous
   round is added before compressing, and the new residual kept);
2. optional global top-K (:class:`TopK`) across all tensors of the update;
3. a per-tensor value quantizer (:class:`Quantize`) applied to the sent entries of the
   tensors with more than ``min_entries`` entries; smaller tensors (first conv, biases,
   BatchNorm) are sent unquantized at 32 bits per sent entry;
4. a Huffman code (a real bitstream, :class:`gradcomp.coding.HuffmanCode`) of the
   level indices, designed on their empirical counts.

``compress(update) -> (payload, ctx)``: ``payload`` holds what goes over the uplink
(positions, level indices or values, bitstream, fitted parameters); ``ctx`` what the
receiver knows anyway (names, shapes, dtypes). ``decompress(payload, ctx)`` rebuilds the
update (from the Huffman bitstream when there is one); ``rate(payload, ctx)`` counts the
uplink bits by part (:class:`RateBreakdown`).

Rate accounting (all in bits, everything counted):

- ``payload_fixed_bits``: each quantized sent entry at ``ceil(log2 L)`` bits (L levels);
  value quantizers at their width (float16: 16, none: 32, gaussian_channel: R by
  definition).
- ``payload_huffman_bits``: length of the Huffman bitstream of the level indices (equal
  to the fixed payload for value quantizers).
- ``huffman_side_bits``: the code table of each Huffman code (its codeword lengths,
  ``HuffmanCode.side_info_bits``); charged with the coded payload only.
- ``position_bits``: with top-K, per tensor, 2 bits naming the method plus the cheapest
  of: nothing (every entry sent), a bitmap (numel bits), or a 32-bit count followed by
  the Elias-gamma codes of the gaps between sent positions (first gap = position + 1).
  Without top-K, 0 (dense).
- ``side_bits``: fitted or standardisation parameters, 32 bits each (gennorm/dweibull
  Lloyd: beta or c, loc, scale; Gaussian Lloyd and the channel: mean, std; uniform:
  min, max); levels at 32 bits each only when they are sent (never, for the built-in
  quantizers: the receiver recomputes them from the parameters).
- ``raw_bits``: entries of tensors at or below ``min_entries``, 32 bits per sent entry.

``total(coded)`` = payload (Huffman or fixed) + position + side (+ Huffman tables when
coded) + raw.

Sent entries: with top-K, the selected entries that are non-zero (a zero needs no
value); without top-K, every entry.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from gradcomp.lloyd import lloyd_design, uniform_minmax_levels

log = logging.getLogger(__name__)

__all__ = [
    "FLOAT_BITS",
    "QUANTIZER_KINDS",
    "LLOYD_FAMILIES",
    "RateBreakdown",
    "ResidualMemory",
    "TopK",
    "Quantize",
    "QuantizedValues",
    "ValueQuantizer",
    "PassThrough",
    "Float16",
    "UniformQuantizer",
    "LloydQuantizer",
    "GaussianChannel",
    "make_quantizer",
    "TensorPayload",
    "TensorCtx",
    "TensorCompressor",
    "UpdateCompressor",
    "build_compressor",
    "elias_gamma_bits",
    "position_code_bits",
    "m_weighted_distortion",
]

FLOAT_BITS = 32
QUANTIZER_KINDS = ("none", "float16", "uniform", "lloyd", "gaussian_channel")
LLOYD_FAMILIES = ("gennorm", "norm", "dweibull", "laplace")
_METHOD_FLAG_BITS = 2  # which position code a tensor uses: dense, bitmap or gaps
_COUNT_BITS = 32  # entry count that precedes a gap code


# --------------------------------------------------------------------------------------
# rate accounting


@dataclass
class RateBreakdown:
    """Uplink bits of one tensor or of a whole update, by part (see module doc).

    ``n_entries``: entries of the tensor(s); ``n_sent``: entries whose value was sent.
    """

    payload_fixed_bits: int = 0
    payload_huffman_bits: int = 0
    position_bits: int = 0
    side_bits: int = 0
    huffman_side_bits: int = 0
    raw_bits: int = 0
    n_entries: int = 0
    n_sent: int = 0

    def total(self, coded: bool = True) -> int:
        """Total bits, with the Huffman payload and tables (``coded``) or the fixed payload."""
        payload = (
            self.payload_huffman_bits + self.huffman_side_bits if coded else self.payload_fixed_bits
        )
        return payload + self.position_bits + self.side_bits + self.raw_bits

    @property
    def total_coded(self) -> int:
        return self.total(True)

    @property
    def total_fixed(self) -> int:
        return self.total(False)

    def __add__(self, other: RateBreakdown) -> RateBreakdown:
        return RateBreakdown(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @classmethod
    def sum(cls, parts: Iterable[RateBreakdown]) -> RateBreakdown:
        out = cls()
        for part in parts:
            out = out + part
        return out

    def as_dict(self) -> dict[str, int]:
        """Fields plus ``bits_coded`` and ``bits_fixed``."""
        return {**asdict(self), "bits_coded": self.total(True), "bits_fixed": self.total(False)}


def elias_gamma_bits(values: np.ndarray) -> int:
    """Length of the Elias-gamma codes of positive integers: sum of 2 floor(log2 v) + 1."""
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        return 0
    if v.min() < 1:
        raise ValueError("Elias-gamma codes positive integers only")
    floor_log2 = np.frexp(v.astype(np.float64))[1] - 1  # exact for v < 2^53
    return int(np.sum(2 * floor_log2 + 1))


def position_code_bits(positions: np.ndarray, numel: int) -> tuple[int, str]:
    """Bits and method of the cheapest code for sorted flat ``positions`` in ``numel`` entries.

    Returns ``(bits, method)`` with method ``"dense"`` (every entry sent: flag only),
    ``"bitmap"`` (numel bits) or ``"gaps"`` (32-bit count + Elias-gamma of the gaps);
    ``bits`` includes the 2-bit method flag.
    """
    positions = np.asarray(positions, dtype=np.int64)
    if positions.size == numel:
        return _METHOD_FLAG_BITS, "dense"
    gaps = np.diff(positions, prepend=-1)
    gap_bits = _COUNT_BITS + elias_gamma_bits(gaps)
    if gap_bits < numel:
        return _METHOD_FLAG_BITS + gap_bits, "gaps"
    return _METHOD_FLAG_BITS + numel, "bitmap"


# --------------------------------------------------------------------------------------
# error feedback


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


# --------------------------------------------------------------------------------------
# top-K


class TopK:
    """Global top-K by magnitude across the tensors of an update.

    Keeps exactly ``k = ceil(fraction * total)`` entries (the smallest count that is at
    least the fraction; ``fraction * total`` is rounded to 9 decimals first so that
    float noise such as 0.452 * 1000 = 452.00000000000006 does not add an entry).
    Ties at the threshold magnitude are broken by position: tensors in the dict's
    order, entries in flat (C) order, earlier first.
    """

    def __init__(self, fraction: float):
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"top-K fraction must be in (0, 1], got {fraction}")
        self.fraction = float(fraction)

    def count(self, total: int) -> int:
        return min(total, math.ceil(round(self.fraction * total, 9)))

    def select(self, tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Name -> boolean mask (tensor's shape) of the kept entries."""
        names = list(tensors)
        flat = [tensors[n].detach().reshape(-1) for n in names]
        sizes = [f.numel() for f in flat]
        total = sum(sizes)
        k = self.count(total)
        if total == 0:
            return {n: torch.zeros_like(tensors[n], dtype=torch.bool) for n in names}
        mags = torch.cat([f.abs().to(torch.float64) for f in flat])
        if k == total:
            keep = torch.ones(total, dtype=torch.bool, device=mags.device)
        else:
            threshold = torch.kthvalue(mags, total - k + 1).values  # k-th largest magnitude
            keep = mags > threshold
            need = k - int(keep.sum())
            ties = torch.nonzero(mags == threshold).squeeze(1)[:need]
            keep[ties] = True
        masks = torch.split(keep, sizes)
        return {n: m.reshape(tensors[n].shape) for n, m in zip(names, masks, strict=True)}


# --------------------------------------------------------------------------------------
# value quantizers


@dataclass
class QuantizedValues:
    """The value part of one tensor's payload.

    kind : quantizer kind; n : number of values.
    indices : int64 (n,) level indices (level quantizers) or None.
    values : transmitted values (n,) (value quantizers: float32, float16 or the channel
        output) or None.
    levels : float64 (L,) reconstruction levels (known to the receiver; sent only when
        ``levels_sent``).
    side : parameters sent, 32 bits each (name -> value).
    value_bits : fixed-rate bits per value.
    """

    kind: str
    n: int
    indices: torch.Tensor | None = None
    values: torch.Tensor | None = None
    levels: np.ndarray | None = None
    side: dict[str, float] = field(default_factory=dict)
    value_bits: int = FLOAT_BITS
    levels_sent: bool = False

    @property
    def side_bits(self) -> int:
        n_levels = len(self.levels) if (self.levels_sent and self.levels is not None) else 0
        return FLOAT_BITS * (len(self.side) + n_levels)


class ValueQuantizer:
    """Maps a 1-D float tensor of sent values to :class:`QuantizedValues` and back."""

    kind = "base"

    def encode(self, values: torch.Tensor, name: str = "") -> QuantizedValues:
        raise NotImplementedError

    def decode(self, q: QuantizedValues, indices: torch.Tensor | None = None) -> torch.Tensor:
        """Float64 reconstruction (n,); ``indices`` overrides ``q.indices`` (e.g. decoded
        from the Huffman bitstream)."""
        idx = q.indices if indices is None else indices
        if idx is not None:
            levels = torch.as_tensor(q.levels, dtype=torch.float64, device=idx.device)
            return levels[idx]
        return q.values.to(torch.float64)


class PassThrough(ValueQuantizer):
    """``none``: values at float32."""

    kind = "none"

    def encode(self, values, name=""):
        return QuantizedValues(
            self.kind, values.numel(), values=values.to(torch.float32), value_bits=FLOAT_BITS
        )


class Float16(ValueQuantizer):
    """``float16``: values rounded to IEEE half precision."""

    kind = "float16"

    def encode(self, values, name=""):
        return QuantizedValues(
            self.kind, values.numel(), values=values.to(torch.float16), value_bits=16
        )


def _indices(values: torch.Tensor, levels: np.ndarray) -> torch.Tensor:
    """Nearest-level indices (thresholds at midpoints), int64 (n,)."""
    lv = torch.as_tensor(levels, dtype=torch.float64, device=values.device)
    mids = 0.5 * (lv[:-1] + lv[1:])
    return torch.bucketize(values.to(torch.float64), mids)


def _level_bits(n_levels: int) -> int:
    return max(1, math.ceil(math.log2(n_levels))) if n_levels > 1 else 0


class UniformQuantizer(ValueQuantizer):
    """``uniform``: 2^R levels from min to max of the values (2^R + 1 with ``slip``)."""

    kind = "uniform"

    def __init__(self, rate: int, *, slip: bool = False):
        self.rate, self.slip = int(rate), bool(slip)

    def encode(self, values, name=""):
        lo, hi = float(values.min()), float(values.max())
        levels = uniform_minmax_levels(lo, hi, self.rate, slip=self.slip)
        return QuantizedValues(
            self.kind,
            values.numel(),
            indices=_indices(values, levels),
            levels=levels,
            side={"min": lo, "max": hi},
            value_bits=_level_bits(len(levels)),
        )


@lru_cache(maxsize=256)
def _standard_normal_levels(n_levels: int, M: float, one_iteration: bool, init: str | None):
    res = lloyd_design(
        "norm", {"loc": 0.0, "scale": 1.0}, n_levels, M, one_iteration=one_iteration, init=init
    )
    return res.levels


def _default_fit(x: np.ndarray, family: str, label: str):
    from gradcomp.distributions import fit

    return fit(x, family, label=label)


class LloydQuantizer(ValueQuantizer):
    """``lloyd``: Lloyd quantizer under ``|g|^M`` weighting for a law fitted per tensor.

    ``family="norm"``: values standardised by their mean and standard deviation and
    quantized with the Gaussian Lloyd levels (side info: mean, std). Other families:
    ``fit_fn(values, family, label)`` (default :func:`gradcomp.distributions.fit`)
    gives the parameters, sent as side info, from which both ends design the levels.
    ``slip=True`` stops Lloyd after one iteration, started from uniform levels on
    +-3 std (the authors' code's init is not known; this is an assumption).
    If the fit fails (e.g. constant values), uniform min-max levels are used instead
    (side info: min, max) and a warning is logged.
    """

    kind = "lloyd"

    def __init__(
        self,
        rate: int,
        family: str = "gennorm",
        M: float = 0.0,
        *,
        slip: bool = False,
        fit_fn: Callable[..., Any] | None = None,
    ):
        if family not in LLOYD_FAMILIES:
            raise ValueError(f"unknown Lloyd family {family!r}; expected one of {LLOYD_FAMILIES}")
        self.rate, self.family, self.M, self.slip = int(rate), family, float(M), bool(slip)
        self.fit_fn = fit_fn or _default_fit

    @property
    def n_levels(self) -> int:
        return 2**self.rate

    def _design(self, values: torch.Tensor, name: str) -> tuple[np.ndarray, dict[str, float]]:
        init = "uniform" if self.slip else None
        x = values.detach().to("cpu", torch.float64).numpy()
        if self.family == "norm":
            mean, std = float(x.mean()), float(x.std())
            if not std > 0:
                raise ValueError("zero standard deviation")
            z = _standard_normal_levels(self.n_levels, self.M, self.slip, init)
            return mean + std * z, {"mean": mean, "std": std}
        fitted = self.fit_fn(x, self.family, label=name)
        params = {k: float(v) for k, v in fitted.params.items()}
        res = lloyd_design(
            self.family, params, self.n_levels, self.M, one_iteration=self.slip, init=init
        )
        return res.levels, params

    def encode(self, values, name=""):
        try:
            levels, side = self._design(values, name)
        except ValueError as exc:  # GradientDataError is a ValueError
            log.warning(
                "lloyd %s on %r failed (%s); using uniform min-max levels", self.family, name, exc
            )
            q = UniformQuantizer(self.rate).encode(values, name)
            q.kind = self.kind
            return q
        return QuantizedValues(
            self.kind,
            values.numel(),
            indices=_indices(values, levels),
            levels=levels,
            side=side,
            value_bits=_level_bits(len(levels)),
        )


class GaussianChannel(ValueQuantizer):
    """``gaussian_channel``: reference test channel at rate R bits per value.

    Standardise, add N(0, 2^(-2R)) noise, de-standardise: ``x + std * N(0, 2^(-2R))``.
    Its rate is R bits per value by definition; side info: mean, std. ``seed`` seeds
    the noise (one torch.Generator per quantizer, on the CPU).
    """

    kind = "gaussian_channel"

    def __init__(self, rate: int, *, seed: int = 0):
        self.rate = int(rate)
        self.generator = torch.Generator().manual_seed(int(seed))

    def encode(self, values, name=""):
        x = values.to(torch.float64)
        mean = float(x.mean()) if x.numel() else 0.0
        std = float(x.std(unbiased=False)) if x.numel() else 0.0
        noise = torch.randn(x.shape, generator=self.generator, dtype=torch.float64)
        out = x + std * 2.0 ** (-self.rate) * noise.to(x.device)
        return QuantizedValues(
            self.kind,
            values.numel(),
            values=out,
            side={"mean": mean, "std": std},
            value_bits=self.rate,
        )


def make_quantizer(
    kind: str,
    *,
    rate: int | None = None,
    family: str | None = None,
    M: float = 0.0,
    slip: bool = False,
    seed: int = 0,
    fit_fn: Callable[..., Any] | None = None,
) -> ValueQuantizer:
    """A value quantizer by kind (see :data:`QUANTIZER_KINDS`)."""
    if kind == "none":
        return PassThrough()
    if kind == "float16":
        return Float16()
    if kind == "uniform":
        return UniformQuantizer(rate, slip=slip)
    if kind == "lloyd":
        return LloydQuantizer(rate, family or "gennorm", M, slip=slip, fit_fn=fit_fn)
    if kind == "gaussian_channel":
        return GaussianChannel(rate, seed=seed)
    raise ValueError(f"unknown quantizer {kind!r}; expected one of {QUANTIZER_KINDS}")


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


# --------------------------------------------------------------------------------------
# one tensor


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
            quantized = self.quantizer.encode(values, name)
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


# --------------------------------------------------------------------------------------
# a whole update


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

    def rate_per_tensor(self, payload, ctx) -> dict[str, RateBreakdown]:
        return {n: self._coders[n].rate(p, ctx[n]) for n, p in payload.items()}

    def rate(self, payload, ctx) -> RateBreakdown:
        return RateBreakdown.sum(self.rate_per_tensor(payload, ctx).values())


# --------------------------------------------------------------------------------------
# factory


_SPEC_KEYS = (
    "name",
    "quantizer",
    "family",
    "rate",
    "M",
    "topk",
    "topk_budget_percent",
    "min_entries",
    "error_feedback",
    "memory_decay",
    "slip",
    "seed",
    "huffman",
)
_IMPLICIT_RATE = {"none": FLOAT_BITS, "float16": 16}


def _bad(key: str, message: str) -> ValueError:
    return ValueError(f"compressor spec key {key!r}: {message}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def build_compressor(
    spec: Mapping[str, Any],
    *,
    fit_fn: Callable[..., Any] | None = None,
    entropy_coder: Callable[[np.ndarray], Any] | None = None,
) -> UpdateCompressor:
    """An :class:`UpdateCompressor` from a config-like dict.

    Keys (others are rejected; ``None`` means absent):

    - ``quantizer`` (required): one of :data:`QUANTIZER_KINDS`.
    - ``family``: Lloyd law, one of :data:`LLOYD_FAMILIES` (lloyd only; required there).
    - ``rate``: bits per kept entry, integer in 1..16 (uniform, lloyd, gaussian_channel:
      required); none / float16 accept only 32 / 16.
    - ``M``: weight exponent >= 0 (lloyd; others accept only 0). Default 0.
    - ``topk``: keep fraction in (0, 1]; absent = no top-K (dense).
    - ``topk_budget_percent``: P > 0; keep P / (100 rate) instead (capped at 1).
    - ``min_entries``: integer >= 0, default 1000.
    - ``error_feedback`` (bool, default False), ``memory_decay`` (in [0, 1], default 1).
    - ``slip`` (bool, default False): uniform with 2^R + 1 levels, Lloyd stopped after
      one iteration.
    - ``seed`` (int, default 0): the Gaussian channel's noise.
    - ``huffman`` (bool, default True): build the Huffman bitstream.
    - ``name``: a label.

    Raises ValueError naming the offending key.
    """
    if not isinstance(spec, Mapping):
        raise TypeError("compressor spec must be a mapping")
    for key in spec:
        if key not in _SPEC_KEYS:
            raise _bad(key, f"unknown key; allowed keys are {', '.join(_SPEC_KEYS)}")
    s = {k: v for k, v in spec.items() if v is not None}

    kind = s.get("quantizer")
    if kind not in QUANTIZER_KINDS:
        raise _bad("quantizer", f"{kind!r} is not one of {QUANTIZER_KINDS}")

    family = s.get("family")
    if kind == "lloyd":
        if family not in LLOYD_FAMILIES:
            raise _bad("family", f"{family!r} is not one of {LLOYD_FAMILIES} (lloyd needs one)")
    elif family is not None:
        raise _bad("family", f"only lloyd quantizers take a family, not {kind}")

    rate = s.get("rate")
    if kind in _IMPLICIT_RATE:
        if rate is not None and rate != _IMPLICIT_RATE[kind]:
            raise _bad("rate", f"{kind} sends {_IMPLICIT_RATE[kind]} bits per entry, not {rate}")
        rate = _IMPLICIT_RATE[kind]
    elif not (_is_int(rate) and 1 <= rate <= 16):
        raise _bad("rate", f"{kind} needs an integer rate in 1..16 bits, got {rate!r}")

    M = s.get("M", 0)
    if not (_is_number(M) and M >= 0 and math.isfinite(M)):
        raise _bad("M", f"must be a number >= 0, got {M!r}")
    if kind != "lloyd" and M != 0:
        raise _bad("M", f"only lloyd quantizers take M, not {kind}")

    for key in ("error_feedback", "slip", "huffman"):
        if key in s and not isinstance(s[key], bool):
            raise _bad(key, f"must be true or false, got {s[key]!r}")

    topk = s.get("topk")
    if topk is not None and not (_is_number(topk) and 0 < topk <= 1):
        raise _bad("topk", f"must be a fraction in (0, 1], got {topk!r}")
    budget = s.get("topk_budget_percent")
    if budget is not None:
        if not (_is_number(budget) and budget > 0):
            raise _bad("topk_budget_percent", f"must be a number > 0, got {budget!r}")
        topk = min(1.0, budget / (100.0 * rate))

    min_entries = s.get("min_entries", 1000)
    if not (_is_int(min_entries) and min_entries >= 0):
        raise _bad("min_entries", f"must be an integer >= 0, got {min_entries!r}")
    decay = s.get("memory_decay", 1.0)
    if not (_is_number(decay) and 0 <= decay <= 1):
        raise _bad("memory_decay", f"must be in [0, 1], got {decay!r}")
    seed = s.get("seed", 0)
    if not _is_int(seed):
        raise _bad("seed", f"must be an integer, got {seed!r}")

    quantizer = make_quantizer(
        kind,
        rate=rate,
        family=family,
        M=float(M),
        slip=s.get("slip", False),
        seed=int(seed),
        fit_fn=fit_fn,
    )
    return UpdateCompressor(
        Quantize(quantizer, int(min_entries)),
        topk=TopK(float(topk)) if topk is not None else None,
        memory=ResidualMemory(float(decay)) if s.get("error_feedback", False) else None,
        huffman=s.get("huffman", True),
        entropy_coder=entropy_coder,
        name=str(s.get("name", kind)),
    )


def m_weighted_distortion(x, x_hat, M: float) -> float:
    """Mean over entries of ``|x|^M (x - x_hat)^2`` (float64; tensors or arrays)."""
    x = torch.as_tensor(x).detach().to(torch.float64)
    x_hat = torch.as_tensor(x_hat).detach().to(device=x.device, dtype=torch.float64)
    if x.numel() == 0:
        return 0.0
    return float(torch.mean(x.abs() ** M * (x - x_hat) ** 2))
