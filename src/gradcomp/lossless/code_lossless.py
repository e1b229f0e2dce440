"""Paper L's lossless-coding study: bits per entry of every coder on every dumped tensor.

For one tensor the entries are quantized on a fixed grid (FP8 E5M2 by
default, the raw gradient values as paper L does) and coded by

- ``huffman_<family>``: a Huffman code designed from the *fitted model's*
  magnitude-bin probabilities (differences of the fitted cdf at the bin
  edges; the fitted share of exact zeros ``p0`` sits in the zero bin),
  charged on the data's actual magnitudes, plus one sign bit per
  non-zero entry; side information: the model parameters and ``p0`` when
  positive (32 bits each), from which the decoder rebuilds the same code;
- ``huffman_empirical``: Huffman designed on the data's own magnitude pmf;
  side information: the code table;
- ``entropy``: the ideal code length of the empirical magnitude pmf plus the
  sign bits (no side information): the floor for any i.i.d. magnitude coder;
- ``xent_<family>``: the ideal code length with the model pmf (cross-entropy),
  what an ideal arithmetic coder driven by the model would spend;
- ``ans_gennorm``: a real ANS bitstream (constriction) driven by the GenNorm
  model, the practical entropy-coder reference;
- ``lz78`` and ``zlib`` / ``bz2`` / ``lzma`` / ``zstd``: the 8-bit FP8 byte
  string of the entries, as paper L's baseline and a practitioner's first try;
- ``fp8``: the byte string itself (8 bits per entry).

Every model pmf is floored on the *whole* alphabet (not only the symbols that
occur), so the code depends on the model parameters alone and a decoder can
rebuild it.

The ``slip`` accounting reproduces the authors' code: the epoch average is
divided by ``n_batches - 1`` instead of ``n_batches`` (values and fitted loc
and scale scaled by ``n/(n-1)``) and one sign bit is charged per codebook
symbol instead of one per non-zero entry.

FP8 is not scale-invariant (E5M2 normals start at 2**-14, subnormals at 2**-16, the
largest value is 57344), so every row records the share of entries the grid rounds to
zero (``zero_share``, exact zeros included; ``n_exact_zero`` of them were zero already)
and the share that saturate (``saturated_share``). The ``scaling`` dimension says how
the entries meet the grid: ``none`` quantizes the raw gradient (paper L); ``amax`` first
multiplies the tensor by the power of two ``2**scale_exponent`` that puts its largest
magnitude in the grid's top binade (as FP8 training recipes do), the exponent being
:data:`EXPONENT_BITS` bits of side information charged to every coder.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gradcomp.artifacts import write_tsv
from gradcomp.coding import (
    HuffmanCode,
    ans_bits,
    cross_entropy_bits,
    entropy_bits,
    general_purpose_bits,
    lz78_bits,
)
from gradcomp.coding.pmf import empirical_pmf, floor_and_renormalise, model_magnitude_pmf
from gradcomp.distributions import FittedDistribution
from gradcomp.lossless.dumps import read_dump
from gradcomp.lossless.fit_lossless import fitted_from_row
from gradcomp.quantization.grids import GridQuantizer, amax_exponent, get_grid

log = logging.getLogger(__name__)

PARAM_BITS = 32
EXPONENT_BITS = 8
PMF_FLOOR = 1e-12
CODING_COLUMNS = (
    "model", "run", "epoch", "kind", "tensor", "numel", "grid", "scaling", "scale_exponent",
    "accounting", "coder", "payload_bits", "side_bits", "total_bits", "bits_per_entry",
    "ratio_to_8bit", "n_saturated", "n_nonzero", "n_exact_zero", "zero_share",
    "saturated_share",
)  # fmt: skip
ACCOUNTINGS = ("exact", "slip")
SCALINGS = ("none", "amax")


def fp8_bytes(values: np.ndarray, grid: GridQuantizer) -> bytes:
    """The 8-bit codes of quantized values (E5M2 bit patterns for the FP8 grid).

    ``values`` are in data units (levels of ``grid``); the bytes are those of
    ``values / grid.scale``, the values in grid units. For grids other than ``fp8_e5m2``
    the signed symbol index is the code.
    """
    if grid.name == "fp8_e5m2":
        unit = np.asarray(values, dtype=np.float64) / grid.scale
        codes = torch.from_numpy(np.ascontiguousarray(unit, dtype=np.float32))
        return codes.to(torch.float8_e5m2).view(torch.uint8).numpy().tobytes()
    symbols, _ = grid.encode(values)
    if grid.n_levels > 256:
        raise ValueError(f"grid {grid.name} has {grid.n_levels} levels: not a byte code")
    return symbols.astype(np.uint8).tobytes()


def model_code(fitted: FittedDistribution, grid: GridQuantizer) -> tuple[HuffmanCode, np.ndarray]:
    """Huffman code (and the floored pmf it was built from) of the model's magnitude bins;
    the mixture's cdf puts the atom ``p0`` in the zero bin."""
    pmf = model_magnitude_pmf(fitted.cdf, grid.magnitude_edges, sf=fitted.sf)
    pmf = floor_and_renormalise(pmf, PMF_FLOOR)
    return HuffmanCode.from_pmf(pmf), pmf


