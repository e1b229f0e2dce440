"""Paper L's lossless-coding study: bits per entry of every coder on every dumped tensor.

For one tensor the entries are quantized on a fixed grid (FP8 E5M2 by default, the raw
gradient values as paper L does) and coded by every coder and bound of
``lossless.coding.coders`` (:mod:`gradcomp.coding.registry`: the i.i.d. model codes
``huffman_<family>`` and ``ans_gennorm``, ``huffman_empirical``, the per-channel GenNorm
and adaptive context coders, the FP8 bytes and general-purpose compressors on them, and the
ideal code lengths ``entropy``, ``xent_<family>``, ``entropy_channel``, ``entropy_context``).
A coder's row is the length of its real bitstream (decoded and checked when ``verify``);
a bound's its stated size. The tensor is seen as (rows, cols), rows = output channels.

Every model pmf is floored on the *whole* alphabet (not only the symbols that
occur), so the code depends on the model parameters alone and a decoder can
rebuild it.

The ``slip`` accounting reproduces the authors' code: the epoch average is
divided by ``n_batches - 1`` instead of ``n_batches`` (values and fitted loc
and scale scaled by ``n/(n-1)``) and one sign bit is charged per codebook
symbol instead of one per non-zero entry. Its rows hold only the coders that send signs
as raw bits (Huffman, i.i.d. and per-channel ANS, the entropies), so that every row is
charged alike; the others have ``exact`` rows only.

FP8 is not scale-invariant (E5M2 normals start at 2**-14, subnormals at 2**-16, the
largest value is 57344), so every row records the share of entries the grid rounds to
zero (``zero_share``, exact zeros included; ``n_exact_zero`` of them were zero already)
and the share that saturate (``saturated_share``). The ``scaling`` dimension says how
the entries meet the grid: ``none`` quantizes the raw gradient (paper L); ``amax`` first
multiplies the tensor by the power of two ``2**scale_exponent`` that puts its largest
magnitude in the grid's top binade (as FP8 training recipes do), the exponent being
:data:`~gradcomp.quantization.grids.EXPONENT_BITS` bits of side information charged to every coder.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gradcomp.artifacts import write_tsv
from gradcomp.coding import HuffmanCode
from gradcomp.coding.base import TensorSymbols, as_rows
from gradcomp.coding.byte_coders import BytesCoder, ShuffledLzmaSize, fp8_bytes
from gradcomp.coding.counts import SymbolCounts, is_counted, tensor_counts
from gradcomp.coding.iid_coders import model_pmf_of
from gradcomp.coding.registry import CoderSpec, builtin_specs
from gradcomp.distributions import FittedDistribution
from gradcomp.lossless.dumps import read_dump
from gradcomp.lossless.fit_lossless import fitted_from_row
from gradcomp.quantization.grids import (
    EXPONENT_BITS,
    SCALINGS,
    FixedGrid,
    amax_exponent,
    get_grid,
)

log = logging.getLogger(__name__)

CODING_COLUMNS = (
    "model", "run", "epoch", "kind", "tensor", "numel", "grid", "scaling", "scale_exponent",
    "accounting", "coder", "length", "payload_bits", "side_bits", "total_bits", "bits_per_entry",
    "ratio_to_8bit", "n_saturated", "n_nonzero", "n_exact_zero", "zero_share",
    "saturated_share",
)  # fmt: skip
ACCOUNTINGS = ("exact", "slip")
#: How a row's size was obtained (the ``length`` column): ``stream``, the coder wrote its
#: bitstream (decoded and checked when ``verify``); ``counts``, computed exactly from the
#: tensor's symbol counts without a stream (:mod:`gradcomp.coding.counts`: a count-based
#: coder's size, exact but for i.i.d. ANS, whose is its ideal code length in whole words;
#: or an ideal code length that depends only on the counts); ``bound``, a size without a
#: decoder computed from the symbols (reference compressors, context bounds).
LENGTHS = ("stream", "counts", "bound")
DERIVED = ("total_bits", "bits_per_entry", "ratio_to_8bit")
GENERAL_PURPOSE = (BytesCoder, ShuffledLzmaSize)
__all__ = [
    "code_lossless", "code_run", "code_tensor", "code_values", "coding_table", "fp8_bytes",
    "merge_streamed", "model_code", "scaled_grid",
]  # fmt: skip


def model_code(fitted: FittedDistribution, grid: FixedGrid) -> tuple[HuffmanCode, np.ndarray]:
    """Huffman code (and the floored pmf it was built from) of the model's magnitude bins;
    the mixture's cdf puts the atom ``p0`` in the zero bin."""
    pmf = model_pmf_of(fitted, grid)
    return HuffmanCode.from_pmf(pmf), pmf


