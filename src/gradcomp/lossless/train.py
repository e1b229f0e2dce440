"""Paper L's training with per-epoch gradient dumps, resumable and bitwise reproducible.

:func:`train_with_dumps` trains one model on CIFAR-10 with plain SGD and, at
the end of every epoch, writes a :mod:`gradcomp.lossless.dumps` file and a checkpoint
to an undeclared state folder. A rerun with the same settings resumes from the
last checkpoint; the random streams (shuffling, augmentation, dropout) are
part of the checkpoint, so a resumed run writes the same bytes as an
uninterrupted one.

Loss reduction (:attr:`TrainSettings.loss_reduction`): ``"sum"``, the default, is what
the authors' TensorFlow code differentiates (a per-image loss vector, which
``tape.gradient`` sums): the SGD step and the dumped gradients are those of the batch
*sum* of the cross-entropy, ``batch_size`` times the mean-loss gradient (the number of
images of the batch for a smaller last batch), so the step is ``lr * batch_size`` on the
mean loss (0.64 at lr 0.01, batch 64). ``"mean"`` differentiates the batch mean.

Whole-model coding (``stream``, :mod:`gradcomp.lossless.stream`): the epoch's gradients of
every trainable tensor are fitted and coded at the end of the epoch, before its checkpoint,
and only the coding rows are kept (``coded_path``); the dumps hold ``dump_tensors`` only.

A loss that is not finite stops the run with :class:`TrainingDivergedError`, naming the
model, run, epoch and batch; no dump of that epoch is written.

Speed on CPU: the data stay uint8 tensors in memory, batches are converted
and augmented as whole tensors, the model and batches are ``channels_last``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from gradcomp.artifacts import atomic_torch_save, write_tsv
from gradcomp.data import Cifar10, test_draw
from gradcomp.lossless.dumps import DUMP_KINDS, write_dump
from gradcomp.lossless.stream import GradientStreamer, StreamSettings, write_streamed
from gradcomp.models import build_model
from gradcomp.training import EVAL_BATCH_SIZE, evaluate, resolve_device, train_epoch

log = logging.getLogger(__name__)

LOSS_REDUCTIONS = ("sum", "mean")

LOG_COLUMNS = (
    "epoch", "train_loss", "train_acc", "test_loss", "test_acc", "images_per_s", "seconds",
)  # fmt: skip


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides a run's numbers (and so its checkpoint's validity).

    ``dump_tensors``: ``fnmatch`` patterns over parameter names, ``["*"]``
    for every trainable tensor. ``loss_reduction``: ``"sum"`` (the authors') or
    ``"mean"`` over the batch's per-image cross-entropies, for the SGD step and the
    dumped gradients alike. ``test_images``: the per-epoch test evaluation uses a fixed
    draw of that many test images (None: all; :func:`gradcomp.data.test_draw` with seed 0,
    the same for every run). ``threads`` is part of it because CPU reductions may round
    differently with another thread count.
    """

    model: str
    seed: int
    epochs: int
    batch_size: int = 64
    lr: float = 0.01
    momentum: float = 0.0
    loss_reduction: str = "sum"
    augment: bool = True
    dump_tensors: tuple[str, ...] = ("*",)
    eval_batch_size: int = EVAL_BATCH_SIZE
    test_images: int | None = None
    threads: int = 1
    device: str = "cpu"
    #: a user's model class, ``package.module:Class`` (config ``user_models``; None: built-in)
    model_class: str | None = None

    def __post_init__(self) -> None:
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(
                f"loss_reduction {self.loss_reduction!r}: expected one of {LOSS_REDUCTIONS}"
            )

    def fingerprint(self, data: Cifar10) -> str:
        """Hash of the settings and the data sizes; a checkpoint resumes only on a match."""
        own = {k: v for k, v in asdict(self).items() if not (k == "model_class" and v is None)}
        blob = json.dumps(
            {**own, "n_train": len(data.train_labels), "n_test": len(data.test_labels)},
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


class TrainingDivergedError(FloatingPointError):
    """The training loss became NaN or infinite; the message names model, run, epoch, batch."""


def select_parameters(model: nn.Module, patterns: tuple[str, ...]) -> dict[str, nn.Parameter]:
    """Trainable parameters whose names match any pattern, in model order.

    Raises ValueError naming a pattern that matches nothing.
    """
    named = {n: p for n, p in model.named_parameters() if p.requires_grad}
    for pattern in patterns:
        if not fnmatch.filter(named, pattern):
            raise ValueError(
                f"dump pattern {pattern!r} matches no trainable tensor; "
                f"names look like {', '.join(list(named)[:6])}, ..."
            )
    return {n: p for n, p in named.items() if any(fnmatch.fnmatchcase(n, q) for q in patterns)}


@dataclass
class GradientAccumulator:
    """Running float64 sum of minibatch gradients and the last one, per parameter."""

    params: dict[str, nn.Parameter]
    sums: dict[str, torch.Tensor] = field(init=False)
    n_batches: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.sums = {n: torch.zeros_like(p, dtype=torch.float64) for n, p in self.params.items()}

    def add(self) -> None:
        """Add the gradients now in ``.grad`` (call after ``backward``)."""
        for name, p in self.params.items():
            self.sums[name].add_(cast(torch.Tensor, p.grad))  # set by backward
        self.n_batches += 1

    def result(self) -> dict[str, dict[str, torch.Tensor]]:
        """``{"epoch_avg": ..., "last_batch": ...}`` as float32 tensors (standard layout)."""
        avg = {n: (s / self.n_batches).float().contiguous() for n, s in self.sums.items()}
        last = {
            n: cast(torch.Tensor, p.grad).detach().float().contiguous()
            for n, p in self.params.items()
        }
        return dict(zip(DUMP_KINDS, (avg, last), strict=True))


def divergence_check(
    settings: TrainSettings, epoch: int
) -> Callable[[torch.Tensor, int, int], None]:
    """A ``check_loss`` for :func:`gradcomp.training.train_epoch` that raises
    :class:`TrainingDivergedError` at the first batch whose loss is not finite, before that
    batch's step."""

    def check(loss: torch.Tensor, batch: int, images: int) -> None:
        if not torch.isfinite(loss):
            raise TrainingDivergedError(
                f"{settings.model} run{settings.seed} epoch{epoch} batch{batch}: the training "
                f"loss ({settings.loss_reduction} over {images} images) is {loss.item()}; "
                f"lower lossless.lr ({settings.lr}) or set lossless.loss_reduction: mean"
            )

    return check


@dataclass
class _Run:
    """One run while it trains: what its epochs read and advance (model, optimizer, the
    shuffling and augmentation stream), where its checkpoint and per-epoch files go."""

    settings: TrainSettings
    data: Cifar10
    device: torch.device
    model: nn.Module
    optimizer: torch.optim.Optimizer
    generator: torch.Generator
    state_dir: Path
    fingerprint: str
    ckpt_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.ckpt_path = self.state_dir / "checkpoint.pt"

    def resume(self) -> tuple[list[dict[str, float]], int]:
        """(history, first epoch to train): the checkpoint's, its model, optimizer and random
        streams restored, when it was written with this run's fingerprint; else ([], 1)."""
        if not self.ckpt_path.exists():
            return [], 1
        ckpt = torch.load(self.ckpt_path, weights_only=False, map_location=self.device)
        if ckpt["fingerprint"] != self.fingerprint:
            log.warning(
                "ignoring checkpoint %s: it was written with other settings", self.ckpt_path
            )
            return [], 1
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.generator.set_state(ckpt["generator"])
        torch.set_rng_state(ckpt["torch_rng"])
        if self.device.type == "cuda":
            torch.cuda.set_rng_state(ckpt["cuda_rng"])
        log.info("resuming %s seed %d from %s after epoch %d", self.settings.model,
                 self.settings.seed, self.ckpt_path, ckpt["epoch"])  # fmt: skip
        return ckpt["history"], ckpt["epoch"] + 1

    def save(self, epoch: int, history: list[dict[str, float]]) -> None:
        """The checkpoint after ``epoch``: weights, optimizer, random streams, history."""
        cuda = self.device.type == "cuda"
        atomic_torch_save(
            {
                "fingerprint": self.fingerprint,
                "epoch": epoch,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state(),
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state() if cuda else None,
                "history": history,
            },
            self.ckpt_path,
        )

    def epoch(self, epoch: int, accumulated: dict[str, nn.Parameter], tests: tuple) -> tuple:
        """Train and evaluate ``epoch`` (``tests``: the test images and labels): its
        gradients (:meth:`GradientAccumulator.result`), its number of batches and its log
        row without ``seconds``."""
        settings, t0 = self.settings, time.perf_counter()
        accumulator = GradientAccumulator(accumulated)
        totals = train_epoch(
            self.model, self.optimizer, self.data.train_images, self.data.train_labels,
            batch_size=settings.batch_size, generator=self.generator, device=self.device,
            augment=settings.augment, reduction=settings.loss_reduction,
            check_loss=divergence_check(settings, epoch), after_backward=accumulator.add,
        )  # fmt: skip
        train_seconds = time.perf_counter() - t0
        test_loss, test_acc = evaluate(self.model, *tests, batch_size=settings.eval_batch_size,
                                       device=self.device)  # fmt: skip
        row = {"epoch": epoch, "train_loss": totals.mean_loss, "train_acc": totals.accuracy,
               "test_loss": test_loss, "test_acc": test_acc,
               "images_per_s": totals.images / train_seconds}  # fmt: skip
        return accumulator.result(), accumulator.n_batches, row

    def write_dump(self, epoch: int, gradients: dict, n_batches: int, params: dict,
                   extra_metadata: dict[str, object] | None) -> None:  # fmt: skip
        """Epoch ``epoch``'s dump of the tensors of ``params`` into the state folder."""
        settings, n_train = self.settings, len(self.data.train_labels)
        write_dump(
            self.state_dir / f"epoch{epoch}.safetensors",
            {kind: {n: t[n] for n in params} for kind, t in gradients.items()},
            {
                "model": settings.model,
                "seed": settings.seed,
                "epoch": epoch,
                "n_batches": n_batches,
                "batch_size": settings.batch_size,
                "last_batch_size": n_train - (n_batches - 1) * settings.batch_size,
                "loss_reduction": settings.loss_reduction,
                "n_train": n_train,
                **(extra_metadata or {}),
            },
        )


def _code_epoch(streamer: GradientStreamer, epoch: int, gradients: dict, n_batches: int,
                state_dir: Path) -> None:  # fmt: skip
    """Code every tensor of the epoch's gradients in the training job (whole-model coding)."""
    t1 = time.perf_counter()
    coded = streamer.code(gradients, epoch=epoch, n_batches=n_batches)
    write_tsv(state_dir / f"epoch{epoch}.coded.tsv", coded)
    log.info("epoch %d: coded %d tensors in the training job in %.1f s", epoch,
             coded["tensor"].nunique(), time.perf_counter() - t1)  # fmt: skip


def _log_epoch(row: dict[str, float], epochs: int) -> None:
    log.info(
        "epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f images/s  %.1f s",
        row["epoch"], epochs, row["train_loss"], row["train_acc"], row["test_loss"],
        row["test_acc"], row["images_per_s"], row["seconds"],
    )  # fmt: skip


def train_with_dumps(
    data: Cifar10,
    settings: TrainSettings,
    *,
    dump_paths: list[Path],
    log_path: Path,
    state_dir: Path,
    extra_metadata: dict[str, object] | None = None,
    stream: StreamSettings | None = None,
    coded_path: Path | None = None,
) -> list[dict[str, float]]:
    """Train ``settings.epochs`` epochs and write one dump per epoch.

    ``dump_paths[e - 1]`` receives epoch ``e``'s dump; ``log_path`` a TSV of
    :data:`LOG_COLUMNS`; ``state_dir`` (not a declared output) keeps the
    checkpoint and the dumps written so far, so that a rerun resumes. Returns
    the per-epoch log rows.

    ``stream``: also code every trainable tensor of every epoch
    (:class:`~gradcomp.lossless.stream.GradientStreamer`, ``settings.threads`` processes)
    into ``coded_path`` (TSV, the columns of ``coding.tsv``); without it, ``coded_path``
    (if given) receives the header only.
    """
    if len(dump_paths) != settings.epochs:
        raise ValueError(f"{len(dump_paths)} dump paths for {settings.epochs} epochs")
    if stream is not None and coded_path is None:
        raise ValueError("stream settings given without a coded_path for the coded rows")
    torch.set_num_threads(settings.threads)
    device = resolve_device(settings.device)
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = settings.fingerprint(data) + (f"-{stream.fingerprint()}" if stream else "")
    model = build_model(settings.model, seed=settings.seed, model_class=settings.model_class)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=settings.lr, momentum=settings.momentum)
    run = _Run(settings, data, device, model, optimizer,
               torch.Generator().manual_seed(settings.seed), state_dir, fingerprint)  # fmt: skip
    params = select_parameters(model, settings.dump_tensors)
    # streaming accumulates every trainable tensor; the dump keeps those of `params`
    accumulated = select_parameters(model, ("*",)) if stream else params
    history, start_epoch = run.resume()
    tests = test_draw(data, settings.test_images, 0, key="lossless.test_images")
    log.info(
        "training %s (seed %d) on %s: %d train / %d test images, %d epochs, %d dumped tensors",
        settings.model, settings.seed, device, len(data.train_labels), len(tests[1]),
        settings.epochs, len(params),
    )  # fmt: skip
    streamer = (
        GradientStreamer(stream, model=settings.model, run=settings.seed, workers=settings.threads)
        if stream is not None and start_epoch <= settings.epochs
        else None
    )
    with streamer or contextlib.nullcontext():
        for epoch in range(start_epoch, settings.epochs + 1):
            t0 = time.perf_counter()
            gradients, n_batches, row = run.epoch(epoch, accumulated, tests)
            if streamer is not None:
                _code_epoch(streamer, epoch, gradients, n_batches, state_dir)
            run.write_dump(epoch, gradients, n_batches, params, extra_metadata)
            history.append({**row, "seconds": time.perf_counter() - t0})
            run.save(epoch, history)
            _log_epoch(history[-1], settings.epochs)
    _write_outputs(settings, state_dir, dump_paths, coded_path, stream, history, log_path)
    return history


