"""Building a compressor from a checked spec (:mod:`gradcomp.compression.specs` checks it).

:func:`make_quantizer` gives a spec's value quantizer from the registry; :func:`build_compressor`
the whole compressor: a :class:`PipelineCompressor` for a ``quantizer`` kind, the registered
class for a ``compressor`` kind, the user's class for ``class``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradcomp.compression import user_compressors
from gradcomp.compression.memory import ResidualMemory
from gradcomp.compression.random_k import RandomK
from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.compression.sparsifiers import TopK
from gradcomp.compression.specs import CheckedSpec, check_spec
from gradcomp.compression.update_compression import PipelineCompressor, ValueQuantizerChoice
from gradcomp.compression.value_quantizers import ValueQuantizer

__all__ = ["build_compressor", "make_quantizer"]


def make_quantizer(
    spec: Mapping[str, Any], *, fit_fn: Callable[..., Any] | None = None
) -> ValueQuantizer:
    """The value quantizer of a checked spec (see :func:`check_spec`), from the registry."""
    return QUANTIZERS[spec["quantizer"]].from_spec(spec, fit_fn=fit_fn)


def build_compressor(
    spec: Mapping[str, Any],
    *,
    fit_fn: Callable[..., Any] | None = None,
    entropy_coder: Callable[[np.ndarray], Any] | None = None,
) -> Any:
    """The compressor of a spec (see the module doc); raises :class:`SpecError`. A
    :class:`CheckedSpec` is built as it is, any other mapping is checked first.

    A :class:`PipelineCompressor` for a ``quantizer`` kind (its entropy coder: ``entropy_coder``,
    else the quantizer's own ``entropy_coder`` method if it has one, else Huffman), else the
    ``compressor`` kind's or the user's class. Each has ``compress``, ``decompress``, ``rate``.

    Example: 2-bit uniform levels from min to max on the half of the entries largest in
    magnitude (the rest are sent as zeros)::

        >>> import torch
        >>> c = build_compressor({"quantizer": "uniform", "rate": 2, "topk": 0.5,
        ...                       "min_entries": 0})
        >>> payload, ctx = c.compress({"w": torch.arange(-8.0, 8.0).reshape(4, 4)})
        >>> c.decompress(payload, ctx)["w"][0].tolist()
        [-8.0, -8.0, -8.0, -3.0]
    """
    s = spec if isinstance(spec, CheckedSpec) else check_spec(spec)
    if s["class"] is not None:
        return user_compressors.build_user_compressor(s)
    compressor = _built(s, fit_fn, entropy_coder)
    compressor.wire_spec = s  # bound into its bytes (gradcomp.wire.records.Agreed)
    return compressor


def _built(s: CheckedSpec, fit_fn, entropy_coder) -> Any:
    if s["compressor"] is not None:
        return COMPRESSORS[s["compressor"]].from_spec(s)
    quantizer = make_quantizer(s, fit_fn=fit_fn)
    sparsifier: TopK | RandomK | None = None
    if s["sparsifier"] == "topk":
        sparsifier = TopK(s["topk"])
    elif s["sparsifier"] == "randomk":
        # with error feedback unscaled (Stich et al. 2018): the scaled one's memory diverges
        sparsifier = RandomK(s["topk"], seed=s["seed"], unbiased=not s["error_feedback"])
    return PipelineCompressor(
        ValueQuantizerChoice(quantizer, s["min_entries"]),
        topk=sparsifier,
        memory=(
            ResidualMemory(s["memory_decay"], s["memory_mode"]) if s["error_feedback"] else None
        ),
        huffman=s["huffman"],
        entropy_coder=entropy_coder or getattr(quantizer, "entropy_coder", None),
        name=s["name"],
    )
