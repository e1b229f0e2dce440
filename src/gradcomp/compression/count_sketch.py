"""``count_sketch``: a count sketch of the update, unsketched to its k largest estimates.

The sketch and its hashes are :mod:`~gradcomp.compression.sketch_hash` (``r`` rows, ``c``
columns; with ``c >= 3 / eps^2`` and ``r = O(log 1/delta)`` an estimate is within
``eps ||x||_2`` of the entry with probability ``1 - delta``). The receiver's *unsketch* keeps
the k entries of largest estimated magnitude at their estimates.

Size. ``rate`` R is the sketch's size in cells per 100 sketched entries: ``c = ceil(R d /
(100 r))`` columns per sketch of d entries (M22's per-tensor size is R = 100, float32 cells:
as many bits as the dense tensor). The entries recovered are set by what the sketch can
hold, not by a top-K fraction: ``k = ceil(sketch_k_ratio c)`` (capped at d; FetchSGD fixes k
and sizes c for it, the ratio says the same per sketch). Each recovered entry's estimate
carries noise of about ``||x_tail|| / sqrt(c)``, so k close to c adds more error than the
entries recover: on a Laplace test vector (``bench/bench_sketch.py``), k = 0.452 d (the
``topk`` an earlier version inherited) gave paper.yaml's R = 10 / 25 / 100 sketches 3.59 /
2.23 / 1.05 times the error of sending nothing, and M22's k (the non-zeros after its 60%
top-K, about 3 c) 1.00-1.29 times on the cnn's tensors.
:func:`~gradcomp.compression.sketch_probe.sketch_relative_error` measures
``||U(S(x)) - x|| / ||x||`` on a GenNorm test vector
(:func:`~gradcomp.compression.sketch_probe.probe_vector`, the law of paper L's gradients at
its upper shape 1, i.e. Laplace), and the config check refuses a spec above 1 (sending
nothing) at :data:`CHECK_ENTRIES` entries; the compressor logs a warning when a sketch of its
actual size (at most :data:`WARN_ENTRIES`) measures above 1.

Scope. ``sketch_scope="update"`` (FetchSGD): one sketch of the tensors with more than
``min_entries`` entries, flattened and concatenated in the update's order; ``"tensor"``
(M22): one sketch per such tensor. The others are sent raw at 32 bits.
``sketch_topk`` (a fraction; None: off): sketch the update after a global top-K of that
fraction of all its entries, as M22 does (then k is also capped at the sketch's non-zeros).

Error feedback (``error_feedback``): sketch-domain error accumulation per user,
``S_e <- decay S_e + S(x)``, send ``S_e``, both ends unsketch ``D = TopK(U(S_e))``, then
(``sketch_feedback``)

- ``"zero"`` (default; FetchSGD's reference code): the cells of ``S_e`` that the recovered
  entries hash to are set to 0. ``S_e`` never exceeds what was accumulated since its cells
  were last cleared, so it cannot diverge;
- ``"subtract"`` (FetchSGD's Algorithm 1): ``S_e <- S_e - S(D)``. Exact when every estimate
  is; once k/c is large the estimates' noise is fed back and grows round over round
  (``bench/bench_sketch.py``: the residual grows without bound at k/c = 0.5).

Each user has its own hashes and error sketch and there is no momentum: the federated loop
aggregates decompressed updates. FetchSGD's protocol (one hash for all users, sketches summed
at the server, momentum and error in the sketch domain there) is
:class:`~gradcomp.compression.fetchsgd.FetchSGDServer`.

Rate parts: ``payload_fixed_bits = payload_huffman_bits = 32 r c`` per sketch (float32 cells),
``side_bits`` 32 per sketch for k when ``sketch_topk`` is on (k then depends on the data;
otherwise the receiver computes it, :meth:`CountSketch.k_of`), ``raw_bits`` 32 per raw entry;
``n_sent`` counts the cells and raw numbers. The hash seed costs nothing: both ends derive it
from the user's seed (:meth:`CountSketch.seed_of`). Byte format:
:mod:`gradcomp.wire.sketch`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from gradcomp.compression.inputs import WIRE_LIMITS, checked_update, refuse_non_finite
from gradcomp.compression.rates import FLOAT_BITS, RateBreakdown
from gradcomp.compression.sketch_hash import HASH_KINDS, SketchHash, cached_hash
from gradcomp.compression.sketch_probe import sketch_relative_error
from gradcomp.compression.sparsifiers import TopK

log = logging.getLogger(__name__)

__all__ = [
    "CHECK_ENTRIES",
    "SKETCH_FEEDBACKS",
    "SKETCH_SCOPES",
    "CountSketch",
    "SketchSizeError",
    "SketchHash",
]

SKETCH_SCOPES = ("update", "tensor")
SKETCH_FEEDBACKS = ("zero", "subtract")
#: Bits of a sketch's k when it is sent (``sketch_topk``).
K_BITS = 32
#: Entries of the test vector the config check measures a sketch on.
CHECK_ENTRIES = 30_000
#: Most entries of the test vector behind the compressor's warning (memory of its hash).
WARN_ENTRIES = 1_000_000
#: Most sketch rows: a row more divides the chance of a bad estimate by about e, and the
#: config check's test sketch (:data:`CHECK_ENTRIES` entries) stays small (rows x entries
#: hash entries of 24 bytes each are allocated).
MAX_ROWS = 64
#: Most rows x entries of one sketch's hashes (24 bytes each, 12 GiB), checked against the
#: update before the hashes are built.
MAX_HASH_ENTRIES = 2**29


class SketchSizeError(ValueError):
    """A sketch too large for the update it sketches; ``key``: the spec key to lower."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"compressor spec key {key!r}: {message}")


