from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from gradcomp.lossless import train as train_mod
from gradcomp.lossless.dumps import DUMP_KINDS, read_dump
from gradcomp.lossless.train import TrainSettings, select_parameters, train_with_dumps
from gradcomp.models import build_model


def run(data, tmp: Path, **overrides):
    settings = TrainSettings(
        **{
            "model": "mlp",
            "seed": 0,
            "epochs": 2,
            "batch_size": 32,
            "threads": 1,
            "device": "cpu",
            **overrides,
        }
    )
    dumps = [tmp / "grads" / f"epoch{e}.safetensors" for e in range(1, settings.epochs + 1)]
    history = train_with_dumps(
        data, settings, dump_paths=dumps, log_path=tmp / "log.tsv", state_dir=tmp / "state"
    )
    return settings, dumps, history


@pytest.mark.slow
def test_training_reduces_loss_and_logs(tiny_cifar, tmp_path: Path) -> None:
    _, dumps, history = run(tiny_cifar, tmp_path, epochs=4, lr=0.05, augment=False)
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    lines = (tmp_path / "log.tsv").read_text().splitlines()
    assert lines[0].split("\t") == list(train_mod.LOG_COLUMNS)
    assert len(lines) == 5
    assert all(p.exists() for p in dumps)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_dump_format_and_exact_epoch_average(tiny_cifar, tmp_path: Path, reduction) -> None:
    # lr = 0: every minibatch gradient is taken at the initial weights, so the epoch
    # average can be recomputed independently from the same shuffle. The reference is the
    # mean-loss gradient, times the batch's size (32, then 8 for the last batch) for "sum".
    settings, dumps, _ = run(
        tiny_cifar, tmp_path, epochs=1, lr=0.0, augment=False, loss_reduction=reduction
    )
    dump = read_dump(dumps[0])
    model = build_model("mlp", seed=0)
    assert dump.names == [n for n, _ in model.named_parameters()]
    assert dump.metadata["n_batches"] == "7" and dump.epoch == 1
    assert dump.metadata["loss_reduction"] == reduction
    assert dump.metadata["last_batch_size"] == "8"
    gen = torch.Generator().manual_seed(0)
    perm = torch.randperm(200, generator=gen)
    sums = {n: torch.zeros_like(p, dtype=torch.float64) for n, p in model.named_parameters()}
    for idx in perm.split(32):
        model.zero_grad()
        x = tiny_cifar.train_images[idx].float() / 255
        F.cross_entropy(model(x), tiny_cifar.train_labels[idx]).backward()
        factor = len(idx) if reduction == "sum" else 1
        for n, p in model.named_parameters():
            sums[n] += factor * p.grad
    for n, p in model.named_parameters():
        assert dump.tensors["epoch_avg"][n].shape == p.shape
        torch.testing.assert_close(
            dump.tensors["epoch_avg"][n], (sums[n] / 7).float(), rtol=1e-5, atol=1e-7
        )
        last = p.grad * (8 if reduction == "sum" else 1)
        torch.testing.assert_close(dump.tensors["last_batch"][n], last, rtol=1e-5, atol=1e-7)


def test_sum_reduction_steps_lr_times_batch_on_the_mean_loss(tiny_cifar, tmp_path: Path) -> None:
    # 200 images in batches of 40: SGD at lr on the summed loss walks the same path as SGD
    # at 40 lr on the mean loss, and its gradients are 40 times as large.
    kw = {"epochs": 2, "batch_size": 40, "augment": False}
    _, summed, _ = run(tiny_cifar, tmp_path / "sum", lr=0.01, loss_reduction="sum", **kw)
    _, mean, _ = run(tiny_cifar, tmp_path / "mean", lr=0.4, loss_reduction="mean", **kw)
    for path_sum, path_mean in zip(summed, mean, strict=True):
        a, b = read_dump(path_sum), read_dump(path_mean)
        for kind in DUMP_KINDS:
            for name, t in a.tensors[kind].items():
                torch.testing.assert_close(t, 40 * b.tensors[kind][name], rtol=1e-4, atol=1e-6)


def test_diverging_loss_stops_naming_model_run_epoch_and_batch(tiny_cifar, tmp_path: Path) -> None:
    with pytest.raises(train_mod.TrainingDivergedError, match=r"mlp run3 epoch1 batch\d+"):
        run(tiny_cifar, tmp_path, seed=3, lr=1e30, augment=False)
    assert not (tmp_path / "grads").exists() and not (tmp_path / "log.tsv").exists()
    with pytest.raises(ValueError, match="loss_reduction"):
        TrainSettings(model="mlp", seed=0, epochs=1, loss_reduction="max")


@pytest.mark.slow
def test_same_seed_gives_identical_bytes(tiny_cifar, tmp_path: Path) -> None:
    _, a, _ = run(tiny_cifar, tmp_path / "a", model="cnn")
    _, b, _ = run(tiny_cifar, tmp_path / "b", model="cnn")
    _, c, _ = run(tiny_cifar, tmp_path / "c", model="cnn", seed=1)
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
    assert a[0].read_bytes() != c[0].read_bytes()


@pytest.mark.slow
def test_resume_after_interruption_is_bitwise_identical(
    tiny_cifar, tmp_path: Path, monkeypatch
) -> None:
    _, reference, _ = run(tiny_cifar, tmp_path / "ref", model="cnn", epochs=3)

    calls = {"n": 0}
    real_evaluate = train_mod.evaluate

    def crash_on_second_epoch(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("simulated kill during epoch 2")
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(train_mod, "evaluate", crash_on_second_epoch)
    with pytest.raises(KeyboardInterrupt):
        run(tiny_cifar, tmp_path / "resumed", model="cnn", epochs=3)
    assert (tmp_path / "resumed" / "state" / "checkpoint.pt").exists()
    assert not (tmp_path / "resumed" / "grads" / "epoch1.safetensors").exists()
    monkeypatch.setattr(train_mod, "evaluate", real_evaluate)
    _, resumed, history = run(tiny_cifar, tmp_path / "resumed", model="cnn", epochs=3)
    assert [r["epoch"] for r in history] == [1, 2, 3]
    for pa, pb in zip(reference, resumed, strict=True):
        assert pa.read_bytes() == pb.read_bytes()


def test_checkpoint_with_other_settings_is_ignored(tiny_cifar, tmp_path: Path) -> None:
    run(tiny_cifar, tmp_path, epochs=1)
    _, _, history = run(tiny_cifar, tmp_path, epochs=2, lr=0.02)
    assert [r["epoch"] for r in history] == [1, 2]


def test_select_parameters_patterns() -> None:
    model = build_model("cnn", seed=0)
    chosen = select_parameters(model, ("conv2.weight", "dense*.weight"))
    assert list(chosen) == ["conv2.weight", "dense128.weight", "dense10.weight"]
    with pytest.raises(ValueError, match="conv9"):
        select_parameters(model, ("conv9.weight",))


def test_dump_kinds_only_selected(tiny_cifar, tmp_path: Path) -> None:
    _, dumps, _ = run(tiny_cifar, tmp_path, epochs=1, dump_tensors=("fc2.*",))
    dump = read_dump(dumps[0])
    assert set(dump.tensors) == set(DUMP_KINDS)
    assert dump.names == ["fc2.weight", "fc2.bias"]