def code_tensor(
    values: np.ndarray,
    fits: dict[str, FittedDistribution],
    grid: GridQuantizer,
    *,
    slip: bool = False,
    general_purpose: bool = True,
) -> list[dict[str, float]]:
    """Bits of every coder on one tensor's entries (flat float array, data units).

    ``fits`` maps family name to the tensor's fit. Returns one dict per coder
    with ``coder``, ``payload_bits``, ``side_bits``, ``n_saturated`` (entries beyond the
    grid's extreme levels), ``n_nonzero`` (entries on a non-zero level), ``n_exact_zero``,
    ``zero_share`` (share on the zero level, exact zeros included) and ``saturated_share``.
    """
    symbols, n_saturated = grid.encode(values)
    mags, signs = grid.signed_to_magnitude(symbols)
    mags = mags.ravel()
    n_nonzero = int(signs.size)
    sign_bits = grid.n_magnitudes if slip else n_nonzero
    counts, p_data = empirical_pmf(mags, grid.n_magnitudes)
    rows = []

    def add(coder: str, payload: float, side: float) -> None:
        rows.append({"coder": coder, "payload_bits": payload, "side_bits": side})

    for family, fitted in fits.items():
        code, q = model_code(fitted, grid)
        side = PARAM_BITS * (len(fitted.params) + (fitted.p0 > 0))
        add(f"huffman_{family}", code.bit_length(mags) + sign_bits, side)
        add(f"xent_{family}", mags.size * cross_entropy_bits(p_data, q) + sign_bits, side)
        if family == "gennorm":
            add("ans_gennorm", ans_bits(mags, q) + sign_bits, side)
    empirical = HuffmanCode.from_pmf(counts)
    add("huffman_empirical", empirical.bit_length(mags) + sign_bits, empirical.side_info_bits())
    add("entropy", mags.size * entropy_bits(p_data) + sign_bits, 0)
    data = fp8_bytes(grid.decode(symbols), grid)
    add("fp8", 8 * len(data), 0)
    add("lz78", lz78_bits(data), 0)
    if general_purpose:
        for name, bits in general_purpose_bits(data).items():
            add(name, bits, 0)
    counts_and_shares = {
        "n_saturated": n_saturated,
        "n_nonzero": n_nonzero,
        "n_exact_zero": int(np.count_nonzero(values == 0)),
        "zero_share": 1.0 - n_nonzero / values.size,
        "saturated_share": n_saturated / values.size,
    }
    for row in rows:
        row.update(counts_and_shares)
    return rows


