"""A quantizer pipeline's update in the uplink's byte format (:mod:`gradcomp.wire`):
one record per tensor, written by :func:`encode_pipeline` and read by :class:`PipelineReceiver`
from the spec, the layout, the user's seed and the update's index alone.

A tensor's record body, field by field (docs/wire.md has the table per kind):

1. flags, one byte: bits 0-1 the position code with top-K (1 every entry sent, 2 bitmap,
   3 gaps; 0 without top-K or with random-K), the other bits 0;
2. positions (top-K only): a bitmap of the tensor's entries, or a u32 count and the
   Elias-gamma codes of the gaps between sent entries (the first: its index + 1); random-K's
   positions are regenerated from :meth:`~gradcomp.compression.random_k.RandomK.mask_seed`;
3. when values are sent (n > 0): the kind's side information
   (:meth:`~gradcomp.compression.value_quantizers.ValueQuantizer.write_side`), then the values
   (a value kind: n numbers of its ``wire_dtype``) or the level indices: with ``huffman``
   a code table (u8 width w, then the codeword lengths at w bits of the kind's alphabet, or
   of the levels its side information gives for a kind whose design sizes its alphabet;
   unless the kind's code is known to both ends: QSGD's Elias code, the sign's one-bit
   code, the entropy-constrained design's adaptive code up to 1.5 bits, its length first)
   and the code's bitstream; without, n indices at the kind's fixed width.

Tensors with ``min_entries`` entries or fewer are the raw kind ``none`` (float32 values).
A record that decodes to NaN or infinite values is refused
(:class:`~gradcomp.wire.records.NonFiniteDecodeError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import torch

from gradcomp.coding.fields import FieldReader, FieldWriter, WireFormatError
from gradcomp.coding.huffman import HuffmanCode
from gradcomp.compression.random_k import RandomK
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.value_quantizers import (
    PassThrough,
    QuantizedValues,
    ValueQuantizer,
    level_bits,
)
from gradcomp.wire.records import (
    Agreed,
    UpdateLayout,
    check_finite,
    read_records,
    sender_agreed,
    write_records,
)

__all__ = ["POSITION_CODES", "PipelineReceiver", "encode_pipeline"]

#: The flags byte's position code of each ``TensorPayload.index_code``.
POSITION_CODES = {"none": 0, "seed": 0, "dense": 1, "bitmap": 2, "gaps": 3}


def _where(name: str) -> str:
    return f"tensor {name!r}"


def _write_positions(w: FieldWriter, method: str, indices: torch.Tensor | None, numel: int):
    if method == "bitmap":
        mask = np.zeros(numel, dtype=bool)
        mask[cast(torch.Tensor, indices).cpu().numpy()] = True  # given for bitmap and gaps
        w.packed(np.packbits(mask), numel)
    elif method == "gaps":
        idx = cast(torch.Tensor, indices).cpu().numpy()
        w.u32(idx.size)
        w.gammas(np.diff(idx, prepend=-1))


def _write_tensor(quantizer: ValueQuantizer, p, numel: int) -> bytes:
    w = FieldWriter()
    w.u8(POSITION_CODES[p.index_code])
    _write_positions(w, p.index_code, p.indices, numel)
    q = p.quantized
    if q.n == 0:
        return w.getvalue()
    quantizer.write_side(q, w)
    if quantizer.wire_dtype is not None:
        w.array(q.values.detach().cpu().numpy(), quantizer.wire_dtype)
    elif p.bitstream is not None:
        levels = quantizer.n_symbols() if q.levels is None else len(q.levels)
        if quantizer.known_code(levels) is None:
            table = quantizer.table_size(levels)
            if not isinstance(p.code, HuffmanCode) or p.code.n_symbols != table:
                raise TypeError(f"no byte format for the entropy code {p.code!r} of {q.kind}")
            w.u8(p.code.length_width)
            w.uints(p.code.lengths, p.code.length_width)
        w.bits(p.bitstream)
    else:
        w.uints(q.indices.detach().cpu().numpy(), q.value_bits)
    return w.getvalue()


def encode_pipeline(pipeline: Any, payload: Mapping[str, Any], ctx: Mapping[str, Any]) -> bytes:
    """The bytes of a :class:`~gradcomp.compression.update_compression.PipelineCompressor`'s
    payload (see the module doc)."""
    quantizer = pipeline.quantize.quantizer
    if not isinstance(quantizer, ValueQuantizer):
        raise TypeError("the byte format needs one value quantizer per pipeline, not a factory")
    layout = UpdateLayout.from_items((n, c.shape, c.dtype) for n, c in ctx.items())
    records = (
        _write_tensor(pipeline._coders[name].quantizer, p, ctx[name].numel)
        for name, p in payload.items()
    )
    return write_records(quantizer, layout, records, sender_agreed(pipeline))


def _read_positions(r: FieldReader, method: int, numel: int) -> np.ndarray | None:
    """Flat indices of the sent entries (None: every entry)."""
    if method == 1:
        return None
    if method == 2:
        raw = np.frombuffer(r.take((numel + 7) >> 3, "positions"), dtype=np.uint8)
        return np.flatnonzero(np.unpackbits(raw, count=numel))
    count = r.u32("positions count")
    if count > numel:
        raise r.error("positions count", f"{count} sent entries in a tensor of {numel}")
    idx = np.cumsum(r.gammas(count, "positions")) - 1
    if count and idx[-1] >= numel:
        raise r.error("positions", f"index {int(idx[-1])} beyond the tensor's {numel} entries")
    return idx


def _read_indices(
    r: FieldReader, quantizer: ValueQuantizer, n: int, huffman: bool, n_levels: int
) -> np.ndarray:
    """The n level indices: a coded stream (table first unless the code is known) or fixed;
    each below ``n_levels``, the levels the side information gave (a design may use fewer
    levels than the kind's alphabet covers; the table covers
    :meth:`~gradcomp.compression.value_quantizers.ValueQuantizer.table_size`)."""
    L = quantizer.table_size(n_levels)
    if not huffman:
        idx = r.uints(n, level_bits(quantizer.n_symbols()), "indices")
    else:
        code = quantizer.known_code(n_levels)
        if code is None:
            width = r.u8("code table")
            if not 1 <= width <= 7:
                raise r.error("code table", f"codeword length width {width} (1..7 expected)")
            try:
                code = HuffmanCode.from_lengths(r.uints(L, width, "code table"))
            except ValueError as exc:
                raise r.error("code table", str(exc)) from None
        w = int(code.lengths[0]) if isinstance(code, HuffmanCode) else 0
        if w and L == 1 << w and np.all(code.lengths == w):  # a complete fixed-length code
            idx = r.uints(n, w, "payload")  # its canonical codewords are the w-bit indices
        else:
            idx = _read_coded(r, code, n)
    if idx.size and idx.max() >= min(L, n_levels):
        raise r.error("indices", f"index {int(idx.max())} outside the {min(L, n_levels)} levels")
    return idx


def _read_coded(r: FieldReader, code: Any, n: int) -> np.ndarray:
    """n indices of a prefix code's stream."""
    try:
        if hasattr(code, "decode_prefix"):
            idx, n_bits = code.decode_prefix(r.rest(), n)
        else:
            idx = code.decode(r.rest_bits(), n)
            n_bits = int(code.lengths[idx].sum())
    except ValueError as exc:
        raise r.error("payload", str(exc)) from None
    r.skip_bits(n_bits, "payload")
    return idx


