from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch

from gradcomp.distributions import GradientDataError
from gradcomp.lossless.dumps import read_dump, write_dump
from gradcomp.lossless.fit_lossless import FIT_COLUMNS, fit_run, fitted_from_row
from gradcomp.lossless.positions import tensor_positions


def make_dump(path: Path, epoch: int, tensors: dict[str, torch.Tensor]) -> Path:
    write_dump(
        path, {"epoch_avg": tensors, "last_batch": tensors}, {"epoch": epoch, "n_batches": 4}
    )
    return path


@pytest.fixture
def laplace_dumps(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(0)

    def t(*shape):
        return torch.from_numpy(rng.laplace(0, 1e-3, size=shape).astype(np.float32))

    tensors = {"a.weight": t(20, 30), "a.bias": t(20), "b.weight": t(40, 20), "c.weight": t(10, 40)}
    return [make_dump(tmp_path / f"epoch{e}.safetensors", e, tensors) for e in (1, 2)]


def test_default_and_configured_positions(laplace_dumps) -> None:
    dump = read_dump(laplace_dumps[0])
    assert tensor_positions(dump, skip_below=256) == {
        "lower": "a.weight", "middle": "b.weight", "upper": "c.weight",
    }  # fmt: skip
    chosen = tensor_positions(dump, skip_below=256, overrides={"middle": "a.weight"})
    assert chosen["middle"] == "a.weight"
    with pytest.raises(ValueError, match="not among the dumped tensors"):
        tensor_positions(dump, skip_below=256, overrides={"upper": "zzz"})
    with pytest.raises(ValueError, match="unknown tensor position"):
        tensor_positions(dump, skip_below=256, overrides={"top": "a.weight"})


def test_fit_run_rows_and_laplace_wins(laplace_dumps) -> None:
    table = fit_run(
        laplace_dumps,
        model="toy",
        run=3,
        families=["norm", "laplace", "gennorm"],
        floc=None,
        skip_below=256,
    )
    assert list(table.columns) == list(FIT_COLUMNS)
    # 2 epochs x 2 kinds x 3 fitted tensors (the bias is too small) x 3 families
    assert len(table) == 36 and "a.bias" not in set(table["tensor"])
    assert set(table["run"]) == {3}
    per_family = table.groupby("family")["loglik_per_entry"].mean()
    assert per_family["laplace"] > per_family["norm"]
    gennorm = table[table["family"] == "gennorm"]
    assert gennorm["beta"].between(0.7, 1.4).all()


def test_fitted_from_row_roundtrip(laplace_dumps) -> None:
    table = fit_run(
        laplace_dumps[:1],
        model="toy",
        run=0,
        families=["gennorm"],
        floc=0.0,
        skip_below=256,
        kinds=["epoch_avg"],
    )
    row = table.iloc[0]
    fitted = fitted_from_row(row)
    assert fitted.params == {"beta": row["beta"], "loc": 0.0, "scale": row["scale"]}
    expected = scipy.stats.gennorm(row["beta"], 0.0, row["scale"]).cdf(1e-3)
    assert fitted.cdf(1e-3) == pytest.approx(expected)


@pytest.mark.parametrize("live", [0, 1, 20])  # all zero, one or 20 equal non-zero entries
def test_bad_tensor_names_epoch_and_tensor(tmp_path: Path, live: int) -> None:
    bad = torch.zeros(30, 30)
    bad.view(-1)[:live] = 0.125
    path = make_dump(tmp_path / "epoch7.safetensors", 7, {"dead.weight": bad})
    with pytest.raises(GradientDataError, match=r"toy run1 epoch7 epoch_avg dead\.weight"):
        fit_run([path], model="toy", run=1, families=["norm"], floc=None, skip_below=10)


def test_exact_zeros_are_an_atom_and_bound_fits_are_flagged(tmp_path: Path, caplog) -> None:
    rng = np.random.default_rng(3)
    values = rng.laplace(0, 1e-3, size=(40, 50))
    values[:8] = 0.0  # 8 dead units of 50 inputs: 20% exact zeros
    tensor = torch.from_numpy(values.astype(np.float32))
    path = make_dump(tmp_path / "epoch2.safetensors", 2, {"fc.weight": tensor})
    kw = {"model": "toy", "run": 0, "families": ["gennorm"], "floc": None, "skip_below": 10}
    atom = fit_run([path], **kw).iloc[0]
    assert atom["p0"] == 0.2 and not atom["shape_at_bound"]
    assert 0.8 < atom["beta"] < 1.25
    assert fitted_from_row(atom).cdf(0.0) == pytest.approx(0.2 + 0.8 * 0.5, abs=0.02)
    with caplog.at_level("WARNING"):
        plain = fit_run([path], **kw, zero_atom=False).iloc[0]
    assert plain["p0"] == 0.0 and plain["shape_at_bound"] and plain["beta"] == 0.05
    assert "toy run0 epoch2 epoch_avg fc.weight" in caplog.text and "shape bound" in caplog.text