def _write_outputs(settings: TrainSettings, state_dir: Path, dump_paths: list[Path],
                   coded_path: Path | None, stream: StreamSettings | None,
                   history: list[dict[str, float]], log_path: Path) -> None:  # fmt: skip
    """Copy the dumps from the state folder to their declared paths; write the coded rows
    and the log."""
    for epoch, path in enumerate(dump_paths, start=1):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(state_dir / f"epoch{epoch}.safetensors", path)
    if coded_path is not None:
        epochs = range(1, settings.epochs + 1) if stream is not None else ()
        write_streamed(coded_path, [state_dir / f"epoch{e}.coded.tsv" for e in epochs])
    write_tsv(log_path, history, LOG_COLUMNS)


def train_lossless(
    data_path: Path,
    settings: dict[str, Any],
    *,
    dump_paths: list[Path],
    log_path: Path,
    state_dir: Path,
    threads: int = 1,
    device: str = "cpu",
    coded_path: Path | None = None,
) -> list[dict[str, float]]:
    """The ``train_lossless`` stage: load the cached data, train with dumps (see
    :func:`train_with_dumps`). ``settings`` are :class:`TrainSettings` keywords other than
    ``threads`` and ``device``, which say where the job runs, plus ``stream``: None or
    :class:`~gradcomp.lossless.stream.StreamSettings` keywords (then ``coded_path`` gets
    the coding rows of every tensor)."""
    from gradcomp.data import load_cifar10

    data = load_cifar10(Path(data_path))
    settings = dict(settings)
    stream = settings.pop("stream", None)
    full = {**settings, "dump_tensors": tuple(settings.get("dump_tensors", ("*",)))}
    return train_with_dumps(
        data,
        TrainSettings(**full, threads=int(threads), device=device),
        dump_paths=[Path(p) for p in dump_paths],
        log_path=Path(log_path),
        state_dir=Path(state_dir),
        extra_metadata={"data_source": data.source},
        stream=None if stream is None else StreamSettings.from_params(stream),
        coded_path=None if coded_path is None else Path(coded_path),
    )
