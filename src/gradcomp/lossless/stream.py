"""Whole-model coding inside the training job, for runs that dump only a few tensors.

A full dump of a paper-scale model is large (ResNet-50: ~190 MB per epoch and kind), so
``config/paper.yaml`` dumps only the tensors the figures show (``lossless.dump_tensors``).
T1 and L5's "all tensors" panel still need every trainable tensor, as the authors coded
them. With ``lossless.coding.stream`` on, the training job therefore fits and codes, at the
end of every epoch, every trainable tensor of at least ``lossless.fit.skip_below``
entries as ``fit_lossless`` and ``code_lossless`` would from a full dump (the same
families, ``floc``, zero atom, grid, scalings, accountings, on the same float32
gradients), and keeps only the coding rows (columns
:data:`~gradcomp.lossless.code_lossless.CODING_COLUMNS`; a few kB per epoch) in
``coded_all.tsv``. ``code_lossless`` then adds the rows of the tensors without a dump.

Every coder writes (and with ``verify`` decodes) its stream only for the tensors of
``lossless.coding.sample`` (:meth:`StreamSettings.sampled`); every other tensor gets the
rows of the coders and bounds whose size follows from the symbol counts
(:mod:`gradcomp.coding.counts`: Huffman, i.i.d. ANS, fp8, the entropies), from histograms
taken on the tensor's device (column ``length``: ``counts``).

``stream: auto`` (the default) streams a model exactly when ``dump_tensors`` restricts its
dumps (patterns given for it, none of them ``"*"``); ``true`` always, ``false`` never.

Cost (bench/bench_stream.py, docs/cluster.md): the fits and the per-tensor model pmfs and
Huffman codes, a few ms a tensor, and four histograms (two scalings x two accountings);
with ``workers > 1`` the tensors of an epoch are coded in that many processes (their
histograms then on the CPU).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from gradcomp.artifacts import write_tsv
from gradcomp.coding.base import as_rows
from gradcomp.coding.registry import CoderSpec, coder_specs
from gradcomp.distributions import GradientDataError, check_gradient, fit_all
from gradcomp.lossless.code_lossless import ACCOUNTINGS, CODING_COLUMNS, code_values, coding_table
from gradcomp.lossless.fit_lossless import fitted_from_row

__all__ = ["SAMPLE", "GradientStreamer", "StreamSettings", "write_streamed"]

#: The default sample: every coder's bitstream for one tensor (the model's first) of epoch 1;
#: the other rows from the counts.
SAMPLE: dict[str, Any] = {"tensors": 1, "epochs": (1,)}


@dataclass(frozen=True)
class StreamSettings:
    """What decides the streamed rows: the coding's ``families``, ``grid``, ``kinds``,
    ``accountings``, ``scalings``, ``general_purpose``, ``coders`` (checked specs; None:
    every built-in), ``verify`` and ``sample`` (``sample_tensors``, ``sample_epochs``:
    :meth:`sampled`), and the fit's ``floc``, ``zero_atom`` and ``skip_below`` (tensors with
    fewer entries are not coded, as they are not fitted)."""

    families: tuple[str, ...]
    grid: str = "fp8_e5m2"
    kinds: tuple[str, ...] = ("epoch_avg",)
    accountings: tuple[str, ...] = ACCOUNTINGS
    scalings: tuple[str, ...] = ("none",)
    general_purpose: bool = True
    coders: tuple[CoderSpec, ...] | None = None
    verify: bool = False
    floc: float | None = None
    zero_atom: bool = True
    skip_below: int = 256
    sample_tensors: int | None = SAMPLE["tensors"]
    sample_epochs: tuple[int, ...] | None = SAMPLE["epochs"]

    def __post_init__(self) -> None:
        for name in ("families", "kinds", "accountings", "scalings"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("coders", "sample_epochs"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.sample_tensors is not None and self.sample_tensors < 0:
            raise ValueError(f"sample_tensors: {self.sample_tensors} < 0")

    def sampled(self, epoch: int, n_tensors: int) -> set[int]:
        """Which of an epoch's ``n_tensors`` coded tensors (of one kind, in the model's
        order) get every coder's bitstream: ``sample_tensors`` of them spread evenly
        (the first and the last among them; None: all), in the ``sample_epochs`` (None:
        every epoch); the others are coded from their counts."""
        if self.sample_epochs is not None and epoch not in self.sample_epochs:
            return set()
        k = n_tensors if self.sample_tensors is None else min(self.sample_tensors, n_tensors)
        if k == 0:
            return set()
        return {round(i * (n_tensors - 1) / max(1, k - 1)) for i in range(k)}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> StreamSettings:
        """The settings of :meth:`as_params`'s keywords (coders not checked again)."""
        coders = params.get("coders")
        coders = None if coders is None else tuple(map(CoderSpec.trusted, coders))
        return cls(**{**params, "coders": coders})

    def as_params(self) -> dict[str, Any]:
        """Plain keywords (lists, dicts) that rebuild these settings: a workflow param."""
        coders = None if self.coders is None else [c.plain() for c in self.coders]
        plain = {f.name: getattr(self, f.name) for f in fields(self)}
        plain["coders"] = coders
        return json.loads(json.dumps(plain))

    def coder_specs(self) -> list[CoderSpec]:
        """The coders (every built-in for the families when ``coders`` is None)."""
        return coder_specs(None, self.families) if self.coders is None else list(self.coders)

    def fingerprint(self) -> str:
        """Hash of the settings; a checkpoint resumes only with the same streamed coding."""
        blob = json.dumps(self.as_params(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _one_thread() -> None:
    """Worker start: torch (FP8 bytes) on one thread, no OpenMP pool inherited from a fork."""
    import torch

    torch.set_num_threads(1)


def _code_one(job: tuple) -> list[dict[str, object]]:
    """Fit and code one tensor: the rows :func:`code_values` gives from a dump (every coder,
    or with ``streams`` false those of the counts, taken where ``tensor`` lives)."""
    settings, coders, label, kind, values, n_batches, streams, tensor = job
    try:
        fits = fit_all(
            check_gradient(values, label), settings.families, floc=settings.floc,
            label=label, zero_atom=settings.zero_atom,
        )  # fmt: skip
    except GradientDataError as err:
        raise GradientDataError(f"{err} (streamed coding)") from err
    # through a fit-table row, as code_lossless rebuilds its fits from fits.tsv
    models = {
        f: fitted_from_row(
            {**m.params, "family": f, "numel": values.size, "loglik": m.loglik, "p0": m.p0}
        )  # fmt: skip
        for f, m in fits.items()
    }
    rows_cols = as_rows(values.shape)
    if streams:
        coded = values.astype(np.float64).reshape(rows_cols)
    else:
        coded = torch.as_tensor(values if tensor is None else tensor).to(torch.float64)
        coded = coded.reshape(rows_cols)
    return code_values(
        coded, models, kind=kind, n_batches=n_batches, grid_name=settings.grid,
        accountings=settings.accountings, scalings=settings.scalings,
        coders=coders, general_purpose=settings.general_purpose,
        verify=settings.verify, streams=streams,
    )  # fmt: skip


class GradientStreamer:
    """Codes one epoch's gradients of every tensor (:meth:`code`); ``workers > 1`` codes
    the tensors in that many forked processes (a context manager closes them)."""

    def __init__(self, settings: StreamSettings, *, model: str, run: int, workers: int = 1):
        self.settings, self.model, self.run = settings, model, run
        self._coders = settings.coder_specs()
        self._pool: Executor | None = None
        if workers > 1:
            # fork, not spawn: a spawned worker re-runs the parent's __main__, which in a
            # Snakemake job is the training script itself; the workers never touch CUDA
            context = multiprocessing.get_context("fork")
            self._pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=context, initializer=_one_thread
            )

    def __enter__(self) -> GradientStreamer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes (if any)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def code(
        self, tensors: Mapping[str, Mapping[str, Any]], *, epoch: int, n_batches: int
    ) -> pd.DataFrame:
        """The coding table of one epoch: ``tensors[kind][name]`` (float32 torch tensors or
        arrays, the dump's values) of the settings' kinds, in the model's order."""
        jobs, heads = [], []
        for kind in self.settings.kinds:
            coded = {n: t for n, t in tensors[kind].items()
                     if int(np.prod(t.shape)) >= self.settings.skip_below}  # fmt: skip
            sampled = self.settings.sampled(epoch, len(coded))
            for i, (name, tensor) in enumerate(coded.items()):
                values = np.asarray(
                    tensor.detach().cpu().numpy() if hasattr(tensor, "detach") else tensor,
                    dtype=np.float32,
                )
                # the counts on the tensor's device, unless a worker process takes them
                on_device = tensor if self._pool is None and hasattr(tensor, "detach") else None
                label = f"{self.model} run{self.run} epoch{epoch} {kind} {name}"
                jobs.append((self.settings, self._coders, label, kind, values, n_batches,
                             i in sampled, on_device))  # fmt: skip
                heads.append({"model": self.model, "run": self.run, "epoch": epoch,
                              "kind": kind, "tensor": name})  # fmt: skip
        mapper = map if self._pool is None else self._pool.map
        rows = [
            {**head, **row} for head, coded in zip(heads, mapper(_code_one, jobs), strict=True)
            for row in coded
        ]  # fmt: skip
        return coding_table(rows)


def write_streamed(out: str | Path, paths: Sequence[str | Path]) -> pd.DataFrame:
    """Concatenate the per-epoch tables (TSV) ``paths`` into ``out`` (none: the header
    only, for a job that does not stream)."""
    tables = [pd.read_csv(p, sep="\t") for p in paths]
    table = pd.concat(tables, ignore_index=True) if tables else coding_table([])
    write_tsv(out, table, CODING_COLUMNS)
    return table
