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
    ckpt_path = state_dir / "checkpoint.pt"
    fingerprint = settings.fingerprint(data) + (f"-{stream.fingerprint()}" if stream else "")

    model = build_model(settings.model, seed=settings.seed, model_class=settings.model_class)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=settings.lr, momentum=settings.momentum)
    generator = torch.Generator().manual_seed(settings.seed)
    params = select_parameters(model, settings.dump_tensors)
    # streaming accumulates every trainable tensor; the dump keeps those of `params`
    accumulated = select_parameters(model, ("*",)) if stream else params
    history: list[dict[str, float]] = []
    start_epoch = 1

    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, weights_only=False, map_location=device)
        if ckpt["fingerprint"] == fingerprint:
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            generator.set_state(ckpt["generator"])
            torch.set_rng_state(ckpt["torch_rng"])
            if device.type == "cuda":
                torch.cuda.set_rng_state(ckpt["cuda_rng"])
            history = ckpt["history"]
            start_epoch = ckpt["epoch"] + 1
            log.info(
                "resuming %s seed %d from %s after epoch %d",
                settings.model,
                settings.seed,
                ckpt_path,
                ckpt["epoch"],
            )
        else:
            log.warning("ignoring checkpoint %s: it was written with other settings", ckpt_path)
    test_images, test_labels = test_draw(data, settings.test_images, 0, key="lossless.test_images")
    log.info(
        "training %s (seed %d) on %s: %d train / %d test images, %d epochs, %d dumped tensors",
        settings.model,
        settings.seed,
        device,
        len(data.train_labels),
        len(test_labels),
        settings.epochs,
        len(params),
    )

    streamer = (
        GradientStreamer(stream, model=settings.model, run=settings.seed, workers=settings.threads)
        if stream is not None and start_epoch <= settings.epochs
        else None
    )
    with streamer or contextlib.nullcontext():
        for epoch in range(start_epoch, settings.epochs + 1):
            t0 = time.perf_counter()
            accumulator = GradientAccumulator(accumulated)
            totals = train_epoch(
                model,
                optimizer,
                data.train_images,
                data.train_labels,
                batch_size=settings.batch_size,
                generator=generator,
                device=device,
                augment=settings.augment,
                reduction=settings.loss_reduction,
                check_loss=divergence_check(settings, epoch),
                after_backward=accumulator.add,
            )
            train_loss, train_acc = totals.mean_loss, totals.accuracy
            train_seconds = time.perf_counter() - t0
            test_loss, test_acc = evaluate(
                model,
                test_images,
                test_labels,
                batch_size=settings.eval_batch_size,
                device=device,
            )
            gradients = accumulator.result()
            if streamer is not None:
                t1 = time.perf_counter()
                coded = streamer.code(gradients, epoch=epoch, n_batches=accumulator.n_batches)
                write_tsv(state_dir / f"epoch{epoch}.coded.tsv", coded)
                log.info(
                    "epoch %d: coded %d tensors in the training job in %.1f s",
                    epoch,
                    coded["tensor"].nunique(),
                    time.perf_counter() - t1,
                )
            write_dump(
                state_dir / f"epoch{epoch}.safetensors",
                {kind: {n: t[n] for n in params} for kind, t in gradients.items()},
                {
                    "model": settings.model,
                    "seed": settings.seed,
                    "epoch": epoch,
                    "n_batches": accumulator.n_batches,
                    "batch_size": settings.batch_size,
                    "last_batch_size": len(data.train_labels)
                    - (accumulator.n_batches - 1) * settings.batch_size,
                    "loss_reduction": settings.loss_reduction,
                    "n_train": len(data.train_labels),
                    **(extra_metadata or {}),
                },
            )
            row = {
                "epoch": epoch,
                "train_loss": train_loss,
                "train_acc": train_acc,
                "test_loss": test_loss,
                "test_acc": test_acc,
                "images_per_s": totals.images / train_seconds,
                "seconds": time.perf_counter() - t0,
            }
            history.append(row)
            atomic_torch_save(
                {
                    "fingerprint": fingerprint,
                    "epoch": epoch,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "generator": generator.get_state(),
                    "torch_rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state() if device.type == "cuda" else None,
                    "history": history,
                },
                ckpt_path,
            )
            log.info(
                "epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  "
                "%.0f images/s  %.1f s",
                epoch,
                settings.epochs,
                train_loss,
                train_acc,
                test_loss,
                test_acc,
                row["images_per_s"],
                row["seconds"],
            )

    for epoch, path in enumerate(dump_paths, start=1):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(state_dir / f"epoch{epoch}.safetensors", path)
    if coded_path is not None:
        epochs = range(1, settings.epochs + 1) if stream is not None else ()
        write_streamed(coded_path, [state_dir / f"epoch{e}.coded.tsv" for e in epochs])
    write_tsv(log_path, history, LOG_COLUMNS)
    return history


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
