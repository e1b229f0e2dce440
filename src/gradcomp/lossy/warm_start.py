"""A central warm start for paper Y's federation: the model the rounds start from.

Paper Y trains from scratch for 10 rounds of 3 local epochs on 50,000 images. At CPU scale a
few rounds from scratch leave the model near chance, and what a bit buys in the first hundred
steps need not be what it buys where training spends its rounds. :func:`pretrain` trains the
model centrally on a pool of training images disjoint from the users' (the data cache's
``pretrain_images``; see :func:`gradcomp.data.prepare_cifar10`) with Adam, and the federated
runs and the one-round study then start from its weights instead of the random init (the
optimizer state starts fresh). The one-round study pre-trains several warm starts, each from
its own seed (init and data order), and nests its seeds in them
(:mod:`gradcomp.statistics.nested`), so that its intervals are not conditional on one warm model;
the full runs start from the first.

**A common pre-training with continuations.** Reaching the accuracy a reader of the paper has
in mind (60% and more) takes many passes over a large pool, too many to repeat per warm start
on a CPU. With ``common`` set, one model is pre-trained once (:func:`warm_start_stage`, seeded by
``common.seed``, ``common.epochs`` passes over the whole pool) and every warm start *continues*
it (:func:`warm_start_stage` with ``initial``): ``epochs`` passes over its own seeded draw of
``images`` pool images, with a fresh Adam and its own data order. The warm starts are then
independent continuations of one pre-trained model: the one-round study's intervals cover the
models such continuations reach, conditional on that common model, not independently
pre-trained ones.

Units: accuracies are fractions in [0, 1], losses mean cross-entropy in nats, times seconds.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import torch

from gradcomp.artifacts import atomic_torch_save
from gradcomp.data import Cifar10, load_cifar10, test_draw
from gradcomp.lossy.local_training import ADAM_EPS, cpu_state
from gradcomp.models import build_model
from gradcomp.training import evaluate, resolve_device, train_epoch

log = logging.getLogger(__name__)

__all__ = ["WarmStartSettings", "load_warm_start", "pretrain", "warm_start_stage"]


@dataclass(frozen=True)
class WarmStartSettings:
    """Central pre-training: ``epochs`` passes over the pretraining pool at ``batch_size``
    with Adam at ``lr`` (Keras' epsilon), model init and data order seeded by ``seed``;
    evaluated after each epoch on a draw of ``test_images`` test images (None: all)."""

    model: str
    epochs: int = 5
    batch_size: int = 64
    lr: float = 1e-3
    seed: int = 0
    test_images: int | None = None
    #: a user's model class, ``package.module:Class`` (config ``user_models``; None: built-in)
    model_class: str | None = None
    #: pool images each epoch passes over: a draw of this many, seeded by ``seed`` (None: all)
    images: int | None = None


def pretrain(
    data: Cifar10,
    settings: WarmStartSettings,
    *,
    threads: int = 1,
    device: str = "cpu",
    initial: dict[str, torch.Tensor] | None = None,
) -> tuple[dict[str, torch.Tensor], list[dict[str, Any]]]:
    """(state dict on the CPU, one row per epoch: epoch, train_loss, test_loss, test_acc,
    seconds) of the model trained centrally on ``data.pretrain_images`` (on a seeded draw of
    ``settings.images`` of them), from ``initial`` weights if given, else the seeded init."""
    if data.pretrain_images is None or len(data.pretrain_images) == 0:
        raise ValueError(
            "the warm start needs a pretraining pool: set config key 'data.pretrain_subset' "
            "(images outside data.train_subset), or lossy.warm_start: null to start from scratch"
        )
    torch.set_num_threads(threads)
    dev = resolve_device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = build_model(settings.model, seed=settings.seed, model_class=settings.model_class)
        if initial is not None:
            model.load_state_dict(initial)
        model = model.to(dev)
        optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr, eps=ADAM_EPS)
        generator = torch.Generator().manual_seed(settings.seed)
        # pretrain_labels: set with pretrain_images (gradcomp.data.prepare_cifar10)
        images, labels = data.pretrain_images, cast(torch.Tensor, data.pretrain_labels)
        if settings.images is not None:
            if not 1 <= settings.images <= len(labels):
                raise ValueError(
                    f"config key 'lossy.warm_start.images' asks {settings.images} images of a "
                    f"{len(labels)}-image pool (data.pretrain_subset)"
                )
            pick = torch.randperm(len(labels), generator=generator)[: settings.images]
            images, labels = images[pick], labels[pick]
        test_images, test_labels = test_draw(data, settings.test_images, settings.seed)
        rows = []
        for epoch in range(1, settings.epochs + 1):
            t0 = time.perf_counter()
            train_loss = train_epoch(
                model,
                optimizer,
                images,
                labels,
                batch_size=settings.batch_size,
                generator=generator,
                device=dev,
            ).mean_loss
            if not math.isfinite(train_loss):
                raise FloatingPointError(
                    f"warm start of {settings.model}: loss {train_loss} in epoch {epoch}"
                )
            test_loss, test_acc = evaluate(model, test_images, test_labels, device=dev)
            rows.append(
                {
                    "epoch": epoch,
                    "train_loss": train_loss,
                    "test_loss": test_loss,
                    "test_acc": test_acc,
                    "seconds": time.perf_counter() - t0,
                }
            )
            log.info(
                "warm start %s: epoch %d/%d on %d images, train loss %.4f, test loss %.4f, "
                "test acc %.4f, %.1f s",
                settings.model, epoch, settings.epochs, len(labels), train_loss, test_loss,
                test_acc, rows[-1]["seconds"],
            )  # fmt: skip
    return cpu_state(model), rows


def warm_start_stage(
    data_path: str | Path,
    settings: dict[str, Any],
    out: str | Path,
    *,
    threads: int = 1,
    device: str = "cpu",
    initial: str | Path | None = None,
) -> list[dict[str, Any]]:
    """The ``warm_start`` stage: :func:`pretrain` with ``settings`` (:class:`WarmStartSettings`
    keywords), continuing the common pre-training in file ``initial`` if given (its log is
    kept as ``common_log``), written to ``out`` as ``{"state", "log", "settings"}``."""
    ws = WarmStartSettings(**settings)
    start = None if initial is None else torch.load(initial, weights_only=True)
    state, rows = pretrain(
        load_cifar10(Path(data_path)), ws, threads=threads, device=device,
        initial=None if start is None else start["state"],
    )  # fmt: skip
    blob: dict[str, Any] = {"state": state, "log": rows, "settings": asdict(ws)}
    if start is not None:
        blob["common_log"] = start["log"]
    atomic_torch_save(blob, out)
    return rows


def load_warm_start(path: str | Path) -> dict[str, torch.Tensor]:
    """The state dict a :func:`warm_start_stage` file holds."""
    return torch.load(path, weights_only=True)["state"]
