"""Paper L's fit table: every dumped tensor, epoch and dump kind against every family.

:func:`fit_run` reads one training run's dumps and returns one row per
(epoch, kind, tensor, family) with the fitted parameters and the goodness of
fit of :func:`gradcomp.distributions.goodness_of_fit`. Tensors with fewer
than ``min_entries`` entries (biases, BatchNorm) are skipped: a fit on a few
dozen entries says little about a law's tails.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gradcomp.artifacts import write_text
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
    *PARAM_COLUMNS, "loglik", "loglik_per_entry", "aic", "bic", "ks", "w2", "tail_log10_err",
    *(f"tail_err_{level:g}" for level in TAIL_LEVELS),
)  # fmt: skip


def fitted_from_row(row: pd.Series | dict) -> FittedDistribution:
    """Rebuild a :class:`FittedDistribution` from a row of the fit table."""
    params = {k: float(row[k]) for k in PARAM_COLUMNS if not _missing(row.get(k))}
    return FittedDistribution(row["family"], params, int(row["numel"]), float(row["loglik"]))


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fit_tensor(
    values, *, families: Sequence[str], floc: float | None, label: str, seed: int = 0
) -> list[dict[str, float]]:
    """One row per family for one tensor: parameters, log-likelihood and goodness of fit."""
    values = check_gradient(values, label)  # float64 once, shared by every fit and metric
    rows = []
    for family, fitted in fit_all(values, families, floc=floc, label=label).items():
        rows.append(
            {
                "family": family,
                **{k: fitted.params.get(k, math.nan) for k in PARAM_COLUMNS},
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
    min_entries: int,
    kinds: Sequence[str] = ("epoch_avg", "last_batch"),
    seed: int = 0,
) -> pd.DataFrame:
    """The fit table (columns :data:`FIT_COLUMNS`) of one training run's dumps.

    Raises :class:`GradientDataError` naming the model, run, epoch, kind and
    tensor when a tensor cannot be fitted (NaN, inf, all zero, constant).
    """
    rows = []
    for path in dump_paths:
        dump = read_dump(path)
        for kind in kinds:
            for name, tensor in dump.tensors[kind].items():
                if tensor.numel() < min_entries:
                    continue
                label = f"{model} run{run} epoch{dump.epoch} {kind} {name}"
                try:
                    fits = fit_tensor(tensor, families=families, floc=floc, label=label, seed=seed)
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
    write_text(out_tsv, table.to_csv(sep="\t", index=False))
    return table
