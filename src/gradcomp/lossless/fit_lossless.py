"""Paper L's fit table: every dumped tensor, epoch and dump kind against every family.

:func:`fit_run` reads one training run's dumps and returns one row per
(epoch, kind, tensor, family) with the fitted parameters and the goodness of
fit of :func:`gradcomp.distributions.goodness_of_fit`. Tensors with fewer
than ``skip_below`` entries (biases, BatchNorm) are skipped: a fit on a few
dozen entries says little about a law's tails.

``p0`` is the share of exact zeros, a fitted parameter (the family is fitted to the
non-zero entries; see :mod:`gradcomp.distributions.fitting`); ``shape_at_bound`` flags a
shape that ended on :data:`gradcomp.distributions.SHAPE_BOUNDS` (also logged as a warning).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gradcomp.artifacts import write_tsv
from gradcomp.distributions import (
    TAIL_LEVELS,
    FittedDistribution,
    GradientDataError,
    check_gradient,
    fit_all,
    goodness_of_fit,
)
from gradcomp.lossless.dumps import read_dump

log = logging.getLogger(__name__)

PARAM_COLUMNS = ("beta", "c", "loc", "scale")
FIT_COLUMNS = (
    "model", "run", "epoch", "kind", "tensor", "numel", "family",
    *PARAM_COLUMNS, "p0", "shape_at_bound",
    "loglik", "loglik_per_entry", "aic", "bic", "ks", "w2", "tail_log10_err",
    *(f"tail_err_{level:g}" for level in TAIL_LEVELS),
)  # fmt: skip


def fitted_from_row(row: pd.Series | dict) -> FittedDistribution:
    """Rebuild a :class:`FittedDistribution` (with its ``p0``) from a row of the fit table."""
    params = {k: float(row[k]) for k in PARAM_COLUMNS if not _missing(row.get(k))}
    return FittedDistribution(
        row["family"], params, int(row["numel"]), float(row["loglik"]), p0=float(row["p0"])
    )


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fit_tensor(
    values,
    *,
    families: Sequence[str],
    floc: float | None,
    label: str,
    seed: int = 0,
    zero_atom: bool = True,
) -> list[dict[str, Any]]:
    """One row per family for one tensor: parameters, ``p0``, whether the shape ended on a
    bound (logged as a warning), log-likelihood and goodness of fit."""
    values = check_gradient(values, label)  # float64 once, shared by every fit and metric
    rows = []
    fits = fit_all(values, families, floc=floc, label=label, zero_atom=zero_atom)
    for family, fitted in fits.items():
        if fitted.shape_at_bound:
            log.warning(
                "%s: the %s fit ended on a shape bound (%s; p0 = %.3g): a degenerate fit",
                label, family, fitted.params, fitted.p0,
            )  # fmt: skip
        rows.append(
            {
                "family": family,
                **{k: fitted.params.get(k, math.nan) for k in PARAM_COLUMNS},
                "p0": fitted.p0,
                "shape_at_bound": fitted.shape_at_bound,
                "loglik": fitted.loglik,
                **goodness_of_fit(fitted, values, seed=seed),
            }
        )
    return rows


def fit_run(
    dump_paths: Sequence[Path],
    *,
    model: str,
    run: int,
    families: Sequence[str],
    floc: float | None,
    skip_below: int,
    kinds: Sequence[str] = ("epoch_avg", "last_batch"),
    seed: int = 0,
    zero_atom: bool = True,
) -> pd.DataFrame:
    """The fit table (columns :data:`FIT_COLUMNS`) of one training run's dumps.

    ``zero_atom``: model exact zeros as the atom ``p0`` (see :func:`fit_tensor`).

    Raises :class:`GradientDataError` naming the model, run, epoch, kind and
    tensor when a tensor cannot be fitted (NaN, inf, all zero, constant, or
    non-zero entries that are all equal).
    """
    rows = []
    for path in dump_paths:
        dump = read_dump(path)
        for kind in kinds:
            for name, tensor in dump.tensors[kind].items():
                if tensor.numel() < skip_below:
                    continue
                label = f"{model} run{run} epoch{dump.epoch} {kind} {name}"
                try:
                    fits = fit_tensor(
                        tensor, families=families, floc=floc, label=label, seed=seed,
                        zero_atom=zero_atom,
                    )  # fmt: skip
                except GradientDataError as err:
                    raise GradientDataError(f"{err} (dump {path})") from err
                head = {
                    "model": model,
                    "run": run,
                    "epoch": dump.epoch,
                    "kind": kind,
                    "tensor": name,
                    "numel": tensor.numel(),
                }
                rows += [{**head, **r} for r in fits]
        log.info("fitted epoch %d of %s run %d (%d rows so far)", dump.epoch, model, run, len(rows))
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS))


def fit_lossless(dump_paths: Sequence[Path], out_tsv: Path, **kwargs) -> pd.DataFrame:
    """The ``fit_lossless`` stage: :func:`fit_run` on one run's dumps, written to ``out_tsv``
    (TSV, atomically). ``kwargs`` are :func:`fit_run`'s keywords."""
    table = fit_run(dump_paths, **kwargs)
    write_tsv(out_tsv, table)
    return table
