"""The cost table (gradcomp.costs) from Snakemake benchmark files, and scripts/gpu_check.sh."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, write_imagefolder_tree
from gradcomp.costs import COLUMNS, cost_table, read_benchmarks, table_costs

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(root: Path, rel: str, seconds: float, rss: float, cpu: float) -> None:
    """One Snakemake benchmark file (the columns Snakemake 9 writes) at ``root/rel``."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:01\t{rss}\t1.0\t1.0\t1.0\t0\t0\t50\t{cpu}\n")


@pytest.fixture
def benchmarks(tmp_path: Path) -> Path:
    root = tmp_path / "benchmarks"
    bench(root, "prepare_cifar10/cifar10.tsv", 4.0, 500.0, 3.0)
    bench(root, "train_lossless/vgg16/run0.tsv", 10.0, 900.0, 19.0)
    bench(root, "train_lossless/vgg16/run1.tsv", 30.0, 700.0, 55.0)
    bench(root, "train_lossless/cnn/run0.tsv", 2.0, 300.0, 3.5)
    bench(root, "federated/cnn/gennorm/R4_M2/seed0.tsv", 5.0, 400.0, 5.0)
    bench(root, "warm_start/cnn.tsv", 7.0, 350.0, 6.0)
    return root


def test_rows_per_rule_and_model_by_hand(benchmarks: Path) -> None:
    """Sums, means and maxima worked out by hand from the six files. Planted bugs that fail
    it: the model taken from the first path part (the rule) or only from folders (warm_start's
    file stem), the largest memory summed instead of maxed, or mean and total swapped."""
    table = cost_table(benchmarks, {"vgg16", "cnn"}, images=100)
    assert list(table.columns) == COLUMNS
    rows = {(r.rule, r.model): r for r in table.itertuples()}
    assert set(rows) == {
        ("prepare_cifar10", ""), ("train_lossless", "vgg16"), ("train_lossless", "cnn"),
        ("federated", "cnn"), ("warm_start", "cnn"), ("all", ""),
    }  # fmt: skip
    vgg = rows[("train_lossless", "vgg16")]
    assert (vgg.jobs, vgg.seconds_mean, vgg.seconds_max, vgg.seconds_total) == (2, 20.0, 30.0, 40.0)
    assert (vgg.cpu_seconds_total, vgg.MB_max) == (74.0, 900.0)
    total = rows[("all", "")]
    assert total.jobs == 6 and total.seconds_total == 4 + 10 + 30 + 2 + 5 + 7
    assert total.MB_max == 900.0 and total.cpu_seconds_total == 3 + 19 + 55 + 3.5 + 5 + 6
    assert (table["images"] == 100).all()


def test_written_table_reads_back(benchmarks: Path, tmp_path: Path) -> None:
    """Planted bug: the Markdown written without the rows (only a header)."""
    table_costs(benchmarks, tmp_path / "c.tsv", tmp_path / "c.md", models=["vgg16"], images=7)
    back = pd.read_csv(tmp_path / "c.tsv", sep="\t", keep_default_na=False)
    assert len(back) == 6 and back["seconds_total"].iloc[-1] == 58.0
    assert (tmp_path / "c.md").read_text().count("\n| train_lossless | vgg16 | 2 | 7 |") == 1


def test_bad_benchmark_file_is_named(tmp_path: Path) -> None:
    """A file without Snakemake's columns, or with a non-number, is refused by name
    (planted bug: NaN seconds passed on into the sums)."""
    root = tmp_path / "b"
    (root / "x").mkdir(parents=True)
    (root / "x/a.tsv").write_text("foo\tbar\n1\t2\n")
    with pytest.raises(ValueError, match="a.tsv: not a Snakemake benchmark"):
        read_benchmarks(root, [])
    (root / "x/a.tsv").write_text(HEADER + "NA\t-\t1\t1\t1\t1\t0\t0\t0\t1\n")
    with pytest.raises(ValueError, match="a.tsv: s or max_rss is not a number"):
        read_benchmarks(root, [])
    with pytest.raises(ValueError, match="no benchmark file"):
        cost_table(tmp_path / "empty", [], images=1)


def gpu_check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", __import__("sys").executable)}
    return subprocess.run(
        ["bash", str(REPO / "scripts/gpu_check.sh"), *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=1800,
    )  # fmt: skip


@pytest.mark.slow
def test_gpu_check_dry_run_plans_the_five_jobs(tmp_path: Path) -> None:
    """--dry-run plans, under config/paper.yaml, data preparation, one training job per
    paper-L model and one federated run (planted bug: a model left out of the loop)."""
    # the dry run checks the data path and counts its images: a small image-folder tree
    data = write_imagefolder_tree(tmp_path / "cifar")
    proc = gpu_check(str(data), "--dry-run", "--workdir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    for model in ("resnet50v2", "densenet121", "vgg16"):
        assert f"results/benchmarks/train_lossless/{model}/run0.tsv" in out
    stats = out[out.index("Job stats:") :]
    for rule, n in (("prepare_cifar10", 1), ("train_lossless", 3), ("federated", 1)):
        assert any(line.split() == [rule, str(n)] for line in stats.splitlines()), stats
    assert "5/5 would run: OMP_NUM_THREADS=1" in out and "ddp_hook_check.py --device cuda" in out
    assert not gpu_check(cwd=tmp_path).returncode == 0  # no data path: usage, failure


@pytest.mark.slow
def test_gpu_check_tiny_mode_writes_the_cost_table(tmp_path: Path) -> None:
    """--tiny runs the same jobs on CPU on a tiny image-folder tree; the cost table has one
    row per job kind with positive times (planted bug: the table gathered before the jobs
    ran, or a benchmark path the table does not read)."""
    tree = write_imagefolder_tree(tmp_path / "cifar", n_train=100, n_test=20)
    work = tmp_path / "work"
    proc = gpu_check(str(tree), "--tiny", "--workdir", str(work), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    costs = pd.read_csv(work / "results/tables/costs.tsv", sep="\t", keep_default_na=False)
    pairs = set(zip(costs["rule"], costs["model"], strict=True))
    assert pairs == {
        ("prepare_cifar10", ""), ("train_lossless", "resnet50v2"),
        ("train_lossless", "densenet121"), ("train_lossless", "vgg16"), ("federated", "cnn"),
        ("all", ""),
    }  # fmt: skip
    assert (costs["seconds_total"] > 0).all() and (costs["MB_max"] > 0).all()
    assert (costs["images"] == 100).all()
    out = proc.stdout + proc.stderr  # step 5: the DDP hook's exchanges on a gloo group
    for exchange in ("allreduce", "bytes", "randomk", "powersgd", "sketch"):
        assert re.search(rf"ddp_hook_check gloo {exchange} .* ok, [\d,]+ wire bytes", out), out
    assert "FAILED" not in out
