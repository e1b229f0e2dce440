"""The central warm start of paper Y's federation and the data pool it trains on."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from conftest import write_batches_tree
from gradcomp.data import load_cifar10, prepare_cifar10
from gradcomp.lossy.federated import FederatedSettings, Federation, run_federated
from gradcomp.lossy.warm_start import WarmStartSettings, pretrain, warm_start_stage
from gradcomp.models import build_model
from gradcomp.training import evaluate, train_epoch
from gradcomp.wire.users import compressor_factory


def test_pretraining_pool_is_disjoint_and_stratified(tmp_path: Path) -> None:
    """The pool holds other images than the users' subset, balanced over the classes.

    Planted bug it catches: drawing the pool from all training images (it then overlaps
    the subset), or from the subset itself."""
    folder = write_batches_tree(tmp_path / "src", n_train_per_batch=40)  # 200 train images
    prepare_cifar10(
        str(folder), tmp_path / "c.pt", download_root=tmp_path, train_subset=60,
        test_subset=20, pretrain_subset=50,
    )  # fmt: skip
    data = load_cifar10(tmp_path / "c.pt")
    assert len(data.train_labels) == 60 and len(data.pretrain_labels) == 50
    train = {bytes(img.numpy().tobytes()) for img in data.train_images}
    pool = {bytes(img.numpy().tobytes()) for img in data.pretrain_images}
    assert len(pool) == 50 and not train & pool  # random images: distinct bytes per image
    counts = torch.bincount(data.pretrain_labels, minlength=10)
    assert (counts == 5).all()


def test_pool_without_subset_is_refused(tmp_path: Path) -> None:
    folder = write_batches_tree(tmp_path / "src")
    with pytest.raises(ValueError, match="data.pretrain_subset"):
        prepare_cifar10(str(folder), tmp_path / "c.pt", download_root=tmp_path, pretrain_subset=10)


def test_pool_larger_than_the_rest_names_the_key(tmp_path: Path) -> None:
    """100 training images, 60 for the users: a 50-image pool cannot be drawn from the 40 left.
    The error names the key and the counts instead of failing inside torch."""
    folder = write_batches_tree(tmp_path / "src")  # 5 batches x 20 = 100 train images
    with pytest.raises(ValueError, match=r"data.pretrain_subset.*only 40 more"):
        prepare_cifar10(
            str(folder), tmp_path / "c.pt", download_root=tmp_path, train_subset=60,
            pretrain_subset=50,
        )  # fmt: skip
    assert not (tmp_path / "c.pt").exists()


def _with_pool(data):
    return dataclasses.replace(
        data, pretrain_images=data.train_images[:100], pretrain_labels=data.train_labels[:100]
    )


def test_pretraining_learns_and_the_federation_starts_there(tiny_cifar, tmp_path) -> None:
    """Central training lowers the test loss below the seeded init's, and the federation's
    round 0 is the pre-trained model (its loss and accuracy recomputed here).

    Planted bug it catches: Federation ignoring ``initial_state`` (round 0 then shows the
    random init's accuracy)."""
    data = _with_pool(tiny_cifar)
    state, log = pretrain(data, WarmStartSettings(model="mlp", epochs=8, lr=1e-3))
    cpu = torch.device("cpu")
    init_loss, _ = evaluate(
        build_model("mlp", seed=0), data.test_images, data.test_labels, batch_size=64, device=cpu
    )
    model = build_model("mlp")
    model.load_state_dict(state)
    loss, acc = evaluate(model, data.test_images, data.test_labels, batch_size=64, device=cpu)
    assert loss < init_loss and log[-1]["train_loss"] < log[0]["train_loss"]
    settings = FederatedSettings(model="mlp", seed=0, rounds=1, local_epochs=1, batch_size=16)
    fed = Federation(data, settings, initial_state=state)
    assert all(torch.equal(fed.initial_state[k], v) for k, v in state.items())
    result = run_federated(
        data, settings, compressor_factory({"quantizer": "none", "sparsifier": "none"}, 0),
        initial_state=state,
    )  # fmt: skip
    assert result.rounds[0]["test_loss"] == pytest.approx(loss)
    assert (loss, acc) == pytest.approx((log[-1]["test_loss"], log[-1]["test_acc"]))


def test_warm_start_file_and_missing_pool(tiny_cifar, tmp_path) -> None:
    with pytest.raises(ValueError, match="data.pretrain_subset"):
        pretrain(tiny_cifar, WarmStartSettings(model="mlp", epochs=1))
    data = _with_pool(tiny_cifar)
    torch.save(
        {
            "train_images": data.train_images, "train_labels": data.train_labels,
            "test_images": data.test_images, "test_labels": data.test_labels,
            "pretrain_images": data.pretrain_images, "pretrain_labels": data.pretrain_labels,
            "classes": (), "summary": {"source": "synthetic"},
        },
        tmp_path / "c.pt",
    )  # fmt: skip
    rows = warm_start_stage(tmp_path / "c.pt", {"model": "mlp", "epochs": 2}, tmp_path / "w.pt")
    blob = torch.load(tmp_path / "w.pt", weights_only=True)
    assert [r["epoch"] for r in rows] == [1, 2] and blob["settings"]["epochs"] == 2
    assert set(blob["state"]) == set(build_model("mlp").state_dict())


def _cache(data, path: Path) -> Path:
    torch.save(
        {
            "train_images": data.train_images, "train_labels": data.train_labels,
            "test_images": data.test_images, "test_labels": data.test_labels,
            "pretrain_images": data.pretrain_images, "pretrain_labels": data.pretrain_labels,
            "classes": (), "summary": {"source": "synthetic"},
        },
        path,
    )  # fmt: skip
    return path


def test_a_warm_start_continues_the_common_pretraining(tiny_cifar, tmp_path) -> None:
    """With ``initial`` a warm start starts from the common model's weights, not its seeded
    init: after one epoch at a tiny lr its weights are near the common model's and far from
    its own seed's init, and its first test loss is the common model's; two seeds continue to
    different models; the common log is kept beside its own.

    Planted bug it catches: ``initial`` ignored (the weights then stay at the seeded init),
    or every continuation drawing the same order."""
    data = _with_pool(tiny_cifar)
    cache = _cache(data, tmp_path / "c.pt")
    common = {"model": "mlp", "epochs": 3, "lr": 1e-2, "seed": 1000}
    warm_start_stage(cache, common, tmp_path / "common.pt")
    start = torch.load(tmp_path / "common.pt", weights_only=True)
    runs = {}
    for seed in (3, 4):
        settings = {"model": "mlp", "epochs": 1, "lr": 1e-6, "seed": seed, "images": 40}
        warm_start_stage(cache, settings, tmp_path / f"w{seed}.pt", initial=tmp_path / "common.pt")
        runs[seed] = torch.load(tmp_path / f"w{seed}.pt", weights_only=True)

    def distance(a, b):
        return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)

    init = build_model("mlp", seed=3).state_dict()
    assert distance(runs[3]["state"], start["state"]) < 0.01 < distance(runs[3]["state"], init)
    loss = runs[3]["log"][0]["test_loss"]
    assert loss == pytest.approx(start["log"][-1]["test_loss"], abs=0.01)
    assert runs[3]["common_log"] == start["log"] and runs[3]["settings"]["images"] == 40
    assert distance(runs[3]["state"], runs[4]["state"]) > 0


def test_continuation_draws_its_own_images(tiny_cifar) -> None:
    """``images`` passes each epoch over a seeded draw of that many pool images: the mean
    loss is taken over that many; too many names the key."""
    data = _with_pool(tiny_cifar)
    with pytest.raises(ValueError, match=r"lossy.warm_start.images.*100-image pool"):
        pretrain(data, WarmStartSettings(model="mlp", epochs=1, images=101))
    seen = []

    def counting(model, optimizer, images, labels, **kw):
        seen.append(len(labels))
        return train_epoch(model, optimizer, images, labels, **kw)

    import gradcomp.lossy.warm_start as ws

    original = ws.train_epoch
    ws.train_epoch = counting
    try:
        pretrain(data, WarmStartSettings(model="mlp", epochs=2, images=30))
    finally:
        ws.train_epoch = original
    assert seen == [30, 30]