@dataclass
class Sketched:
    """One sketch: float32 ``table`` (rows, columns), the ``names`` it holds (in order), the
    entries ``d``, the hash's ``seed`` (from the shared seed, not sent) and ``k``."""

    table: torch.Tensor
    names: tuple[str, ...]
    d: int
    seed: int
    k: int


class CountSketch:
    """``count_sketch``: see the module doc.

    compress(update) -> (payload: {"sketches": [Sketched], "raw": name -> float32 tensor},
    ctx: name -> (shape, dtype, device)); decompress -> the update's tensors; rate ->
    :class:`RateBreakdown`.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: cells or raw
    entries beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "count_sketch"
    wire_code = 33  # its byte in the wire's header: never reused
    title = "count sketch"
    #: spec keys this kind takes besides name (``rate``: cells per 100 sketched entries)
    spec_keys = ("rate", "error_feedback", "memory_decay", "seed")
    #: spec options (key -> default); :mod:`~gradcomp.compression.specs` checks them
    options: ClassVar[dict[str, object]] = {
        "rows": 5,
        "sketch_k_ratio": 0.25,
        "min_entries": 1000,
        "sketch_scope": "update",
        "sketch_feedback": "zero",
        "sketch_hash": "random",
        "sketch_topk": None,
    }
    max_rate = 10_000
    #: options that act on the error-feedback memory (refused without ``error_feedback``)
    feedback_options = ("sketch_feedback",)

    def __init__(
        self,
        rate: int,
        *,
        rows: int = 5,
        k_ratio: float = 0.25,
        min_entries: int = 1000,
        scope: str = "update",
        feedback: str = "zero",
        hash_kind: str = "random",
        topk: float | None = None,
        error_feedback: bool = False,
        memory_decay: float = 1.0,
        seed: int = 0,
    ):
        if rate < 1 or rows < 1 or not k_ratio > 0 or min_entries < 0:
            raise ValueError(
                f"bad count sketch: rate {rate}, rows {rows}, sketch_k_ratio {k_ratio}, "
                f"min_entries {min_entries}"
            )
        for key, value, allowed in (
            ("sketch_scope", scope, SKETCH_SCOPES),
            ("sketch_feedback", feedback, SKETCH_FEEDBACKS),
            ("sketch_hash", hash_kind, HASH_KINDS),
        ):
            if value not in allowed:
                raise ValueError(f"{key} must be one of {allowed}, got {value!r}")
        if topk is not None and not 0 < topk <= 1:
            raise ValueError(f"sketch_topk must be a fraction in (0, 1] or None, got {topk!r}")
        self.percent, self.rows, self.k_ratio = int(rate), int(rows), float(k_ratio)
        self.min_entries, self.scope, self.feedback = int(min_entries), scope, feedback
        self.hash_kind, self.topk = hash_kind, topk
        self.step = 0  # updates compressed (the index of the last one's bytes + 1)
        self.error_feedback, self.decay, self.seed = bool(error_feedback), memory_decay, seed
        self.errors: dict[tuple[str, ...], torch.Tensor] = {}  # S_e per sketch
        self._warned: set[int] = set()

    @classmethod
    def check_option(cls, key: str, value: Any) -> str | None:
        """Why ``value`` is not valid for option ``key``, or None."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == "rows" and not (number and value == int(value) and 1 <= value <= MAX_ROWS):
            return f"must be an integer in 1..{MAX_ROWS} (sketch rows), got {value!r}"
        if key == "sketch_k_ratio" and not (number and 0 < value <= 10):
            return f"must be a number in (0, 10] (entries recovered per column), got {value!r}"
        if key == "min_entries" and not (number and value == int(value) and value >= 0):
            return f"must be an integer >= 0, got {value!r}"
        allowed = {
            "sketch_scope": SKETCH_SCOPES,
            "sketch_feedback": SKETCH_FEEDBACKS,
            "sketch_hash": HASH_KINDS,
        }.get(key)
        if allowed is not None and value not in allowed:
            return f"must be one of {allowed}, got {value!r}"
        if key == "sketch_topk" and value is not None and not (number and 0 < value <= 1):
            return f"must be a fraction in (0, 1] or null (no top-K), got {value!r}"
        return None

    @classmethod
    def check_together(cls, spec: Mapping[str, Any]) -> tuple[str, str] | None:
        """(key, why) when the checked spec's sketch is worse than sending nothing on the
        :data:`CHECK_ENTRIES`-entry test vector
        (:func:`~gradcomp.compression.sketch_probe.sketch_relative_error`), else None."""
        args = (
            spec["rate"],
            int(spec["rows"]),
            float(spec["sketch_k_ratio"]),
            spec["sketch_hash"],
            spec["sketch_topk"],
        )
        error = sketch_relative_error(CHECK_ENTRIES, *args)
        if error <= 1.0:
            return None
        c = math.ceil(spec["rate"] * CHECK_ENTRIES / (100 * int(spec["rows"])))
        best = min(sketch_relative_error(CHECK_ENTRIES, args[0], args[1], r, *args[3:])
                   for r in (0.01, 0.05, 0.25))  # fmt: skip
        hint = (
            "a smaller sketch_k_ratio"
            if best <= 1.0
            else "a larger rate (no sketch_k_ratio in 0.01-0.25 beats sending nothing at "
            f"this rate: best {best:.3f})"
        )
        return (
            "sketch_k_ratio",
            f"a {args[1]} x {c} sketch of a {CHECK_ENTRIES}-entry Laplace test vector "
            f"unsketched to k = {math.ceil(args[2] * c)} entries (sketch_k_ratio {args[2]}) "
            f"has relative error {error:.3f}, worse than sending nothing (1.0); use {hint}",
        )

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> CountSketch:
        return cls(
            spec["rate"],
            rows=int(spec["rows"]),
            k_ratio=float(spec["sketch_k_ratio"]),
            min_entries=int(spec["min_entries"]),
            scope=spec["sketch_scope"],
            feedback=spec["sketch_feedback"],
            hash_kind=spec["sketch_hash"],
            topk=spec["sketch_topk"],
            error_feedback=spec["error_feedback"],
            memory_decay=spec["memory_decay"],
            seed=spec["seed"],
        )

    def columns(self, d: int) -> int:
        """Columns of a sketch of d entries: ``ceil(rate d / (100 rows))``."""
        return max(1, math.ceil(self.percent * d / (100 * self.rows)))

    def k_of(self, d: int) -> int:
        """Entries recovered from a sketch of d entries: ``ceil(sketch_k_ratio c)``, <= d."""
        return min(d, math.ceil(self.k_ratio * self.columns(d)))

    def seed_of(self, index: int) -> int:
        """The hash seed of the ``index``-th sketch of an update (both ends derive it)."""
        return self.seed * 1_000_003 + index

    def hash_of(self, d: int, index: int) -> SketchHash:
        return cached_hash(d, self.rows, self.columns(d), self.seed_of(index), self.hash_kind)

    def groups(self, sizes: Mapping[str, int]) -> list[tuple[str, ...]]:
        """The names of each sketch, from the update's entries per tensor (name -> numel)."""
        big = [n for n, numel in sizes.items() if numel > self.min_entries]
        if self.scope == "tensor":
            return [(n,) for n in big]
        return [tuple(big)] if big else []

    def _check_size(self, d: int) -> None:
        if d in self._warned:
            return
        self._warned.add(d)
        probe = min(d, WARN_ENTRIES)  # the error hardly depends on d at a given rate and ratio
        error = sketch_relative_error(
            probe, self.percent, self.rows, self.k_ratio, self.hash_kind, self.topk
        )
        if error > 1.0:
            log.warning(
                "count sketch of %d entries (%d x %d, k %d): relative error %.3f on the test "
                "vector, worse than sending nothing",
                d, self.rows, self.columns(d), self.k_of(d), error,
            )  # fmt: skip

    def check_size(self, d: int) -> None:
        """:class:`SketchSizeError` naming ``rows`` when a sketch of d entries needs more than
        :data:`MAX_HASH_ENTRIES` hash entries (checked before any is built)."""
        if self.rows * d > MAX_HASH_ENTRIES:
            raise SketchSizeError(
                "rows",
                f"a {self.rows}-row sketch of {d} entries needs {self.rows * d} hash entries "
                f"(24 bytes each), more than {MAX_HASH_ENTRIES}: use fewer rows or "
                "sketch_scope tensor",
            )

    def compress(self, update: Mapping[str, torch.Tensor]):
        """(payload, ctx) of one update; a refused update leaves the compressor as it was."""
        update = checked_update(update)
        groups = self.groups({n: t.numel() for n, t in update.items()})
        for names in groups:
            self.check_size(sum(update[n].numel() for n in names))
        saved = (self.step, dict(self.errors))
        try:
            return self._compress(update)
        except BaseException:
            self.step, self.errors = saved
            raise

    def _compress(self, update: Mapping[str, torch.Tensor]):
        self.step += 1
        ctx = {n: (tuple(t.shape), t.dtype, t.device) for n, t in update.items()}
        groups = self.groups({n: t.numel() for n, t in update.items()})
        grouped = {n for g in groups for n in g}
        raw = {
            n: t.detach().to(torch.float32).clone() for n, t in update.items() if n not in grouped
        }
        kept = TopK(self.topk).select(update) if self.topk is not None else None
        sketches = []
        for index, names in enumerate(groups):
            parts = [update[n].detach() * kept[n] if kept else update[n].detach() for n in names]
            x = torch.cat([p.reshape(-1).to("cpu", torch.float64) for p in parts])
            self._check_size(x.numel())
            h = self.hash_of(x.numel(), index)
            k = self.k_of(x.numel())
            if kept is not None:
                k = min(k, int((x != 0).sum()))
            table = h.sketch(x)
            if self.error_feedback:
                if names in self.errors:
                    table = table + self.decay * self.errors[names]
                table = table.to(torch.float32).to(torch.float64)  # what is sent
                self.errors[names] = self._feed_back(h, table, h.unsketch(table, k))
            sketches.append(
                Sketched(table.to(torch.float32), names, x.numel(), self.seed_of(index), k)
            )
            # float32 cells beyond its range (a float64 update): refused, never sent as inf
            refuse_non_finite(", ".join(names), self.kind, sketches[-1].table, x, WIRE_LIMITS["f4"])
        for n, t in raw.items():
            refuse_non_finite(n, self.kind, t, update[n], WIRE_LIMITS["f4"])
        return {"sketches": sketches, "raw": raw}, ctx

    def _feed_back(self, h: SketchHash, table: torch.Tensor, sent: torch.Tensor) -> torch.Tensor:
        """The error sketch after ``sent`` (d,) was unsketched from ``table`` (module doc)."""
        if self.feedback == "subtract":
            return table - h.sketch(sent)
        return table.masked_fill(h.cells_of(sent.nonzero().squeeze(1)), 0.0)

    def decompress(self, payload, ctx) -> dict[str, torch.Tensor]:
        out = {n: t.to(ctx[n][2], ctx[n][1]) for n, t in payload["raw"].items()}
        for s in payload["sketches"]:
            h = cached_hash(s.d, *s.table.shape, s.seed, self.hash_kind)
            flat, start = h.unsketch(s.table, s.k), 0
            for n in s.names:
                shape, dtype, device = ctx[n]
                size = math.prod(shape)
                out[n] = flat[start : start + size].reshape(shape).to(device, dtype)
                start += size
        return {n: out[n] for n in ctx}

    def rate(self, payload, ctx) -> RateBreakdown:
        out = RateBreakdown()
        for s in payload["sketches"]:
            cells = s.table.numel()
            out += RateBreakdown(
                payload_fixed_bits=FLOAT_BITS * cells,
                payload_huffman_bits=FLOAT_BITS * cells,
                n_entries=s.d,
                n_sent=cells,
            )
            if self.topk is not None:
                out += RateBreakdown(side_bits=K_BITS)
        for t in payload["raw"].values():
            out += RateBreakdown(
                raw_bits=FLOAT_BITS * t.numel(), n_entries=t.numel(), n_sent=t.numel()
            )
        return out
