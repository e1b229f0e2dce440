"""Code lengths from symbol counts (gradcomp.coding.counts) against the coders' own streams,
and the sampled whole-model coding built on them (lossless.coding.sample).

References: ``grid.encode`` (searchsorted on the signed midpoints) for the counts, the
coders' real bitstreams (``code_tensor`` with streams) for the sizes, bitarray's
``canonical_huffman`` for the optimality of the Huffman lengths.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch
from bitarray.util import canonical_huffman

import gradcomp.coding.counts as counts_module
from gradcomp.coding.base import TensorSymbols
from gradcomp.coding.counts import SymbolCounts, bin_index, is_counted, tensor_counts
from gradcomp.coding.huffman_lengths import huffman_lengths
from gradcomp.coding.registry import builtin_specs, coder_specs
from gradcomp.distributions import fit_all
from gradcomp.lossless.code_lossless import code_values, coding_table, merge_streamed
from gradcomp.lossless.paper_l_tables import coding_rate_table, table_t1
from gradcomp.lossless.stream import GradientStreamer, StreamSettings
from gradcomp.quantization.grids import get_grid
from gradcomp.study.lossless import stream_settings

FAMILIES = ("gennorm", "norm", "laplace")
COUNTED = [s for s in builtin_specs(FAMILIES).values() if is_counted(s.cls)]


def gradient(shape=(24, 75), seed=0) -> np.ndarray:
    """GenNorm(0.8) float32 entries with exact zeros, entries beyond FP8 E5M2's largest
    value (57344) and entries exactly on midpoints of both signs (the grid's ties)."""
    rng = np.random.default_rng(seed)
    v = scipy.stats.gennorm.rvs(0.8, scale=1e-4, size=shape, random_state=rng)
    grid = get_grid("fp8_e5m2")
    flat = v.reshape(-1)
    ties = rng.choice(grid.midpoints, 40)
    flat[:40] = ties
    flat[40:50] = [0.0, -0.0, 6e4, -1e5, 57344.0, 61440.0, -61440.0, 1e-9, -(2**-17), 2**-17]
    return v.astype(np.float32)


#: Where the counts are taken: the CPU's cell table; ``bucketize`` and ``bincount`` as on a
#: training device, on the CPU with the cell table switched off (the same torch calls) and
#: on a CUDA tensor where there is a GPU.
PATHS = [
    "cell-table",
    "bucketize",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    ),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("scale", [1.0, 2.0**-20, 2.0**7])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_counts_are_those_of_grid_encode(path, scale, dtype, monkeypatch) -> None:
    """Per-row magnitude counts, non-zero and saturated entries equal those of the grid's
    own quantizer, ties and saturation included, on every counting path (:data:`PATHS`;
    a CUDA tensor's bin indices stay on the device). Planted bugs that fail it: bucketize
    with right=True, ties of negative entries away from zero; saturated entries dropped."""
    grid = get_grid("fp8_e5m2", scale=scale)
    v = gradient().astype(np.float64) * scale
    symbols, n_saturated = grid.encode(v)
    reference = SymbolCounts.of_symbols(TensorSymbols(symbols, grid))
    tensor = torch.from_numpy(v).to(dtype)
    if path == "cuda":
        tensor = tensor.cuda()
        assert bin_index(tensor.abs().double(), grid.magnitude_edges[1:-1]).is_cuda
    elif path == "bucketize":
        monkeypatch.setattr(counts_module, "_cell_tables", lambda raw: (None, None))
    counts, saturated = tensor_counts(tensor, grid)
    if dtype == torch.float32:  # the float32 tensor holds the same values
        assert np.array_equal(v.astype(np.float32), v)
    np.testing.assert_array_equal(counts.rows, reference.rows)
    assert counts.n_nonzero == reference.n_nonzero == np.count_nonzero(grid.decode(symbols))
    assert saturated == n_saturated >= 4


def code(values: np.ndarray, *, streams: bool, coders=COUNTED) -> pd.DataFrame:
    fits = fit_all(values, FAMILIES)
    rows = code_values(
        values.astype(np.float64) if streams else torch.from_numpy(values).double(),
        fits, kind="epoch_avg", n_batches=7, accountings=("exact", "slip"),
        scalings=("none", "amax"), coders=coders, verify=True, streams=streams,
    )  # fmt: skip
    return pd.DataFrame(rows).set_index(["scaling", "accounting", "coder"])


def test_rows_from_counts_equal_the_streams_rows() -> None:
    """Every coder and bound that follows from the counts states, from them, the bits of
    its real bitstream (or its own bound) on the same tensor, in every scaling and
    accounting: Huffman codes and fp8 exactly, i.i.d. ANS within one 32-bit word."""
    values = gradient((40, 90), seed=1)
    streamed, counted = code(values, streams=True), code(values, streams=False)
    assert set(counted["length"]) == {"counts"}
    assert set(streamed["length"]) == {"stream", "counts"}
    raw = [s for s in COUNTED if s.cls.raw_signs]  # the slip rows: raw-sign coders only
    assert 0 < len(raw) < len(COUNTED) and "fp8" not in {s.name for s in raw}
    assert len(counted) == 2 * len(COUNTED) + 2 * len(raw) == len(streamed)
    exact = [i for i in counted.index if not i[2].startswith("ans_")]
    columns = [c for c in counted.columns if c != "length"]
    pd.testing.assert_frame_equal(
        counted.loc[exact, columns], streamed.loc[exact, columns], check_exact=True
    )
    ans = [i for i in counted.index if i[2].startswith("ans_")]
    gap = counted.loc[ans, "payload_bits"] - streamed.loc[ans, "payload_bits"]
    assert len(ans) == 4 and (gap.abs() <= 64 + 2e-4 * streamed.loc[ans, "payload_bits"]).all()
    assert (counted.loc[ans, "side_bits"] == streamed.loc[ans, "side_bits"]).all()


@pytest.mark.parametrize("scale", [1.0, 2.0**-20, 2.0**12])
def test_bin_index_is_bucketize(scale) -> None:
    """The cell-table bin index equals ``torch.bucketize`` on the FP8 grid's magnitude
    midpoints at three power-of-two scales, at every bound, one ulp either side of it, zero,
    the smallest subnormal, +inf and 1e308 (planted bugs that fail it: ``>=`` for ``>``, the
    bounds below a cell counted with ``side="right"``, which counts a bound on a cell's
    first float twice); bounds two to a cell fall back to ``bucketize``."""
    rng = np.random.default_rng(5)
    grid = get_grid("fp8_e5m2", scale=scale)
    bounds = np.append(grid.magnitude_edges[1:-1], grid.levels[-1])
    x = np.concatenate([
        np.abs(rng.standard_normal(20_000)) * 10 ** rng.uniform(-12, 6, 20_000) * scale,
        bounds, np.nextafter(bounds, np.inf), np.nextafter(bounds, 0.0),
        [0.0, np.inf, 5e-324, 1e308],
    ])  # fmt: skip
    x = torch.as_tensor(x[: x.size // 4 * 4]).reshape(-1, 4)
    for b in (bounds, np.array([1.0, 1.0 + 2**-52, 3.0])):
        got = bin_index(x, b)
        assert got.dtype == torch.int64 and got.shape == x.shape
        assert torch.equal(got, torch.bucketize(x, torch.as_tensor(b), right=False))


def test_huffman_lengths_are_optimal() -> None:
    """Same expected length as bitarray's canonical_huffman (an independent Huffman
    construction), Kraft sum at most 1, no codeword for a zero weight, on weights with
    many ties (planted bugs that fail it: the heavier of two nodes picked first, or a
    merged node's weight taken from one child)."""
    rng = np.random.default_rng(2)
    for case in range(300):
        w = rng.random(int(rng.integers(1, 260))) ** rng.uniform(0.5, 10)
        w[rng.random(w.size) < 0.2] = 0.0
        if case % 2:
            w = np.round(w * 4)  # ties
        support = np.flatnonzero(w > 0)
        if support.size == 0:
            continue
        lengths = huffman_lengths(w)
        np.testing.assert_array_equal(lengths > 0, w > 0)
        assert (2.0 ** -lengths[support]).sum() <= 1 + 1e-12
        if support.size == 1:
            assert lengths[support[0]] == 1
            continue
        words, _, _ = canonical_huffman(
            dict(zip(support.tolist(), w[support].tolist(), strict=True))
        )
        reference = sum(w[s] * len(word) for s, word in words.items())
        assert lengths @ w == pytest.approx(reference, rel=1e-12, abs=1e-12)


def test_sampled_tensors_are_spread_from_first_to_last() -> None:
    settings = StreamSettings(families=FAMILIES, sample_tensors=3, sample_epochs=(1, 4))
    assert settings.sampled(1, 10) in ({0, 4, 9}, {0, 5, 9})
    assert settings.sampled(4, 2) == {0, 1} and settings.sampled(2, 10) == set()
    assert StreamSettings(families=FAMILIES, sample_tensors=1).sampled(1, 5) == {0}
    assert StreamSettings(families=FAMILIES, sample_tensors=0).sampled(1, 5) == set()
    every = StreamSettings(families=FAMILIES, sample_tensors=None, sample_epochs=None)
    assert every.sampled(7, 4) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="sample_tensors"):
        StreamSettings(families=FAMILIES, sample_tensors=-1)


def test_the_study_reads_the_sample() -> None:
    lossless = {
        "coding": {"families": list(FAMILIES), "grid": "fp8_e5m2", "kinds": ["epoch_avg"],
                   "accountings": ["exact"], "scalings": ["none"], "general_purpose": False,
                   "coders": None, "verify": True, "sample": {"tensors": None, "epochs": [2]}},
        "fit": {"floc": None, "zero_atom": True, "skip_below": 256},
    }  # fmt: skip
    settings = stream_settings(lossless, ())
    assert settings.sample_tensors is None and settings.sample_epochs == (2,)
    del lossless["coding"]["sample"]
    assert stream_settings(lossless, ()).sample_epochs == (1,)


CODERS = ("fp8", "zstd", "huffman_gennorm", "ans_gennorm", "huffman_empirical", "entropy",
          "entropy_channel", "ans_context", "entropy_context")  # fmt: skip


@pytest.mark.slow
def test_streamer_codes_unsampled_tensors_from_their_counts() -> None:
    """sample {tensors: 1, epochs: [1]}: epoch 1's first tensor gets every coder's stream,
    the other tensors and epochs the rows of the counted coders only, equal (but for
    length, and ANS within a word) to those of the streamer that samples everything.
    Planted bugs that fail it: the sample applied to the wrong tensor, or stream-only
    coders left in the unsampled tensors' rows."""
    grads = {"a.weight": gradient((20, 30), 3), "b.weight": gradient((16, 40), 4),
             "c.bias": np.ones(10, dtype=np.float32)}  # fmt: skip
    tensors = {"epoch_avg": {n: torch.from_numpy(g) for n, g in grads.items()}}
    specs = coder_specs(CODERS, FAMILIES)
    kw = dict(families=FAMILIES, coders=specs, scalings=("none", "amax"), verify=True)
    tables = {}
    for name, sample in {"some": (1, (1,)), "all": (None, None)}.items():
        settings = StreamSettings(**kw, sample_tensors=sample[0], sample_epochs=sample[1])
        with GradientStreamer(settings, model="m", run=0) as streamer:
            tables[name] = pd.concat([streamer.code(tensors, epoch=e, n_batches=5) for e in (1, 2)])
    some, every = tables["some"], tables["all"]
    counted = {s.name for s in specs if is_counted(s.cls)}
    assert counted == {"fp8", "huffman_gennorm", "ans_gennorm", "huffman_empirical",
                       "entropy", "entropy_channel"}  # fmt: skip
    for (epoch, tensor), rows in some.groupby(["epoch", "tensor"]):
        sampled = (epoch, tensor) == (1, "a.weight")
        assert set(rows["coder"]) == (set(CODERS) if sampled else counted)
        assert ("stream" in set(rows["length"])) is sampled
    key = ["epoch", "tensor", "scaling", "accounting", "coder"]
    joined = some.merge(every, on=key, suffixes=("", "_all"))
    assert len(joined) == len(some)
    for column in ("payload_bits", "side_bits", "n_nonzero", "n_saturated", "n_exact_zero"):
        gap = (joined[column] - joined[f"{column}_all"]).abs()
        assert (gap <= np.where(joined["coder"] == "ans_gennorm", 32, 0)).all(), column


def test_t1_says_how_its_rows_were_obtained(tmp_path: Path) -> None:
    """The rows' ``length`` is carried into T1 (joined where a run mixes them), and T1's
    Markdown view with it stays readable (at most 10 columns; planted bug: one more column
    shown makes table_t1 raise)."""
    rows = []
    for tensor, length in (("a", "stream"), ("b", "counts")):
        for coder in ("huffman_gennorm", "ans_context"):
            if coder == "ans_context" and length == "counts":
                continue
            rows.append({"model": "m", "run": 0, "epoch": 1, "kind": "epoch_avg",
                         "tensor": tensor, "scaling": "none", "accounting": "exact",
                         "coder": coder, "length": length, "total_bits": 100.0,
                         "numel": 50, "n_nonzero": 40, "n_exact_zero": 0,
                         "n_saturated": 0})  # fmt: skip
    table = coding_rate_table(pd.DataFrame(rows))
    assert list(table.columns[:5]) == ["model", "scaling", "accounting", "coder", "length"]
    t1 = table.set_index("coder")
    assert t1.loc["huffman_gennorm", "length"] == "counts+stream"
    assert t1.loc["ans_context", "length"] == "stream"
    pd.DataFrame(rows).to_csv(tmp_path / "coding.tsv", sep="\t", index=False)
    table_t1([tmp_path / "coding.tsv"], tmp_path / "T1.tsv", tmp_path / "T1.md")
    header = (tmp_path / "T1.md").read_text().splitlines()[2]
    shown = [c.strip() for c in header.strip("|").split("|")]
    assert "length" in shown and len(shown) <= 10


def test_merge_accepts_streamed_rows_without_the_unsampled_coders() -> None:
    """The streamed table may lack a coder that needs a stream (no tensor sampled), not
    one that follows from the counts."""
    head = {
        "model": "m",
        "run": 0,
        "epoch": 1,
        "kind": "epoch_avg",
        "numel": 10,
        "scaling": "none",
        "accounting": "exact",
        "payload_bits": 1.0,
        "side_bits": 0,
    }
    coded = coding_table([{**head, "tensor": "a", "coder": c, "length": "stream"}
                          for c in ("huffman_gennorm", "ans_context")])  # fmt: skip
    streamed = coding_table([{**head, "tensor": "b", "coder": "huffman_gennorm",
                              "length": "counts"}])  # fmt: skip
    merged = merge_streamed(coded, streamed, kinds=["epoch_avg"], counted=["huffman_gennorm"])
    assert sorted(zip(merged["tensor"], merged["coder"], strict=True)) == [
        ("a", "ans_context"),
        ("a", "huffman_gennorm"),
        ("b", "huffman_gennorm"),
    ]
    with pytest.raises(ValueError, match="ans_context"):
        merge_streamed(coded, streamed, kinds=["epoch_avg"])
    with pytest.raises(ValueError, match="huffman_gennorm"):
        merge_streamed(coded, streamed.assign(coder="fp8"), kinds=["epoch_avg"],
                       counted=["huffman_gennorm", "fp8"])  # fmt: skip
