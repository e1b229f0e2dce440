"""CIFAR-10 as one cached file of uint8 tensors.

Three sources, chosen by the single config key ``cifar10``:

- ``download``: torchvision downloads the original release (needs internet);
- a path to a torchvision ``cifar-10-batches-py`` folder (or its parent);
- a path to an image-folder tree ``{train,test}/<class>/<image>`` such as the
  JPEG stand-in in ``../shared/data/cifar10-jpeg``.

The cache (:func:`prepare_cifar10`) is a ``torch.save`` dict with
``train_images`` / ``test_images`` of shape (N, 3, 32, 32), dtype uint8,
``train_labels`` / ``test_labels`` of shape (N,), dtype int64, the class
names and a description of the source. It is written to a temporary file and
renamed into place, so a failed or interrupted preparation leaves no cache.
"""

from __future__ import annotations

import json
import logging
import pickle
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gradcomp.artifacts import atomic_torch_save, write_text

log = logging.getLogger(__name__)

CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)  # fmt: skip
CONFIG_KEY = "cifar10"
BATCHES_DIR = "cifar-10-batches-py"
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".webp"}
# Image-folder trees list images class by class; a fixed shuffle restores a
# class-mixed order like the original release's, so that contiguous splits
# (paper Y's users) stay IID.
IMAGEFOLDER_ORDER_SEED = 20211115


class DataSourceError(RuntimeError):
    """The configured CIFAR-10 source cannot be read; the message says how to fix it."""


@dataclass(frozen=True)
class Cifar10:
    """CIFAR-10 held in memory as tensors (see the module docstring for shapes)."""

    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    source: str
    #: a stratified pool of training images disjoint from ``train_*`` (empty when the cache
    #: holds none), for a central warm start (:mod:`gradcomp.lossy.warm_start`)
    pretrain_images: torch.Tensor | None = None
    pretrain_labels: torch.Tensor | None = None


def _offline_message(reason: str) -> str:
    return (
        f"CIFAR-10 could not be obtained ({reason}). Set the config key "
        f"'{CONFIG_KEY}' to a local copy instead of 'download', either a torchvision "
        f"'{BATCHES_DIR}' folder (data_batch_1..5, test_batch) or an image-folder tree "
        "'train/<class>/*.jpg' and 'test/<class>/*.jpg', e.g. "
        f"snakemake --cores 2 --config {CONFIG_KEY}=/path/to/cifar10-jpeg"
    )


def detect_format(path: Path) -> tuple[str, Path]:
    """Return ``("batches", folder)`` or ``("imagefolder", root)`` for a local copy."""
    path = Path(path)
    if not path.exists():
        raise DataSourceError(f"config key '{CONFIG_KEY}': path {path} does not exist")
    for candidate in (path, path / BATCHES_DIR):
        if (candidate / "data_batch_1").is_file() and (candidate / "test_batch").is_file():
            return "batches", candidate
    if (path / "train").is_dir() and (path / "test").is_dir():
        return "imagefolder", path
    raise DataSourceError(
        f"config key '{CONFIG_KEY}': {path} is neither a torchvision '{BATCHES_DIR}' folder "
        "(data_batch_1..5, test_batch) nor an image-folder tree with 'train/' and 'test/'"
    )


def _unpickle(path: Path) -> dict:
    with open(path, "rb") as fh:
        return pickle.load(fh, encoding="bytes")


def read_batches(folder: Path) -> dict[str, torch.Tensor]:
    """Read the python pickles of the original release into uint8 tensors."""
    out: dict[str, torch.Tensor] = {}
    for split, names in (
        ("train", [f"data_batch_{i}" for i in range(1, 6)]),
        ("test", ["test_batch"]),
    ):
        data, labels = [], []
        for name in names:
            file = folder / name
            if not file.is_file():
                raise DataSourceError(f"config key '{CONFIG_KEY}': missing {file}")
            batch = _unpickle(file)
            data.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            labels.append(np.asarray(batch[b"labels"], dtype=np.int64))
        out[f"{split}_images"] = torch.from_numpy(np.concatenate(data))
        out[f"{split}_labels"] = torch.from_numpy(np.concatenate(labels))
    return out


