"""Shared fixtures: tiny CIFAR-10 look-alikes made on the fly (no ../shared, no internet)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from gradcomp.data import CLASSES, Cifar10

REPO = Path(__file__).resolve().parents[1]


def make_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random uint8 images (n, 3, 32, 32) and labels cycling through the 10 classes."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
    labels = np.arange(n) % len(CLASSES)
    return images, labels


def write_batches_tree(root: Path, n_train_per_batch: int = 20, n_test: int = 20) -> Path:
    """A torchvision-style ``cifar-10-batches-py`` folder under ``root``; returns it."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for i, name in enumerate(names):
        n = n_test if name == "test_batch" else n_train_per_batch
        images, labels = make_images(n, seed=i)
        with open(folder / name, "wb") as fh:
            pickle.dump({b"data": images.reshape(n, -1), b"labels": labels.tolist()}, fh)
    return folder


def write_imagefolder_tree(root: Path, n_train: int = 30, n_test: int = 20) -> Path:
    """An image-folder tree ``root/{train,test}/<class>/NNNN.png`` (lossless PNG)."""
    from PIL import Image

    for split, n, seed in (("train", n_train, 10), ("test", n_test, 11)):
        images, labels = make_images(n, seed)
        for k, (img, label) in enumerate(zip(images, labels, strict=True)):
            d = root / split / CLASSES[label]
            d.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img.transpose(1, 2, 0)).save(d / f"{k:04d}.png")
    return root


@pytest.fixture
def batches_tree(tmp_path: Path) -> Path:
    return write_batches_tree(tmp_path / "batches")


@pytest.fixture
def imagefolder_tree(tmp_path: Path) -> Path:
    return write_imagefolder_tree(tmp_path / "imagefolder")


@pytest.fixture
def tiny_cifar() -> Cifar10:
    """In-memory data with learnable structure: the label sets the image's mean colour."""
    gen = torch.Generator().manual_seed(0)

    def split(n):
        labels = torch.arange(n) % len(CLASSES)
        base = (labels.float() * 25).view(-1, 1, 1, 1)
        noise = torch.randint(0, 40, (n, 3, 32, 32), generator=gen).float()
        return (base + noise).clamp(0, 255).to(torch.uint8), labels

    train_images, train_labels = split(200)
    test_images, test_labels = split(50)
    return Cifar10(train_images, train_labels, test_images, test_labels, "synthetic")