class PipelineReceiver:
    """Decodes a quantizer pipeline's bytes (see the module doc) for updates of ``layout``
    with ``quantizer``, the receiver's own, built from the checked ``spec`` (which carries the
    user's seed); ``rnd`` is the update's index."""

    def __init__(
        self, spec: Mapping[str, Any], layout: UpdateLayout, quantizer: ValueQuantizer, *, rnd: int
    ):
        self.spec, self.layout, self.rnd = spec, layout, int(rnd)
        self.quantizer = quantizer
        self._raw = PassThrough()
        self._seeded = None
        if spec["sparsifier"] == "randomk":
            shapes = {n: torch.Size(s) for n, s, _ in layout}
            k = TopK(spec["topk"]).count(sum(s.numel() for s in shapes.values()))
            seed = RandomK.mask_seed(spec["seed"], self.rnd)
            masks = RandomK.masks_from_seed(seed, k, shapes)
            self._seeded = {n: np.flatnonzero(m.reshape(-1).numpy()) for n, m in masks.items()}

    def _positions(self, r: FieldReader, name: str, numel: int) -> np.ndarray | None:
        flags = r.u8("flags")
        topk = self.spec["sparsifier"] == "topk"
        if flags >> 2 or (flags == 0) == topk:
            raise r.error("flags", f"{flags:#04x} is not a position code of sparsifier "
                          f"{self.spec['sparsifier']!r}")  # fmt: skip
        if topk:
            return _read_positions(r, flags, numel)
        return None if self._seeded is None else self._seeded[name]

    def _head(self, r: FieldReader, name: str, shape) -> tuple[int, np.ndarray | None, int, Any]:
        """(entries, positions or None, values sent, the value quantizer or None when nothing
        is sent)."""
        numel = int(np.prod(shape, dtype=np.int64))
        indices = self._positions(r, name, numel)
        n = numel if indices is None else indices.size
        if not n:
            return numel, indices, n, None
        quantizer = self._raw if numel <= self.spec["min_entries"] else self.quantizer
        return numel, indices, n, quantizer

    def _tensor(self, r: FieldReader, head, q: QuantizedValues | None, shape, dtype):
        numel, indices, n, quantizer = head
        # rounding each value to dtype and then scattering is the same as the reverse
        out = torch.zeros(numel, dtype=dtype)
        if q is not None:
            if quantizer.wire_dtype is not None:
                q.values = torch.from_numpy(r.array(quantizer.wire_dtype, n, "values"))
                values = quantizer.decode(q)
            else:
                n_levels = quantizer.n_symbols() if q.levels is None else len(q.levels)
                idx = _read_indices(r, quantizer, n, bool(self.spec["huffman"]), n_levels)
                values = quantizer.decode(q, torch.from_numpy(idx))
            if indices is None:
                out = values.to(dtype)
            else:
                out[torch.from_numpy(indices)] = values.to(dtype)
        r.finish()
        check_finite(out, r.where)  # in the tensor's dtype: a level beyond its range is inf
        return out.reshape(shape)

    def decode(self, data: bytes | bytearray | memoryview) -> dict[str, torch.Tensor]:
        """The update (the layout's names, shapes and dtypes; CPU) from its bytes: each
        record's positions, then the side information of all (read together, so that a
        kind's designs are made together: :meth:`ValueQuantizer.read_sides`), then values."""
        wheres = [_where(n) for n in self.layout.names]
        readers = read_records(
            data, self.quantizer, self.layout, wheres, Agreed.of(self.spec, self.rnd)
        )
        heads = [_checked(r, self._head, r, name, shape)
                 for r, (name, shape, _) in zip(readers, self.layout, strict=True)]  # fmt: skip
        sides: list[QuantizedValues | None] = [None] * len(heads)
        for quantizer in (self._raw, self.quantizer):
            mine = [i for i, h in enumerate(heads) if h[3] is quantizer]
            if not mine:
                continue
            # a kind without its own read_sides reads record by record (errors name each)
            one_by_one = type(quantizer).read_sides is ValueQuantizer.read_sides
            for batch in [[i] for i in mine] if one_by_one else [mine]:
                args = [(readers[i], heads[i][2], self.layout.names[i], self.rnd) for i in batch]
                got = _checked(readers[batch[0]], quantizer.read_sides, args)
                for i, q in zip(batch, got, strict=True):
                    sides[i] = q
        return {
            name: _checked(r, self._tensor, r, head, q, shape, dtype)
            for r, head, q, (name, shape, dtype) in zip(
                readers, heads, sides, self.layout, strict=True
            )
        }


def _checked(r: FieldReader, fn, *args):
    """``fn(*args)``, a kind's own check (ValueError, IndexError, RuntimeError) reported as a
    :class:`WireFormatError` of record ``r``."""
    try:
        return fn(*args)
    except WireFormatError:
        raise
    except (ValueError, IndexError, RuntimeError) as exc:
        raise WireFormatError(r.where, "values", str(exc)) from exc
