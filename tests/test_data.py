from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest
import torch

from gradcomp import data as data_mod
from gradcomp.data import (
    CLASSES,
    DataSourceError,
    detect_format,
    load_cifar10,
    prepare_cifar10,
    stratified_subset,
)


def test_detect_formats(batches_tree: Path, imagefolder_tree: Path) -> None:
    assert detect_format(batches_tree) == ("batches", batches_tree)
    assert detect_format(batches_tree.parent) == ("batches", batches_tree)
    assert detect_format(imagefolder_tree) == ("imagefolder", imagefolder_tree)


def test_unknown_layout_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    with pytest.raises(DataSourceError, match="cifar10"):
        detect_format(tmp_path / "junk")
    with pytest.raises(DataSourceError, match="does not exist"):
        detect_format(tmp_path / "missing")


def test_batches_roundtrip(batches_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "cache.pt"
    summary = prepare_cifar10(str(batches_tree), out, download_root=tmp_path / "dl")
    data = load_cifar10(out)
    assert summary["n_train"] == 100 and summary["n_test"] == 20
    assert data.train_images.dtype == torch.uint8
    assert data.train_images.shape == (100, 3, 32, 32)
    expected, labels = __import__("conftest").make_images(20, seed=0)
    assert torch.equal(data.train_images[:20], torch.from_numpy(expected))
    assert data.train_labels[:20].tolist() == labels.tolist()
    assert not summary["jpeg_stand_in"]


def test_imagefolder_labels_follow_class_folders(imagefolder_tree: Path, tmp_path: Path) -> None:
    from conftest import make_images

    out = tmp_path / "cache.pt"
    prepare_cifar10(str(imagefolder_tree), out, download_root=tmp_path / "dl")
    data = load_cifar10(out)
    images, labels = make_images(30, seed=10)
    assert data.train_images.shape == (30, 3, 32, 32)
    # the order is shuffled; every original image must be there with its label
    for img, label in zip(images, labels, strict=True):
        match = (data.train_images == torch.from_numpy(img)).flatten(1).all(1)
        assert match.sum() == 1
        assert data.train_labels[match].item() == label
    # and the order mixes classes (contiguous splits stay IID)
    assert len(set(data.train_labels[:10].tolist())) > 3


def test_imagefolder_rejects_wrong_classes(tmp_path: Path) -> None:
    for split in ("train", "test"):
        (tmp_path / split / "cats").mkdir(parents=True)
    with pytest.raises(DataSourceError, match="ten class folders"):
        prepare_cifar10(str(tmp_path), tmp_path / "c.pt", download_root=tmp_path / "dl")


def test_stratified_subset_is_balanced_and_seeded() -> None:
    labels = torch.arange(1000) % 10
    idx = stratified_subset(labels, 95, seed=3)
    assert len(idx) == 95 and len(set(idx.tolist())) == 95
    counts = torch.bincount(labels[idx], minlength=10)
    assert counts.max() - counts.min() <= 1
    assert torch.equal(idx, stratified_subset(labels, 95, seed=3))
    assert not torch.equal(idx, stratified_subset(labels, 95, seed=4))
    with pytest.raises(ValueError):
        stratified_subset(labels, 2000, seed=0)


def test_subset_applied_to_cache(batches_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "cache.pt"
    prepare_cifar10(
        str(batches_tree), out, download_root=tmp_path / "dl", train_subset=50, test_subset=10
    )
    data = load_cifar10(out)
    assert len(data.train_labels) == 50 and len(data.test_labels) == 10
    assert torch.bincount(data.train_labels, minlength=10).tolist() == [5] * 10


@pytest.mark.slow
def test_offline_download_names_key_and_formats(tmp_path: Path, monkeypatch) -> None:
    import torchvision.datasets

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(torchvision.datasets, "CIFAR10", no_network)
    out = tmp_path / "cache.pt"
    with pytest.raises(DataSourceError) as err:
        prepare_cifar10("download", out, download_root=tmp_path / "dl")
    message = str(err.value)
    assert (
        "'cifar10'" in message and "cifar-10-batches-py" in message and "train/<class>" in message
    )
    assert not out.exists()


def test_failed_preparation_leaves_no_cache(
    batches_tree: Path, tmp_path: Path, monkeypatch
) -> None:
    def broken_save(obj, path):
        Path(path).write_bytes(b"half written")
        raise KeyboardInterrupt

    monkeypatch.setattr(data_mod.torch, "save", broken_save)
    out = tmp_path / "cache.pt"
    with pytest.raises(KeyboardInterrupt):
        prepare_cifar10(str(batches_tree), out, download_root=tmp_path / "dl")
    assert list(tmp_path.glob("cache*")) == [] and list(tmp_path.glob(".cache*")) == []


def test_classes_are_standard_order() -> None:
    """Label k is the k-th name of CIFAR-10's ``batches.meta`` (written out here), so an
    image-folder tree's class folders get the labels of the original batches. Planted bug
    that fails it: the names sorted another way (e.g. ``automobile`` and ``bird`` swapped)."""
    batches_meta = [
        "airplane", "automobile", "bird", "cat", "deer",
        "dog", "frog", "horse", "ship", "truck",
    ]  # fmt: skip
    assert list(CLASSES) == batches_meta