def _scaled(fitted: FittedDistribution, factor: float) -> FittedDistribution:
    params = dict(fitted.params)
    for key in ("loc", "scale"):
        params[key] = params[key] * factor
    return FittedDistribution(fitted.family, params, fitted.n, math.nan, fitted.fixed, fitted.p0)


def scaled_grid(values: np.ndarray, grid_name: str, scaling: str) -> tuple[GridQuantizer, int]:
    """The grid the entries ``values`` (data units) are quantized on, and its exponent ``k``.

    ``none``: the named grid as it is (``k = 0``); ``amax``: the grid in data units
    ``2**-k`` times the unit grid, with ``k`` from :func:`amax_exponent` on the largest
    magnitude of ``values`` (it must fit :data:`EXPONENT_BITS` signed bits).
    """
    if scaling == "none":
        return get_grid(grid_name), 0
    if scaling != "amax":
        raise ValueError(f"unknown scaling {scaling!r}; expected one of {SCALINGS}")
    unit = get_grid(grid_name)
    k = amax_exponent(float(np.max(np.abs(values))), float(unit.levels[-1]))
    if not -(2 ** (EXPONENT_BITS - 1)) <= k < 2 ** (EXPONENT_BITS - 1):
        raise ValueError(f"scale exponent {k} does not fit {EXPONENT_BITS} signed bits")
    return get_grid(grid_name, scale=2.0**-k), k


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
    general_purpose: bool = True,
) -> pd.DataFrame:
    """The coding table (columns :data:`CODING_COLUMNS`) of one run: one row per
    (epoch, kind, tensor, scaling, accounting, coder).

    ``fits`` is the run's fit table (:func:`gradcomp.lossless.fit_lossless.fit_run`):
    only tensors it has rows for are coded, with the fitted ``families``. ``scalings``:
    of :data:`SCALINGS` (see :func:`scaled_grid`).
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
                values = dump.tensors[kind][name].numpy().astype(np.float64).ravel()
                models = {}
                for family in families:
                    row = index.loc[(dump.epoch, kind, name, family)]
                    models[family] = fitted_from_row({**row.to_dict(), "family": family})
                for scaling, accounting in itertools.product(scalings, accountings):
                    slip = accounting == "slip"
                    factor = (
                        n_batches / (n_batches - 1)
                        if slip and kind == "epoch_avg" and n_batches > 1
                        else 1.0
                    )
                    grid, k = scaled_grid(values * factor, grid_name, scaling)
                    coded = code_tensor(
                        values * factor,
                        {f: _scaled(m, factor) for f, m in models.items()},
                        grid,
                        slip=slip,
                        general_purpose=general_purpose,
                    )
                    side = EXPONENT_BITS if scaling != "none" else 0
                    head = {"model": model, "run": run, "epoch": dump.epoch, "kind": kind,
                            "tensor": name, "numel": values.size, "grid": grid_name,
                            "scaling": scaling, "scale_exponent": k,
                            "accounting": accounting}  # fmt: skip
                    rows += [{**head, **r, "side_bits": r["side_bits"] + side} for r in coded]
        log.info("coded epoch %d of %s run %d", dump.epoch, model, run)
    table = pd.DataFrame(rows)
    table["total_bits"] = table["payload_bits"] + table["side_bits"]
    table["bits_per_entry"] = table["total_bits"] / table["numel"]
    table["ratio_to_8bit"] = table["bits_per_entry"] / 8.0
    return table[list(CODING_COLUMNS)]


def code_lossless(
    dump_paths: Sequence[Path], fits_tsv: Path, out_tsv: Path, **kwargs
) -> pd.DataFrame:
    """The ``code_lossless`` stage: :func:`code_run` on one run's dumps and fit table, written
    to ``out_tsv`` (TSV, atomically). ``kwargs`` are :func:`code_run`'s keywords."""
    table = code_run(dump_paths, pd.read_csv(fits_tsv, sep="\t"), **kwargs)
    write_tsv(out_tsv, table)
    return table
