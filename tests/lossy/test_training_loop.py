"""The one training loop (:func:`gradcomp.training.train_epoch`) and its three users (paper L's
training, paper Y's local training and warm start) against a textbook loop written here.

Equality is exact (``torch.equal``): the same random draws in the same order and the same
floating-point operations give the same bits. Batch sizes are chosen so that no last batch
holds a single image (the library merges that one into the batch before, the textbook loop
does not).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from gradcomp.augment import random_affine
from gradcomp.lossy.local_training import LocalTask, LocalTrainer, UserData, cpu_state
from gradcomp.lossy.warm_start import WarmStartSettings, pretrain
from gradcomp.models import build_model
from gradcomp.training import train_epoch

CPU = torch.device("cpu")


def textbook_epoch(model, optimizer, images, labels, rows, batch_size, generator, *,
                   augment=False, reduction="mean"):  # fmt: skip
    """One epoch over ``images[rows]``; returns (per-step gradients, summed per-image loss)."""
    model.train()
    order = rows[torch.randperm(len(rows), generator=generator)]
    grads, loss_sum = [], 0.0
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        x = (images[idx].float() / 255.0).contiguous(memory_format=torch.channels_last)
        if augment:
            x = random_affine(x, generator).contiguous(memory_format=torch.channels_last)
        loss = F.cross_entropy(model(x), labels[idx], reduction=reduction)
        optimizer.zero_grad()
        loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        optimizer.step()
        loss_sum += loss.item() * (1 if reduction == "sum" else len(idx))
    return grads, loss_sum


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_loop_steps_like_the_textbook_loop(tiny_cifar, reduction) -> None:
    """SGD with momentum and augmentation over a subset of rows: every step's gradients and
    the final weights are bit-identical, the summed loss equal to float rounding, and
    ``check_loss`` sees every batch before its step.

    Planted bugs that fail it: augmenting before the conversion or from another generator,
    ``zero_grad`` after ``backward`` (gradients accumulate), the rows ignored (``indices``
    dropped), a step per epoch instead of per batch."""
    rows = torch.arange(10, 150)  # 140 images: batches of 32 x 4 and 12
    images, labels = tiny_cifar.train_images, tiny_cifar.train_labels
    models, optimizers = [], []
    for _ in range(2):
        model = build_model("mlp", seed=1)
        models.append(model)
        optimizers.append(torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9))
    want_grads, want_loss = textbook_epoch(
        models[0], optimizers[0], images, labels, rows, 32, torch.Generator().manual_seed(5),
        augment=True, reduction=reduction,
    )  # fmt: skip
    got_grads, checked = [], []
    totals = train_epoch(
        models[1], optimizers[1], images, labels, indices=rows, batch_size=32,
        generator=torch.Generator().manual_seed(5), device=CPU, augment=True,
        reduction=reduction,
        check_loss=lambda loss, batch, n: checked.append((batch, n)),
        after_backward=lambda: got_grads.append([p.grad.clone() for p in models[1].parameters()]),
    )  # fmt: skip
    assert checked == [(1, 32), (2, 32), (3, 32), (4, 32), (5, 12)]
    assert len(got_grads) == len(want_grads) == 5
    for got, want in zip(got_grads, want_grads, strict=True):
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    assert_same_state(models[1].state_dict(), models[0].state_dict())
    assert totals.images == 140
    assert totals.loss_sum.item() == pytest.approx(want_loss, rel=1e-6)


@pytest.mark.parametrize("model", ["mlp", pytest.param("cnn", marks=pytest.mark.slow)])
def test_local_training_is_the_textbook_loop_with_keras_adam(tiny_cifar, model) -> None:
    """Two users in a row as in the shared-optimizer mode (a fresh Adam, then its state carried
    on): global RNG (dropout in ``cnn``) and the data generator seeded from the task's seed,
    Adam with Keras' epsilon, two local epochs over the user's rows.

    Planted bugs that fail it: torch's default epsilon, the optimizer state not loaded, the
    global RNG not seeded (dropout differs), one epoch only."""
    users = [
        UserData(0, train_idx=torch.arange(100, 164), val_idx=torch.arange(164, 180)),
        UserData(1, train_idx=torch.arange(0, 48), val_idx=torch.arange(48, 60)),
    ]
    start = cpu_state(build_model(model, seed=2))
    trainer = LocalTrainer(tiny_cifar, model, local_epochs=2, batch_size=16, lr=1e-3)
    first = trainer(LocalTask(users[0], 1, 77, start))
    second = trainer(LocalTask(users[1], 1, 78, start, first.optimizer_state))

    opt_state = None
    for user, seed, out in ((users[0], 77, first), (users[1], 78, second)):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            generator = torch.Generator().manual_seed(seed)
            ref = build_model(model)
            ref.load_state_dict(start)
            opt = torch.optim.Adam(ref.parameters(), lr=1e-3, eps=1e-7)
            if opt_state is not None:
                opt.load_state_dict(opt_state)
            for _ in range(2):
                _, loss_sum = textbook_epoch(
                    ref, opt, tiny_cifar.train_images, tiny_cifar.train_labels,
                    user.train_idx, 16, generator,
                )  # fmt: skip
            opt_state = opt.state_dict()
        assert_same_state(out.state, cpu_state(ref))
        assert out.train_loss == pytest.approx(loss_sum / len(user.train_idx), rel=1e-6)


def test_warm_start_is_the_textbook_loop_on_the_pool(tiny_cifar) -> None:
    """Central pre-training: model init, global RNG and data order seeded by the settings'
    seed, Adam with Keras' epsilon, plain passes over the pool (no augmentation).

    Planted bugs that fail it: training on the users' images instead of the pool, the data
    order not seeded by ``seed``, augmentation on."""
    data = dataclasses.replace(
        tiny_cifar,
        pretrain_images=tiny_cifar.train_images[120:],
        pretrain_labels=tiny_cifar.train_labels[120:],
    )  # 80 images: batches of 32, 32, 16
    state, rows = pretrain(data, WarmStartSettings(model="mlp", epochs=2, batch_size=32, seed=4))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        ref = build_model("mlp", seed=4)
        opt = torch.optim.Adam(ref.parameters(), lr=1e-3, eps=1e-7)
        generator = torch.Generator().manual_seed(4)
        losses = [
            textbook_epoch(ref, opt, data.pretrain_images, data.pretrain_labels,
                           torch.arange(80), 32, generator)[1] / 80
            for _ in range(2)
        ]  # fmt: skip
    assert_same_state(state, cpu_state(ref))
    assert [r["train_loss"] for r in rows] == pytest.approx(losses, rel=1e-6)