def code_tensor(
    values: np.ndarray,
    fits: dict[str, FittedDistribution],
    grid: FixedGrid,
    *,
    coders: Sequence[CoderSpec] | None = None,
    shape: tuple[int, ...] | None = None,
    sign_per_symbol: bool = False,
    general_purpose: bool = True,
    verify: bool = False,
    streams: bool = True,
) -> list[dict[str, float]]:
    """Bits of every coder on one tensor's entries (float array, data units, of ``shape``;
    default its own shape).

    ``fits`` maps family name to the tensor's fit; ``coders``: the specs (default every
    built-in for the fitted families). Returns one dict per coder with ``coder``,
    ``length`` (:data:`LENGTHS`), ``payload_bits``, ``side_bits``, ``n_saturated`` (entries
    beyond the grid's extreme levels), ``n_nonzero`` (entries on a non-zero level),
    ``n_exact_zero``, ``zero_share`` (share on the zero level, exact zeros included) and
    ``saturated_share``. ``sign_per_symbol`` charges one sign bit per magnitude symbol
    instead of one per non-zero entry (the ``slip`` accounting's sign bits) and codes only
    the coders that send their signs as raw bits (``raw_signs``), the only ones whose signs
    can be re-charged: a context coder or byte compressor codes its signs inside its stream,
    so a row of it would compare a re-charged Huffman with an un-charged stream;
    ``general_purpose=False`` leaves out the byte compressors (zlib, bz2, lzma, zstd,
    lzma_shuffled); ``verify`` decodes every stream and raises if it is not the input.

    ``streams=False`` codes only the coders and bounds whose size follows from the symbol
    counts (:func:`~gradcomp.coding.counts.is_counted`), from the counts, without writing a
    stream: ``values`` may then be a torch tensor, whose counts are taken on its device
    (2-D ``(rows, cols)``; float64 for the symbols of float64 arithmetic).
    """
    rows_cols = as_rows(tuple(values.shape if shape is None else shape))
    specs = list(builtin_specs(list(fits)).values() if coders is None else coders)
    if not general_purpose:
        specs = [s for s in specs if s.cls not in GENERAL_PURPOSE]
    if sign_per_symbol:
        specs = [s for s in specs if getattr(s.cls, "raw_signs", False)]
    if streams:
        values = np.asarray(values)
        symbols, n_saturated = grid.encode(values)
        x = TensorSymbols(symbols.reshape(rows_cols), grid, fits)
        counts = SymbolCounts.of_symbols(x)
    else:
        specs = [s for s in specs if is_counted(s.cls)]
        counts, n_saturated = tensor_counts(values.reshape(rows_cols), grid, fits)
    numel = int(np.prod(rows_cols))
    sign_change = grid.n_magnitudes - counts.n_nonzero if sign_per_symbol else 0
    rows = []
    for spec in specs:
        coder: Any = spec.build()  # a Coder or a Bound; spec says which, and if counted
        missing = [f for f in getattr(coder, "needs", ()) if f not in fits]
        if missing:
            raise ValueError(f"coder {spec.name} needs fits of {missing}")
        if not streams:
            (payload, side), length = coder.counted_bits(counts), "counts"
        elif spec.is_bound:
            payload, side = float(coder.bits(x)), 0
            length = "counts" if is_counted(spec.cls) else "bound"
        else:
            stream = coder.encode(x)
            payload, side, length = stream.payload_bits, stream.side_bits, "stream"
            if verify and not np.array_equal(coder.decode(stream, grid, fits), x.symbols):
                raise RuntimeError(f"coder {spec.name}: decoded symbols differ from the input")
        payload += sign_change
        rows.append({"coder": spec.name, "length": length, "payload_bits": payload,
                     "side_bits": side})  # fmt: skip
    counts_and_shares = {
        "n_saturated": n_saturated,
        "n_nonzero": counts.n_nonzero,
        "n_exact_zero": int((values == 0).sum()),
        "zero_share": 1.0 - counts.n_nonzero / numel,
        "saturated_share": n_saturated / numel,
    }
    for row in rows:
        row.update(counts_and_shares)
    return rows


def _scaled(fitted: FittedDistribution, factor: float) -> FittedDistribution:
    params = dict(fitted.params)
    for key in ("loc", "scale"):
        params[key] = params[key] * factor
    return FittedDistribution(fitted.family, params, fitted.n, math.nan, fitted.fixed, fitted.p0)


