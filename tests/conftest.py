"""Shared fixtures: tiny CIFAR-10 look-alikes made on the fly (no ../shared, no internet)."""

from __future__ import annotations

import copy
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from filelock import FileLock

from gradcomp.data import CLASSES, Cifar10

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]

# The longest test files (minutes each; tests/*.py durations in the CI log) go first, so that
# with `pytest -n 2 --dist loadfile` they start on separate workers and the short files fill
# in beside them: the paper smoke on one, SLURM (skipped unless opted in) and test_workflow,
# which builds the shared run (shared_run), on the other. In a serial run the order changes
# nothing else.
LONGEST_FIRST = ("test_paper_smoke.py", "test_slurm.py", "test_workflow.py")


def pytest_collection_modifyitems(items) -> None:
    def rank(item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the files' own order otherwise


# The whole study at toy size (mlp, 60 training images), on top of config/config.yaml.
TINY_CONFIG = {
    "data": {"train_subset": 60, "test_subset": 20, "pretrain_subset": 30},
    "lossless": {
        "models": ["mlp"],
        "runs": 2,
        "epochs": 2,
        "threads": 1,
        "batch_size": 16,
        "test_images": None,
        "fit": {"families": ["norm", "laplace", "gennorm"], "kinds": ["epoch_avg"]},
    },
    "lossy": {
        "models": ["mlp"],
        "rounds": 2,
        "local_epochs": 1,
        "batch_size": 16,
        "test_images": 12,
        "one_round": {"reference": "none", "seeds": [0, 1], "rounds": 2, "variants": None},
        "warm_start": {"epochs": 1, "batch_size": 16, "seeds": [0, 1]},
        "verdicts": {"questions": [{"test": "gennorm", "M": 2, "reference": "uniform"}]},
        "full_runs": None,
        "distortion_study": {
            "compressor": "gennorm",
            "rate": 2,
            "M": 2,
            "tensor": "fc1.weight",
            "rates": [1, 2],
        },
        "compressors": [
            {"name": "dense", "quantizer": "none", "sparsifier": "none"},
            {"name": "none", "quantizer": "none"},
            {"name": "uniform", "quantizer": "uniform", "rates": [2, 3]},
            {
                "name": "gennorm",
                "quantizer": "lloyd",
                "family": "gennorm",
                "rates": [2],
                "M": [0, 2],
            },
        ],
    },
    "figures": {"y4": {"tensors": ["fc1.weight", "fc2.weight"]}},
    "device": "cpu",
}


def run_snakemake(
    workdir: Path, *args: str, targets=(), check: bool = True, timeout: float = 1800
) -> subprocess.CompletedProcess:
    """Run the workflow in ``workdir``; ``targets`` go first (``--configfile`` takes several
    values and would swallow them). Raises AssertionError with the log tail on failure."""
    proc = subprocess.run(
        [*SNAKEMAKE, "--directory", str(workdir), *targets, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        cwd=workdir,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


def shared_config(tree: Path) -> dict:
    """TINY_CONFIG on the image folder ``tree``, plus what the other workflow-level tests need
    of one run: docs/extending.md's model ``wide`` (paper L's runs beside the mlp's, with
    fc2.weight alone dumped, so that its training job streams the coding; paper Y's study
    on it alone, as that page's config file has it), that page's compressor ``mine`` (in the
    one-round study, no full runs: SHARED_TARGETS names one) and docs/coders.md's own coder
    beside every built-in."""
    from gradcomp.coding.registry import coder_specs

    config = copy.deepcopy(TINY_CONFIG)
    user = yaml.safe_load(next(b for b in doc_blocks("extending.md") if b.startswith("# mine")))
    more = yaml.safe_load(doc_blocks("extending.md", "yaml")[0])["lossy"]["more_compressors"]
    documented = yaml.safe_load(doc_blocks("coders.md", "yaml")[0])["lossless"]["coding"]
    lossless, lossy = config["lossless"], config["lossy"]
    config["cifar10"] = str(tree)
    config["user_models"] = user["user_models"]
    lossless["models"] = ["mlp", *user["lossless"]["models"]]
    lossless["dump_tensors"] = {"wide": ["fc2.weight"]}
    lossy["models"] = user["lossy"]["models"]
    lossy["distortion_study"]["tensor"] = user["lossy"]["distortion_study"]["tensor"]
    config["figures"]["y4"] = user["figures"]["y4"]
    families = lossless.get("coding", {}).get("families", ("gennorm", "norm", "laplace"))
    builtin = [spec.name for spec in coder_specs(None, families)]
    own = [c for c in documented["coders"] if not isinstance(c, str)]
    lossless["coding"] = {"coders": [*builtin, *own]}
    lossy["full_runs"] = [c["name"] for c in lossy["compressors"]]  # the tiny ones only
    lossy["compressors"] = [*lossy["compressors"], *more]
    return config


SHARED_TARGETS = (
    "all",
    "results/lossy/wide/mine/R3_M0/seed0/uplink.tsv",  # a full run of the user compressor
)


def write_user_modules(work: Path) -> None:
    """docs/extending.md's model and compressor, docs/coders.md's coder, as the docs give
    them, into ``work`` (the workflow's folder puts them on its path)."""
    (work / "mymodels.py").write_text(
        next(b for b in doc_blocks("extending.md") if b.startswith("# mymodels.py"))
    )
    (work / "mycompressors.py").write_text(doc_blocks("extending.md", "python")[0])
    (work / "mycoders.py").write_text(doc_blocks("coders.md", "python")[0])


def build_shared_run(work: Path) -> None:
    work.mkdir(parents=True)
    tree = write_imagefolder_tree(work / "cifar", n_train=100, n_test=40)
    write_user_modules(work)
    (work / "tiny.yaml").write_text(yaml.safe_dump(shared_config(tree)))
    # 60 jobs: about as long as the paper smoke on a busy machine, hence its timeout
    run_snakemake(
        work, "--cores", "2", "--configfile", "tiny.yaml", targets=SHARED_TARGETS, timeout=3000
    )


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory) -> Path:
    """The folder of one workflow run (shared_config, SHARED_TARGETS) that the workflow-level
    tests read: built once per pytest run. Under xdist every worker's temporary folder sits in
    one folder per run; the first worker to ask builds it there under a file lock, the other
    waits and reads it (a failed build is not repeated: its error is raised again).
    GRADCOMP_SHARED_RUN=<folder> reads a finished run there instead (build_shared_run's),
    to rerun the checks without the build."""
    if os.environ.get("GRADCOMP_SHARED_RUN"):
        return Path(os.environ["GRADCOMP_SHARED_RUN"])
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by this run's workers, and by no other run
    work, failed = base / "shared_run", base / "shared_run.failed"
    with FileLock(str(base / "shared_run.lock")):
        if failed.exists():
            raise AssertionError(failed.read_text())
        if not work.exists():
            try:
                build_shared_run(work)
            except Exception as err:
                failed.write_text(f"the shared run failed: {err}")
                raise
    return work


def planned_rules(proc: subprocess.CompletedProcess) -> set[str]:
    """Rule names of the jobs a dry run lists (its "Job stats" table)."""
    text = proc.stdout + proc.stderr
    table = text[text.index("Job stats:") :].splitlines()[3:]
    rules = set()
    for line in table:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        rules.add(parts[0])
    return rules


def planned_wildcards(proc: subprocess.CompletedProcess, rule: str) -> list[dict[str, str]]:
    """The wildcards of every job of ``rule`` that a dry run lists."""
    jobs = (proc.stdout + proc.stderr).split(f"rule {rule}:")[1:]
    out = []
    for job in jobs:
        line = next(x for x in job.splitlines() if x.strip().startswith("wildcards:"))
        pairs = line.split("wildcards:", 1)[1].split(",")
        out.append(dict(p.strip().split("=", 1) for p in pairs))
    return out


def doc_blocks(page: str, language: str = r"\w+") -> list[str]:
    """The bodies of the fenced blocks of ``docs/<page>`` in ``language`` (a regex; any by
    default), in order: the examples the docs' tests run as given."""
    text = (REPO / "docs" / page).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def assert_readable(fig) -> None:
    """Every visible text of ``fig`` (titles, labels, tick labels, legends) is at least 8 pt
    at the saved size, and no two tick labels of one axis overlap (measured on the drawn
    figure). Planted bugs that fail it: a legend at 6 pt, Y2's log-axis tick labels at
    every decade of a narrow panel."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    small = [
        (t.get_text()[:30], t.get_fontsize())
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < 8
    ]
    assert not small, f"text under 8 pt: {small[:5]}"
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            boxes = [
                t.get_window_extent(renderer)
                for t in axis.get_ticklabels()
                if t.get_visible() and t.get_text().strip()
            ]
            for a, b in zip(boxes, boxes[1:], strict=False):
                assert not a.overlaps(b), f"tick labels overlap on {ax.get_title()!r}"


def assert_drawn_figure(png: Path) -> None:
    """``png`` (and the PDF beside it) hold a drawn figure: at least 400 x 250 pixels, not
    blank (over 2% of the pixels away from white) and with data in colour (over 0.1% of the
    pixels saturated: every figure draws its data in colours, axes and text in greys).

    Planted bugs that fail it: ``save_figure`` clearing the figure before saving (blank), or
    a plotting function that draws axes and labels but no data (no coloured pixel).
    """
    import matplotlib.image

    rgb = matplotlib.image.imread(png)[..., :3].astype(float)
    height, width = rgb.shape[:2]
    assert width >= 400 and height >= 250, (png.name, rgb.shape)
    assert (rgb.min(axis=-1) < 0.9).mean() > 0.02, f"{png.name} is blank"
    saturation = rgb.max(axis=-1) - rgb.min(axis=-1)
    assert (saturation > 0.25).mean() > 0.001, f"{png.name} has no coloured data"
    pdf = png.with_suffix(".pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and len(pdf) > 1000


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
    return make_tiny_cifar()


def make_tiny_cifar() -> Cifar10:
    """:func:`tiny_cifar`'s data, for module-scoped fixtures."""
    gen = torch.Generator().manual_seed(0)

    def split(n):
        labels = torch.arange(n) % len(CLASSES)
        base = (labels.float() * 25).view(-1, 1, 1, 1)
        noise = torch.randint(0, 40, (n, 3, 32, 32), generator=gen).float()
        return (base + noise).clamp(0, 255).to(torch.uint8), labels

    train_images, train_labels = split(200)
    test_images, test_labels = split(50)
    return Cifar10(train_images, train_labels, test_images, test_labels, "synthetic")
