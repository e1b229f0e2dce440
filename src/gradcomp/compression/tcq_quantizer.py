"""``tcq``: trellis-coded quantization of the sent values (Marcellin and Fischer 1990;
:mod:`gradcomp.quantization.tcq`), R bits per entry, under the ``|g|^M`` weighted distortion.

Codebook design, per tensor: the family is fitted (loc fixed at 0) to the tensor's whole
update, as the ``lloyd`` quantizer's default ``fit_to="update"`` does, and the Lloyd levels of
its law beyond the top-K threshold tau (the smallest kept magnitude) are designed at rate
R + 1: the 2^(R+1)-level union codebook, labelled in sorted order. A few TCQ-Lloyd iterations
(:func:`~gradcomp.quantization.tcq.refine_codebook`) then refine it on the tensor's values (on
an evenly strided subsample of at most ``train_entries`` of them), and the Viterbi search
codes all values. If the fit fails, the start codebook is 2^(R+1) uniform levels on
[min, max] (refined all the same) and a warning is logged.

What is sent: one R-bit word per value (the branch bit and the level's index in its subset;
``value_bits = R`` exactly), the initial trellis state (charged log2(states) bits, one byte on
the wire) and the refined codebook, 2^(R+1) float32 levels (``levels_sent``, as ``kmeans``
sends its levels). The receiver needs nothing else: it walks the trellis from the initial
state with the branch bits.

Entropy coding: with ``huffman`` the words are Huffman coded like any quantizer's indices
(over the 2^R words). The branch bits are nearly incompressible, so the gain is only what
the uneven use of the levels within a subset offers; the fixed R bits are the rate of record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import torch

from gradcomp.coding.fields import FieldReader, FieldWriter
from gradcomp.compression.inputs import check_sendable
from gradcomp.compression.lloyd_quantizer import LLOYD_FAMILIES, default_fit
from gradcomp.compression.rates import FLOAT_BITS
from gradcomp.compression.value_quantizers import QuantizedValues, ValueQuantizer
from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.minmax_levels import uniform_minmax_levels
from gradcomp.quantization.tcq import TCQ_STATES, Trellis, refine_codebook, tcq_decode, viterbi

log = logging.getLogger(__name__)

__all__ = ["TCQQuantizer", "TrellisValues"]


@dataclass
class TrellisValues(QuantizedValues):
    """TCQ's words with the initial state (``side["initial_state"]``, charged ``state_bits``)
    and the codebook (``levels``, float32 each)."""

    state_bits: int = 0

    @property
    def side_bits(self) -> int:
        return self.state_bits + FLOAT_BITS * len(cast(np.ndarray, self.levels))  # always sent


class TCQQuantizer(ValueQuantizer):
    """TCQ at ``rate`` = R bits per value with a ``states``-state trellis (module doc).

    ``refine_iter``: TCQ-Lloyd iterations on the data (0: the law's Lloyd codebook as is);
    ``train_entries``: most values they use. ``fit_fn(x, family, label, floc)`` fits the law.

    Beyond its format (an entry whose reconstruction would be NaN or infinite: a codebook
    beyond float32): refused by name,
    :class:`~gradcomp.compression.inputs.OutOfRangeUpdateError`, never clamped.
    """

    kind = "tcq"
    wire_code = 11  # its byte in the wire's header: never reused
    title = "trellis-coded (TCQ)"
    takes_M = True
    takes_family = True
    lloyd_fits = ("update",)
    uses_full_tensor = True
    max_rate: ClassVar[int] = 8
    states_allowed: ClassVar[tuple[int, ...]] = TCQ_STATES

    def __init__(
        self,
        rate: int,
        family: str = "gennorm",
        M: float = 0.0,
        *,
        states: int = 8,
        refine_iter: int = 6,
        train_entries: int = 16384,
        fit_fn: Callable[..., Any] | None = None,
    ):
        if not 1 <= int(rate) <= self.max_rate:
            raise ValueError(f"tcq rate must be in 1..{self.max_rate} bits, got {rate}")
        if family not in LLOYD_FAMILIES:
            raise ValueError(f"unknown tcq family {family!r}; expected one of {LLOYD_FAMILIES}")
        self.rate, self.family, self.M = int(rate), family, float(M)
        self.trellis = Trellis.ungerboeck(int(states))
        self.refine_iter, self.train_entries = int(refine_iter), int(train_entries)
        self.fit_fn = fit_fn or default_fit

    @classmethod
    def from_spec(cls, spec, *, fit_fn=None, **kwargs):
        return cls(spec["rate"], spec["family"], spec["M"], states=spec["states"], fit_fn=fit_fn)

    def _start_codebook(self, x: np.ndarray, full: np.ndarray | None, name: str) -> np.ndarray:
        n_levels = 2 ** (self.rate + 1)
        try:
            whole = x if full is None else full
            params = {
                k: float(v) for k, v in self.fit_fn(whole, self.family, name, 0.0).params.items()
            }
            tau = float(np.min(np.abs(x))) if full is not None else 0.0
            return lloyd_design(
                self.family, params, n_levels, self.M, tau=tau, tol=1e-9, max_iter=2000
            ).levels
        except ValueError as exc:  # GradientDataError is a ValueError
            log.warning(
                "tcq %s fit on %r failed (%s); starting from uniform levels", self.family, name, exc
            )
            return uniform_minmax_levels(float(x.min()), float(x.max()), self.rate + 1)

    def encode(
        self, values: torch.Tensor, name: str = "", full: torch.Tensor | None = None
    ) -> QuantizedValues:
        x = values.detach().to("cpu", torch.float64).numpy().ravel()
        if not np.all(np.isfinite(x)):
            raise ValueError(f"tcq: tensor {name!r} has non-finite values")
        check_sendable(self.kind, name, x, "float32 levels")
        whole = None if full is None else full.detach().to("cpu", torch.float64).numpy().ravel()
        levels = self._start_codebook(x, whole, name)
        # |x|^M relative to the largest |x| (the same design; no overflow at large values)
        weights = (np.abs(x) / (float(np.max(np.abs(x))) or 1.0)) ** self.M
        if self.refine_iter > 0:
            step = max(1, -(-x.size // self.train_entries))
            levels, _ = refine_codebook(
                x[::step], levels, self.trellis, weights[::step], n_iter=self.refine_iter
            )
        check_sendable(self.kind, name, levels, "float32 levels")  # a law's outer levels
        levels = levels.astype(np.float32).astype(np.float64)  # what the wire carries
        path = viterbi(x, levels, self.trellis, weights)
        return self._values(x.size, path.initial_state, levels,
                            torch.from_numpy(path.words).to(values.device))  # fmt: skip

    def n_symbols(self) -> int:
        return 2**self.rate

    @property
    def state_bits(self) -> int:
        """Bits of the initial state: log2(states)."""
        return (self.trellis.states - 1).bit_length()

    def _values(self, n: int, state: int, levels: np.ndarray, words=None) -> TrellisValues:
        return TrellisValues(
            self.kind, n, indices=words, levels=levels, side={"initial_state": float(state)},
            value_bits=self.rate, levels_sent=True, state_bits=self.state_bits,
        )  # fmt: skip

    def write_side(self, q: QuantizedValues, w: FieldWriter) -> None:
        w.u8(int(q.side["initial_state"]))
        w.array(cast(np.ndarray, q.levels).astype(np.float32), "f4")

    def read_side(self, r: FieldReader, n: int, *, name: str, step: int) -> TrellisValues:
        state = r.u8("initial state")
        if state >= self.trellis.states:
            raise r.error("initial state", f"{state} >= {self.trellis.states} states")
        levels = r.array("f4", 2 * self.n_symbols(), "levels").astype(np.float64)
        return self._values(n, state, levels)

    def decode(self, q: QuantizedValues, indices: torch.Tensor | None = None) -> torch.Tensor:
        words = cast(torch.Tensor, q.indices if indices is None else indices)
        device = words.device
        out = tcq_decode(words.cpu().numpy(), int(q.side["initial_state"]), q.levels, self.trellis)
        return torch.from_numpy(out).to(device)

    def entropy_coder(self, counts: np.ndarray):
        """Huffman code of the 2^R words (``counts`` may be padded to the 2^(R+1) levels)."""
        from gradcomp.coding import HuffmanCode

        return HuffmanCode.from_pmf(np.asarray(counts)[: 2**self.rate])