def scaled_grid(values: np.ndarray, grid_name: str, scaling: str) -> tuple[FixedGrid, int]:
    """The grid the entries ``values`` (data units) are quantized on, and its exponent ``k``.

    ``none``: the named grid as it is (``k = 0``); ``amax``: the grid in data units
    ``2**-k`` times the unit grid, with ``k`` from :func:`amax_exponent` on the largest
    magnitude of ``values`` (it must fit
    :data:`~gradcomp.quantization.grids.EXPONENT_BITS` signed bits).
    """
    if scaling == "none":
        return _grid(grid_name, 1.0), 0
    if scaling != "amax":
        raise ValueError(f"unknown scaling {scaling!r}; expected one of {SCALINGS}")
    unit = _grid(grid_name, 1.0)
    k = amax_exponent(float(abs(values).max()), float(unit.levels[-1]))
    if not -(2 ** (EXPONENT_BITS - 1)) <= k < 2 ** (EXPONENT_BITS - 1):
        raise ValueError(f"scale exponent {k} does not fit {EXPONENT_BITS} signed bits")
    return _grid(grid_name, 2.0**-k), k


@functools.lru_cache(maxsize=64)
def _grid(name: str, scale: float) -> FixedGrid:
    """The named grid at ``scale``, built once (its tables then too)."""
    return get_grid(name, scale=scale)


def code_values(
    values: np.ndarray,
    models: dict[str, FittedDistribution],
    *,
    kind: str,
    n_batches: int,
    grid_name: str = "fp8_e5m2",
    accountings: Sequence[str] = ACCOUNTINGS,
    scalings: Sequence[str] = ("none",),
    coders: Sequence[CoderSpec] | None = None,
    general_purpose: bool = True,
    verify: bool = False,
    streams: bool = True,
) -> list[dict[str, object]]:
    """The coding rows of one dumped tensor (``values``: float64, data units, (rows, cols);
    a float64 torch tensor with ``streams=False``), one per (scaling, accounting, coder),
    with ``numel``, ``grid``, ``scaling``, ``scale_exponent``, ``accounting`` and
    :func:`code_tensor`'s columns; ``models``: the tensor's fit per family (unscaled).
    The ``slip`` accounting scales an ``epoch_avg`` by ``n_batches / (n_batches - 1)`` and
    charges sign bits per symbol; ``streams``: as in :func:`code_tensor`; the other keywords
    as in :func:`code_run`."""
    rows = []
    for scaling, accounting in itertools.product(scalings, accountings):
        slip = accounting == "slip"
        factor = (
            n_batches / (n_batches - 1) if slip and kind == "epoch_avg" and n_batches > 1 else 1.0
        )
        scaled = values * factor
        grid, k = scaled_grid(scaled, grid_name, scaling)
        coded = code_tensor(
            scaled,
            {f: _scaled(m, factor) for f, m in models.items()},
            grid,
            coders=coders,
            sign_per_symbol=slip,
            general_purpose=general_purpose,
            verify=verify,
            streams=streams,
        )
        side = EXPONENT_BITS if scaling != "none" else 0
        head = {"numel": int(np.prod(values.shape)), "grid": grid_name, "scaling": scaling,
                "scale_exponent": k, "accounting": accounting}  # fmt: skip
        rows += [{**head, **r, "side_bits": r["side_bits"] + side} for r in coded]
    return rows