def _decode(file: Path) -> torch.Tensor:
    """One image file -> uint8 tensor (3, 32, 32)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(file) as img:
            pixels = np.asarray(img.convert("RGB"), dtype=np.uint8)
    except (OSError, UnidentifiedImageError) as err:
        raise DataSourceError(f"cannot decode image {file}: {err}") from err
    image = torch.from_numpy(pixels.transpose(2, 0, 1).copy())
    if image.shape != (3, 32, 32):
        raise DataSourceError(f"image {file} has shape {tuple(image.shape)}, expected 3x32x32")
    return image


def read_imagefolder(root: Path, *, threads: int = 4) -> dict[str, torch.Tensor]:
    """Decode ``root/{train,test}/<class>/*`` into uint8 tensors.

    Class folders must be the ten CIFAR-10 class names; they give the labels
    in the standard order (airplane = 0 ... truck = 9). Images are put in a
    fixed class-mixed order (see ``IMAGEFOLDER_ORDER_SEED``).
    """
    out: dict[str, torch.Tensor] = {}
    for split in ("train", "test"):
        split_dir = root / split
        found = sorted(p.name for p in split_dir.iterdir() if p.is_dir())
        if found != sorted(CLASSES):
            raise DataSourceError(
                f"config key '{CONFIG_KEY}': {split_dir} must hold the ten class folders "
                f"{', '.join(CLASSES)}; found {', '.join(found) or 'none'}"
            )
        files, labels = [], []
        for label, name in enumerate(CLASSES):
            class_files = sorted(
                p for p in (split_dir / name).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES
            )
            files += class_files
            labels += [label] * len(class_files)
        log.info("decoding %d %s images from %s", len(files), split, split_dir)
        with ThreadPoolExecutor(threads) as pool:
            images = list(pool.map(_decode, files, chunksize=256))
        order = torch.randperm(
            len(files), generator=torch.Generator().manual_seed(IMAGEFOLDER_ORDER_SEED)
        )
        out[f"{split}_images"] = (
            torch.stack(images)[order] if images else torch.empty(0, 3, 32, 32, dtype=torch.uint8)
        )
        out[f"{split}_labels"] = torch.tensor(labels, dtype=torch.int64)[order]
    return out


def download_batches(root: Path) -> Path:
    """Download the original release with torchvision; return the batches folder."""
    from torchvision.datasets import CIFAR10

    root.mkdir(parents=True, exist_ok=True)
    try:
        CIFAR10(str(root), train=True, download=True)
    except Exception as err:  # torchvision raises URLError, OSError, RuntimeError...
        raise DataSourceError(_offline_message(f"download failed: {err}")) from err
    return root / BATCHES_DIR


def stratified_subset(labels: torch.Tensor, size: int, *, seed: int) -> torch.Tensor:
    """Indices (sorted, int64) of ``size`` entries with classes as balanced as possible.

    Each class contributes ``size // C`` entries (the first ``size % C``
    classes one more), drawn without replacement with ``seed``.
    """
    if size > len(labels):
        raise ValueError(f"subset of {size} asked from {len(labels)} images")
    classes = torch.unique(labels)
    counts = torch.bincount(labels, minlength=int(classes.max()) + 1)[classes]
    base, extra = divmod(size, len(classes))
    quotas = [base + (i < extra) for i in range(len(classes))]
    if any(q > c for q, c in zip(quotas, counts.tolist(), strict=True)):
        raise ValueError(
            f"subset of {size} needs {max(quotas)} per class; a class has only {int(counts.min())}"
        )
    gen = torch.Generator().manual_seed(seed)
    picks = []
    for cls, quota in zip(classes.tolist(), quotas, strict=True):
        members = torch.nonzero(labels == cls).flatten()
        picks.append(members[torch.randperm(len(members), generator=gen)[:quota]])
    return torch.sort(torch.cat(picks)).values


def _validate(tensors: dict[str, torch.Tensor]) -> None:
    for split in ("train", "test"):
        images, labels = tensors[f"{split}_images"], tensors[f"{split}_labels"]
        if images.ndim != 4 or images.shape[1:] != (3, 32, 32) or images.dtype != torch.uint8:
            raise DataSourceError(
                f"{split} images: expected uint8 (N, 3, 32, 32), "
                f"got {images.dtype} {tuple(images.shape)}"
            )
        if len(images) != len(labels) or len(images) == 0:
            raise DataSourceError(f"{split}: {len(images)} images and {len(labels)} labels")
        if labels.min() < 0 or labels.max() >= len(CLASSES):
            raise DataSourceError(f"{split}: labels outside 0..9")


def prepare_cifar10(
    source: str,
    out: Path,
    *,
    download_root: Path,
    train_subset: int | None = None,
    test_subset: int | None = None,
    pretrain_subset: int | None = None,
    seed: int = 0,
    summary_path: Path | None = None,
) -> dict[str, object]:
    """Read CIFAR-10 from ``source`` (``"download"`` or a local path) and cache it at ``out``.

    ``train_subset`` / ``test_subset`` pick a stratified subset of that many
    images per split (``None`` keeps the whole split). ``pretrain_subset`` draws a further
    stratified pool of that many training images outside ``train_subset`` (kept as
    ``pretrain_images`` / ``pretrain_labels``; it needs a ``train_subset``). Returns a summary dict
    (source, format, sizes) that is also stored in the cache and, if
    ``summary_path`` is given, written there as JSON.
    """
    if source == "download":
        fmt, folder = "batches", download_batches(Path(download_root))
        origin = "CIFAR-10 (original release, torchvision download)"
    else:
        fmt, folder = detect_format(Path(source))
        # named by the config key and its kind, never by the path: outputs stay free of the
        # machine's folders (the path is in this job's log)
        kind = "torchvision batches" if fmt == "batches" else "image-folder"
        origin = f"CIFAR-10, a local {kind} copy (config key {CONFIG_KEY})"
        log.info("reading %s at %s", origin, folder)
    log.info("reading %s", origin)
    tensors = read_batches(folder) if fmt == "batches" else read_imagefolder(folder)
    _validate(tensors)
    if pretrain_subset:
        if train_subset is None:
            raise ValueError(
                "config key 'data.pretrain_subset' needs 'data.train_subset': the pool is drawn "
                "from the training images outside the subset"
            )
        chosen = stratified_subset(tensors["train_labels"], train_subset, seed=seed)
        rest = torch.ones(len(tensors["train_labels"]), dtype=torch.bool)
        rest[chosen] = False
        rest_idx = torch.nonzero(rest).flatten()
        if pretrain_subset > len(rest_idx):
            raise ValueError(
                f"config key 'data.pretrain_subset' asks {pretrain_subset} images outside the "
                f"{train_subset}-image 'data.train_subset', but {source} has only "
                f"{len(rest_idx)} more training images; lower it or set it to null"
            )
        pick = rest_idx[
            stratified_subset(tensors["train_labels"][rest_idx], pretrain_subset, seed=seed + 1)
        ]
        tensors["pretrain_images"] = tensors["train_images"][pick].contiguous()
        tensors["pretrain_labels"] = tensors["train_labels"][pick].contiguous()
    for split, size in (("train", train_subset), ("test", test_subset)):
        if size is not None:
            idx = stratified_subset(tensors[f"{split}_labels"], size, seed=seed)
            tensors[f"{split}_images"] = tensors[f"{split}_images"][idx].contiguous()
            tensors[f"{split}_labels"] = tensors[f"{split}_labels"][idx].contiguous()
    jpeg = fmt == "imagefolder" and any(
        p.suffix.lower() in {".jpg", ".jpeg"} for p in (folder / "test" / CLASSES[0]).iterdir()
    )
    summary = {
        "source": origin + (" (JPEG re-encoded stand-in)" if jpeg else ""),
        "format": fmt,
        "jpeg_stand_in": jpeg,
        "n_train": len(tensors["train_labels"]),
        "n_test": len(tensors["test_labels"]),
        "n_pretrain": len(tensors.get("pretrain_labels", ())),
        "subset_seed": seed,
    }
    atomic_torch_save({**tensors, "classes": CLASSES, "summary": summary}, out)
    if summary_path is not None:
        write_text(summary_path, json.dumps(summary, indent=2) + "\n")
    log.info("wrote %s: %d train, %d test images", out, summary["n_train"], summary["n_test"])
    return summary


def load_cifar10(path: Path) -> Cifar10:
    """Load a cache written by :func:`prepare_cifar10`."""
    blob = torch.load(path, weights_only=True)
    return Cifar10(
        blob["train_images"], blob["train_labels"],
        blob["test_images"], blob["test_labels"],
        blob["summary"]["source"],
        blob.get("pretrain_images"), blob.get("pretrain_labels"),
    )  # fmt: skip


def test_draw(
    data: Cifar10, n: int | None, seed: int, *, key: str = "lossy.test_images"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images, labels) of a random draw of ``n`` of ``data``'s test images without
    replacement, in their cached order, from a generator seeded by ``seed`` (mixed with a tag
    of its own, so that it shares no stream with the training seeds); every test image when
    ``n`` is None. Used where the test images should vary with a run's seed like everything
    else a rerun would vary. ``key``: the config key ``n`` comes from, named in the error."""
    if n is None:
        return data.test_images, data.test_labels
    total = len(data.test_labels)
    if not 1 <= n <= total:
        raise ValueError(
            f"config key '{key}' asks {n} test images, but the data has {total} (data.test_subset)"
        )
    mixed = np.random.SeedSequence([int(seed), _TEST_DRAW_TAG]).generate_state(1, np.uint64)[0]
    gen = torch.Generator().manual_seed(int(mixed >> np.uint64(1)))
    idx = torch.randperm(total, generator=gen)[:n].sort().values
    return data.test_images[idx].contiguous(), data.test_labels[idx].contiguous()


_TEST_DRAW_TAG = 7919  # keeps the test draw's stream apart from every other seeded stream
