"""Whether the configured CIFAR-10 subsets can be drawn from an image-folder tree, told
before any job runs: the images per class counted without decoding any, and the
stratified draw's quotas of :func:`gradcomp.data.stratified_subset` checked against them."""

from __future__ import annotations

from pathlib import Path

from gradcomp.data import CLASSES, CONFIG_KEY, IMAGE_SUFFIXES, DataSourceError

__all__ = ["imagefolder_counts", "subset_errors"]


def imagefolder_counts(root: Path) -> dict[str, list[int]]:
    """Per split (``train``, ``test``), the image files of each class in :data:`CLASSES`
    order, counted without decoding any; :class:`DataSourceError` naming the config key and
    the folder when a split lacks the ten class folders (as
    :func:`gradcomp.data.read_imagefolder`)."""
    out = {}
    for split in ("train", "test"):
        split_dir = Path(root) / split
        found = sorted(p.name for p in split_dir.iterdir() if p.is_dir())
        if found != sorted(CLASSES):
            raise DataSourceError(
                f"config key '{CONFIG_KEY}': {split_dir} must hold the ten class folders "
                f"{', '.join(CLASSES)}; found {', '.join(found) or 'none'}"
            )
        out[split] = [
            sum(p.suffix.lower() in IMAGE_SUFFIXES for p in (split_dir / name).iterdir())
            for name in CLASSES
        ]
    return out


def _quotas(counts: list[int], size: int) -> list[int]:
    """Per class, the images :func:`stratified_subset` takes for a subset of ``size`` from
    classes of ``counts`` images (only the classes present share it)."""
    present = [i for i, c in enumerate(counts) if c > 0]
    out = [0] * len(counts)
    if present:
        base, extra = divmod(size, len(present))
        for rank, i in enumerate(present):
            out[i] = base + (rank < extra)
    return out


def subset_errors(
    counts: dict[str, list[int]],
    root: Path,
    *,
    train_subset: int | None,
    test_subset: int | None,
    pretrain_subset: int | None = None,
) -> list[str]:
    """Why the configured subsets cannot be drawn from a folder of ``counts`` images per
    class (:func:`imagefolder_counts`), each message naming its config key and the folder;
    empty if they can (what :func:`prepare_cifar10` will do, checked before any job)."""
    errors = []
    sizes = {"train": train_subset, "test": test_subset}
    for split, per_class in counts.items():
        where, total = Path(root) / split, sum(per_class)
        if total == 0:
            errors.append(
                f"config key '{CONFIG_KEY}': {where} holds no images (its ten class "
                "folders are empty)"
            )
            continue
        size = sizes[split]
        if size is None:
            continue
        key = f"config key 'data.{split}_subset'"
        if size > total:
            errors.append(f"{key}: a subset of {size} images asked from the {total} in {where}")
            continue
        short = [
            (CLASSES[i], q, c)
            for i, (q, c) in enumerate(zip(_quotas(per_class, size), per_class, strict=True))
            if q > c
        ]
        if short:
            name, q, c = short[0]
            errors.append(
                f"{key}: a stratified subset of {size} takes {q} images of class "
                f"{name}, and {where / name} has {c}"
            )
    if pretrain_subset and not errors:
        key = "config key 'data.pretrain_subset'"
        if train_subset is None:
            return [
                f"{key} needs 'data.train_subset': the pool is drawn from the training "
                "images outside the subset"
            ]
        train = counts["train"]
        rest = [c - q for c, q in zip(train, _quotas(train, train_subset), strict=True)]
        where = Path(root) / "train"
        if pretrain_subset > sum(rest):
            errors.append(
                f"{key}: {pretrain_subset} images asked outside the {train_subset} of "
                f"'data.train_subset', and {where} has {sum(rest)} more"
            )
        elif any(q > c for q, c in zip(_quotas(rest, pretrain_subset), rest, strict=True)):
            errors.append(
                f"{key}: a stratified pool of {pretrain_subset} images outside "
                f"'data.train_subset' needs more of some class than {where} has"
            )
    return errors