def coding_table(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    """Rows of :func:`code_values` (with model, run, epoch, kind, tensor) as the coding
    table: totals, bits per entry and the ratio to 8 bits added, columns :data:`CODING_COLUMNS`."""
    table = pd.DataFrame(list(rows), columns=[c for c in CODING_COLUMNS if c not in DERIVED])
    table["total_bits"] = table["payload_bits"] + table["side_bits"]
    table["bits_per_entry"] = table["total_bits"] / table["numel"]
    table["ratio_to_8bit"] = table["bits_per_entry"] / 8.0
    return table[list(CODING_COLUMNS)]


def code_run(
    dump_paths: Sequence[Path],
    fits: pd.DataFrame,
    *,
    model: str,
    run: int,
    families: Sequence[str],
    grid_name: str = "fp8_e5m2",
    kinds: Sequence[str] = ("epoch_avg",),
    accountings: Sequence[str] = ACCOUNTINGS,
    scalings: Sequence[str] = ("none",),
    coders: Sequence[CoderSpec] | None = None,
    general_purpose: bool = True,
    verify: bool = False,
) -> pd.DataFrame:
    """The coding table (columns :data:`CODING_COLUMNS`) of one run: one row per
    (epoch, kind, tensor, scaling, accounting, coder).

    ``fits`` is the run's fit table (:func:`gradcomp.lossless.fit_lossless.fit_run`):
    only tensors it has rows for are coded, with the fitted ``families``. ``scalings``:
    of :data:`~gradcomp.quantization.grids.SCALINGS` (see :func:`scaled_grid`);
    ``coders``, ``general_purpose`` and ``verify``: as in :func:`code_tensor`.
    """
    index = fits.set_index(["epoch", "kind", "tensor", "family"]).sort_index()
    rows = []
    for path in dump_paths:
        dump = read_dump(path)
        n_batches = int(dump.metadata["n_batches"])
        for kind in kinds:
            fitted_tensors = fits.loc[
                (fits["epoch"] == dump.epoch) & (fits["kind"] == kind), "tensor"
            ]
            for name in dict.fromkeys(fitted_tensors):
                tensor = dump.tensors[kind][name]
                values = tensor.numpy().astype(np.float64).reshape(as_rows(tuple(tensor.shape)))
                models = {}
                for family in families:
                    row = index.loc[(dump.epoch, kind, name, family)]
                    models[family] = fitted_from_row({**row.to_dict(), "family": family})
                coded = code_values(
                    values, models, kind=kind, n_batches=n_batches, grid_name=grid_name,
                    accountings=accountings, scalings=scalings, coders=coders,
                    general_purpose=general_purpose, verify=verify,
                )  # fmt: skip
                head = {"model": model, "run": run, "epoch": dump.epoch, "kind": kind,
                        "tensor": name}  # fmt: skip
                rows += [{**head, **r} for r in coded]
        log.info("coded epoch %d of %s run %d", dump.epoch, model, run)
    return coding_table(rows)


def merge_streamed(
    coded: pd.DataFrame,
    streamed: pd.DataFrame,
    *,
    kinds: Sequence[str],
    source: str = "",
    counted: Collection[str] | None = None,
) -> pd.DataFrame:
    """``coded`` (from the dumps) and the rows of ``streamed`` (the training job's
    ``coded_all.tsv``) of every (epoch, kind, tensor) that ``coded`` lacks.

    ValueError naming ``source`` when the two tables' coders, scalings or accountings
    differ, or ``streamed`` misses an epoch or kind that ``coded`` has. ``counted``: the
    coders that ``streamed`` has for every tensor (those coded from the counts); the
    others it may lack (no tensor sampled, ``lossless.coding.sample``); None: all.
    """
    streamed = streamed[streamed["kind"].isin(list(kinds))]
    where = f" ({source})" if source else ""
    for column in ("coder", "scaling", "accounting", "epoch", "kind"):
        ours, theirs = set(coded[column]), set(streamed[column])
        differ = ours ^ theirs if column in ("coder", "scaling", "accounting") else ours - theirs
        if column == "coder" and counted is not None:
            differ = (theirs - ours) | ((ours - theirs) & set(counted))
        if not coded.empty and differ:
            raise ValueError(
                f"streamed coding rows{where} and the dumps' coding differ in {column} "
                f"{sorted(map(str, differ))}; rerun the training job with these "
                "lossless.coding settings"
            )
    key = ["epoch", "kind", "tensor"]
    have = pd.MultiIndex.from_frame(coded[key]) if not coded.empty else None
    missing = streamed if have is None else streamed[~streamed.set_index(key).index.isin(have)]
    order = {name: i for i, name in enumerate(dict.fromkeys(streamed["tensor"]))}
    merged = pd.concat([coded, missing[list(CODING_COLUMNS)]], ignore_index=True)
    rank = merged["tensor"].map(order).fillna(-1)
    return (
        merged.assign(_rank=rank)
        .sort_values(["epoch", "kind", "_rank"], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )


def code_lossless(
    dump_paths: Sequence[Path],
    fits_tsv: Path,
    out_tsv: Path,
    *,
    streamed_tsv: Path | None = None,
    **kwargs,
) -> pd.DataFrame:
    """The ``code_lossless`` stage: :func:`code_run` on one run's dumps and fit table, written
    to ``out_tsv`` (TSV, atomically). ``kwargs`` are :func:`code_run`'s keywords.

    ``streamed_tsv``: the training job's ``coded_all.tsv`` (:mod:`gradcomp.lossless.stream`,
    when ``lossless.coding.stream`` is on); its rows of the tensors without a dump are added
    (:func:`merge_streamed`), so that the table covers the whole model. A header-only file
    (a job that did not stream) adds nothing."""
    table = code_run(dump_paths, pd.read_csv(fits_tsv, sep="\t"), **kwargs)
    streamed = None if streamed_tsv is None else pd.read_csv(streamed_tsv, sep="\t")
    if streamed is not None and not streamed.empty:  # empty: the job did not stream
        kinds = kwargs.get("kinds", ("epoch_avg",))
        specs = kwargs.get("coders") or builtin_specs(kwargs["families"]).values()
        counted = [s.name for s in specs if is_counted(s.cls)]
        table = merge_streamed(
            table, streamed, kinds=kinds, source=str(streamed_tsv), counted=counted
        )
    write_tsv(out_tsv, table)
    return table
