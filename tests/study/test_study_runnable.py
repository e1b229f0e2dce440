"""Issue 54, item 6: the workflow refuses at ``snakemake -n`` what it cannot run: a device
this machine lacks, and a CIFAR-10 image folder with too few images for the configured
subsets, each named with its config key and the path."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import REPO
from gradcomp.data import CLASSES
from gradcomp.errors import ConfigError
from gradcomp.study import load_study
from gradcomp.subset_checks import imagefolder_counts, subset_errors

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


def _tree(root: Path, per_class: int, test_per_class: int | None = None) -> Path:
    """``root/{train,test}/<class>/`` with ``per_class`` 32 x 32 PNGs in each class folder."""
    from PIL import Image

    for split, n in (("train", per_class), ("test", per_class if test_per_class is None
                                            else test_per_class)):  # fmt: skip
        for name in CLASSES:
            folder = root / split / name
            folder.mkdir(parents=True)
            for k in range(n):
                Image.fromarray(np.full((32, 32, 3), k, np.uint8)).save(folder / f"{k}.png")
    return root


def _config(**changes) -> dict:
    c = copy.deepcopy(DEFAULT)
    c.update(changes)
    return c


@pytest.mark.parametrize(
    ("per_class", "key"),
    [
        # they passed -n, then preparing the data said "train: 0 images and 0 labels"
        (0, "cifar10"),
        # they passed -n, then "subset of 5000 asked from 20 images" named no key
        (2, "data.train_subset"),
    ],
)
def test_a_folder_too_small_is_refused_naming_the_key_and_the_path(tmp_path, per_class, key):
    """Empty class folders, and two images per class for the default subsets."""
    tree = _tree(tmp_path / "cifar", per_class)
    with pytest.raises(ConfigError) as err:
        load_study(_config(cifar10=str(tree)), SCHEMA)
    message = str(err.value)
    assert f"config key '{key}'" in message and str(tree / "train") in message


def test_a_folder_that_holds_the_subsets_builds(tmp_path):
    tree = _tree(tmp_path / "cifar", 9, 2)
    data = {"train_subset": 60, "test_subset": 20, "pretrain_subset": 30, "subset_seed": 0}
    load_study(_config(cifar10=str(tree), data=data), SCHEMA)


@pytest.mark.parametrize(
    ("counts", "sizes", "key"),
    [
        ({"train": [6] * 9 + [2], "test": [2] * 10}, (50, None, None), "data.train_subset"),
        ({"train": [5] * 10, "test": [1] * 10}, (None, 11, None), "data.test_subset"),
        ({"train": [9] * 10, "test": [2] * 10}, (60, None, 31), "data.pretrain_subset"),
        ({"train": [9] * 9 + [6], "test": [2] * 10}, (60, None, 30), "data.pretrain_subset"),
        ({"train": [9] * 10, "test": [2] * 10}, (None, None, 10), "data.pretrain_subset"),
    ],
)
def test_subset_errors_follow_the_stratified_draw(counts, sizes, key):
    """A class short of its stratified share, the test split, the pool outside the train
    subset (in total, per class, and without a train subset)."""
    train, test, pretrain = sizes
    errors = subset_errors(counts, Path("/data/cifar"), train_subset=train, test_subset=test,
                           pretrain_subset=pretrain)  # fmt: skip
    assert len(errors) == 1 and f"config key '{key}'" in errors[0]


def test_subset_errors_accept_what_the_stratified_draw_can_take():
    counts = {"train": [9] * 10, "test": [2] * 10}
    assert not subset_errors(counts, Path("x"), train_subset=60, test_subset=20,
                             pretrain_subset=30)  # fmt: skip
    # absent classes do not take a share: 9 classes of 7 hold a subset of 60
    counts = {"train": [7] * 9 + [0], "test": [2] * 10}
    assert not subset_errors(counts, Path("x"), train_subset=60, test_subset=None)


def test_images_are_counted_without_decoding(tmp_path):
    tree = _tree(tmp_path / "cifar", 1)
    (tree / "train" / CLASSES[0] / "notes.txt").write_text("not an image")
    assert imagefolder_counts(tree) == {"train": [1] * 10, "test": [1] * 10}


def test_cuda_on_a_machine_without_cuda_is_refused_naming_device(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device in ("cuda", "cuda:1"):
        with pytest.raises(ConfigError, match="config key 'device'"):
            load_study(_config(device=device), SCHEMA)


def test_cuda_for_jobs_given_a_gpu_elsewhere_is_not_refused(monkeypatch):
    """A rule whose resources ask for a GPU runs where one is (a cluster's GPU node)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    load_study(_config(device="cuda", resources={"federated": {"gpu": 1}}), SCHEMA)
    load_study(_config(device="cpu"), SCHEMA)


@pytest.mark.slow
def test_dry_run_refuses_a_folder_too_small_for_the_subsets(tmp_path):
    from conftest import run_snakemake

    tree = _tree(tmp_path / "cifar", 2)
    proc = run_snakemake(tmp_path, "-n", "--cores", "1", "--config", f"cifar10={tree}",
                         check=False, timeout=600)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config key 'data.train_subset'" in out and str(tree / "train") in out
