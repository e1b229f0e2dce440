"""Whole-model coding in the training job (lossless.coding.stream) against the dumps' path.

The reference is the workflow's other path, run separately here: full dumps written to
safetensors, fitted by ``fit_run`` into a fit table, coded by ``code_run`` from that table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, make_tiny_cifar
from gradcomp.coding.registry import coder_specs
from gradcomp.lossless.code_lossless import CODING_COLUMNS, code_lossless, code_run
from gradcomp.lossless.dumps import read_dump
from gradcomp.lossless.fit_lossless import fit_run
from gradcomp.lossless.paper_l_tables import coding_rate_table
from gradcomp.lossless.stream import StreamSettings
from gradcomp.lossless.train import TrainSettings, train_with_dumps
from gradcomp.models import build_model
from gradcomp.study.lossless import streams

FAMILIES = ("gennorm", "norm", "laplace")
# one coder or bound of every kind (the whole registry takes ~4x longer on fc1's 98k entries)
CODERS = (
    "fp8", "zstd", "lzma_shuffled", "huffman_gennorm", "huffman_laplace", "xent_norm",
    "ans_gennorm", "huffman_empirical", "entropy", "ans_gennorm_channel", "entropy_channel",
    "ans_context", "entropy_context",
)  # fmt: skip
STREAM_SPECS = coder_specs(CODERS, FAMILIES)
# the coders with slip rows too: those whose signs are raw bits (not fp8, zstd, lzma_shuffled,
# ans_context, entropy_context, which code their signs inside their streams)
RAW_SIGNS = {
    "huffman_gennorm", "huffman_laplace", "xent_norm", "ans_gennorm", "huffman_empirical",
    "entropy", "ans_gennorm_channel", "entropy_channel",
}  # fmt: skip
ROWS = len(CODERS) + len(RAW_SIGNS)  # per tensor, epoch and scaling: exact, then slip rows
# every tensor's streams (sample: all), so that every row equals the dumps' coding
STREAM = StreamSettings(
    families=FAMILIES,
    scalings=("none", "amax"),
    coders=tuple(STREAM_SPECS),
    verify=True,
    skip_below=256,
    sample_tensors=None,
    sample_epochs=None,
)
EPOCHS = 2


def train(tmp: Path, dump_tensors=("*",), stream: StreamSettings | None = STREAM) -> Path:
    settings = TrainSettings(
        model="mlp", seed=3, epochs=EPOCHS, batch_size=32, threads=1, dump_tensors=dump_tensors
    )
    train_with_dumps(
        make_tiny_cifar(), settings,
        dump_paths=[tmp / f"grads/epoch{e}.safetensors" for e in range(1, EPOCHS + 1)],
        log_path=tmp / "log.tsv", state_dir=tmp / "state", stream=stream,
        coded_path=tmp / "coded_all.tsv",
    )  # fmt: skip
    return tmp


def dumps(run: Path) -> list[Path]:
    return [run / f"grads/epoch{e}.safetensors" for e in range(1, EPOCHS + 1)]


def code_from_dumps(run: Path) -> pd.DataFrame:
    """fit_lossless then code_lossless, as the workflow runs them (fit table through a TSV;
    every family fitted, as lossless.fit.families, of which the coders use three)."""
    fits = fit_run(
        dumps(run), model="mlp", run=3, families=["norm", "laplace", "gennorm", "dweibull"],
        floc=None, skip_below=256, kinds=["epoch_avg"],
    )  # fmt: skip
    fits.to_csv(run / "fits.tsv", sep="\t", index=False)
    return code_run(
        dumps(run), pd.read_csv(run / "fits.tsv", sep="\t"), model="mlp", run=3,
        families=FAMILIES, scalings=STREAM.scalings, coders=STREAM_SPECS, verify=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, object]:
    """Three trainings of the same seed: every tensor dumped and streamed, no streaming,
    one tensor dumped and every tensor streamed; and the coding of the first from its dumps."""
    out = {
        "all": train(tmp_path_factory.mktemp("all")),
        "plain": train(tmp_path_factory.mktemp("plain"), stream=None),
        "one": train(tmp_path_factory.mktemp("one"), dump_tensors=("fc2.weight",)),
    }
    return {**out, "reference": code_from_dumps(out["all"])}


KEY = ["epoch", "kind", "tensor", "scaling", "accounting", "coder"]


@pytest.mark.slow
def test_streamed_rows_equal_the_dumps_coding_for_every_tensor(runs) -> None:
    """Every row of coded_all.tsv equals code_lossless's row from the full dump and fit
    table (same coders, same fits): bits, counts and shares, exactly.

    Planted bugs that fail it: streaming the last-batch gradient instead of the epoch
    average, the slip factor applied with n_batches off by one, fits with loc fixed at 0,
    a skip_below filter of ``>`` instead of ``>=`` (fc2.weight has 320 entries: kept),
    or coding gradients before the epoch's last batch was added."""
    streamed = pd.read_csv(runs["all"] / "coded_all.tsv", sep="\t")
    reference = runs["reference"]
    assert list(streamed.columns) == list(CODING_COLUMNS)
    model = build_model("mlp", seed=0)
    big = sorted(n for n, p in model.named_parameters() if p.numel() >= 256)
    assert sorted(set(streamed["tensor"])) == big == ["fc1.weight", "fc2.weight"]
    assert len(streamed) == EPOCHS * len(big) * 2 * ROWS
    slip = streamed[streamed["accounting"] == "slip"]
    assert set(slip["coder"]) == RAW_SIGNS
    left = streamed.sort_values(KEY).reset_index(drop=True)
    right = reference.sort_values(KEY).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right, check_dtype=False, check_exact=True)


@pytest.mark.slow
def test_streaming_leaves_the_dumps_unchanged(runs) -> None:
    """The same seed with and without streaming writes the same dump bytes (planted bug:
    the streamer drawing from torch's random stream, or the dump taking every tensor)."""
    for e in range(1, EPOCHS + 1):
        path = f"grads/epoch{e}.safetensors"
        assert (runs["all"] / path).read_bytes() == (runs["plain"] / path).read_bytes()
    plain = pd.read_csv(runs["plain"] / "coded_all.tsv", sep="\t")
    assert list(plain.columns) == list(CODING_COLUMNS) and plain.empty
    assert read_dump(runs["one"] / "grads/epoch1.safetensors").names == ["fc2.weight"]


@pytest.mark.slow
def test_t1_covers_every_tensor_with_one_dumped_tensor(runs, tmp_path: Path) -> None:
    """dump_tensors = [fc2.weight]: code_lossless adds the streamed fc1.weight, so T1's
    entries per (coder, scaling, accounting) are every coded tensor of every epoch (the
    model's own sizes) and T1 equals the full-dump run's T1.

    Planted bugs that fail it: code_lossless ignoring coded_all.tsv (T1 from 320 entries),
    or adding the streamed rows of fc2.weight too (its entries counted twice)."""
    one = runs["one"]
    fits = fit_run(
        dumps(one), model="mlp", run=3, families=list(FAMILIES), floc=None,
        skip_below=256, kinds=["epoch_avg"],
    )  # fmt: skip
    assert set(fits["tensor"]) == {"fc2.weight"}
    fits.to_csv(tmp_path / "fits.tsv", sep="\t", index=False)
    coding = code_lossless(
        dumps(one), tmp_path / "fits.tsv", tmp_path / "coding.tsv",
        streamed_tsv=one / "coded_all.tsv", model="mlp", run=3, families=FAMILIES,
        scalings=STREAM.scalings, coders=STREAM_SPECS, verify=True,
    )  # fmt: skip
    sizes = {n: p.numel() for n, p in build_model("mlp", seed=0).named_parameters()}
    entries = coding.groupby(["scaling", "accounting", "coder"])["numel"].sum()
    expected = EPOCHS * sum(n for n in sizes.values() if n >= 256)
    assert (entries == expected).all() and len(entries) == 2 * ROWS
    full = runs["reference"]
    t1_one, t1_full = coding_rate_table(coding), coding_rate_table(full)
    pd.testing.assert_frame_equal(
        t1_one.reset_index(drop=True), t1_full.reset_index(drop=True), check_exact=False
    )
    assert np.isfinite(t1_one["bits_per_entry_mean"]).all()


@pytest.mark.slow
def test_merge_refuses_streamed_rows_of_other_coders(runs, tmp_path: Path) -> None:
    streamed = pd.read_csv(runs["one"] / "coded_all.tsv", sep="\t")
    # a coder of the counts (every tensor has it): missing, the settings differed
    streamed = streamed[streamed["coder"] != "huffman_gennorm"]
    streamed.to_csv(tmp_path / "c.tsv", sep="\t", index=False)
    fits = fit_run(dumps(runs["one"]), model="mlp", run=3, families=list(FAMILIES),
                   floc=None, skip_below=256, kinds=["epoch_avg"])  # fmt: skip
    fits.to_csv(tmp_path / "fits.tsv", sep="\t", index=False)
    with pytest.raises(ValueError, match=r"c\.tsv.*coder.*huffman_gennorm"):
        code_lossless(
            dumps(runs["one"]), tmp_path / "fits.tsv", tmp_path / "coding.tsv",
            streamed_tsv=tmp_path / "c.tsv", model="mlp", run=3, families=FAMILIES,
            scalings=STREAM.scalings, coders=STREAM_SPECS,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("stream", "patterns", "expected"),
    [
        ("auto", None, False),
        ("auto", ["*"], False),
        ("auto", ["conv2.weight"], True),
        ("auto", ["*.weight"], True),
        (True, None, True),
        (False, ["conv2.weight"], False),
    ],
)
def test_stream_auto_is_on_when_dumps_are_restricted(stream, patterns, expected) -> None:
    lossless = {"coding": {"stream": stream}, "dump_tensors": {}}
    if patterns is not None:
        lossless["dump_tensors"]["cnn"] = patterns
    assert streams(lossless, "cnn") is expected


# docs/extending.md's model: fc1.weight 64 x 3072, fc2.weight 10 x 64
WIDE_SIZES = {"fc1.weight": 64 * 3 * 32 * 32, "fc2.weight": 10 * 64}


@pytest.mark.slow
def test_workflow_with_one_dumped_tensor_codes_the_whole_model(shared_run: Path) -> None:
    """The shared run's model ``wide`` has lossless.dump_tensors = [fc2.weight] (stream:
    auto, the default sample: every coder's stream for the first tensor of epoch 1): the
    training job writes coded_all.tsv with every tensor, code_lossless's coding.tsv (and
    so T1 and L5) covers both weight tensors of every epoch with the coders that follow
    from the counts, and fc1.weight of epoch 1 with every coder; its fc2.weight rows
    (coded from the dump) equal the streamed ones where those were streams.

    Planted bugs that fail it: the train rule not passing the stream settings (coded_all
    empty), code_lossless not reading coded_all.tsv (coding.tsv without fc1.weight), or
    the sample ignored (every coder on every tensor)."""
    fc1, fc2 = WIDE_SIZES["fc1.weight"], WIDE_SIZES["fc2.weight"]
    run = shared_run / "results/lossless/wide/run0"
    assert read_dump(run / "grads/epoch1.safetensors").names == ["fc2.weight"]
    streamed = pd.read_csv(run / "coded_all.tsv", sep="\t")
    coding = pd.read_csv(run / "coding.tsv", sep="\t")
    counted = set(coding.loc[coding["length"] == "counts", "coder"])
    assert {"fp8", "huffman_gennorm", "entropy", "entropy_channel"} <= counted
    assert {"ans_context", "zstd", "entropy_context"}.isdisjoint(counted)
    for table, fc2_stream_epochs in ((streamed, 0), (coding, 2)):
        assert set(table["tensor"]) == {"fc1.weight", "fc2.weight"}
        exact_rows = table[table["accounting"] == "exact"]
        entries = exact_rows.groupby(["coder"])["numel"].sum() / 2  # 2 scalings
        everywhere = entries[entries.index.isin(counted)]
        assert (everywhere == 2 * (fc1 + fc2)).all()
        sampled = entries[~entries.index.isin(counted)]
        assert (sampled == fc1 + fc2_stream_epochs * fc2).all() and len(sampled) > 5
    # fc2.weight: the streamed rows (from its counts) against the dump's (its streams)
    fc2_rows = streamed[streamed["tensor"] == "fc2.weight"].merge(
        coding[coding["tensor"] == "fc2.weight"], on=KEY, suffixes=("", "_dump")
    )
    # 2 epochs x 2 scalings, exact rows of every counted coder, slip rows of all but fp8
    assert len(fc2_rows) == 2 * 2 * (2 * len(counted) - 1)
    assert set(fc2_rows["length"]) == {"counts"}
    exact = ~fc2_rows["coder"].str.startswith("ans_")
    for column in ("payload_bits", "side_bits", "n_nonzero", "n_saturated", "zero_share"):
        assert (fc2_rows.loc[exact, column] == fc2_rows.loc[exact, f"{column}_dump"]).all(), column
    assert ((fc2_rows["payload_bits"] - fc2_rows["payload_bits_dump"]).abs() <= 64).all()
    t1 = pd.read_csv(shared_run / "results/tables/T1.tsv", sep="\t")
    t1 = t1[t1["model"] == "wide"]
    assert set(t1["coder"]) == set(coding["coder"]) and (t1["runs"] == 2).all()
    assert (shared_run / "results/figures/L5_wide.png").stat().st_size > 10_000


WORKER_SCRIPT = """
import sys
import numpy as np
import torch
from gradcomp.coding.registry import coder_specs
from gradcomp.lossless.stream import GradientStreamer, StreamSettings

with open(sys.argv[1] + ".starts", "a") as fh:  # top level, no main guard: as a Snakemake job
    fh.write("start\\n")
torch.set_num_threads(2)
torch.ones(1000, 1000) @ torch.ones(1000, 1000)  # a threaded torch before the workers start
rng = np.random.default_rng(5)
sizes = {"a.weight": (40, 30), "b.bias": (8,), "c.weight": (300,), "d.weight": (20, 20)}
grads = {n: rng.laplace(scale=1e-3, size=s).astype(np.float32) for n, s in sizes.items()}
coders = tuple(coder_specs(["fp8", "huffman_gennorm", "entropy"], ["gennorm"]))
settings = StreamSettings(families=("gennorm",), coders=coders)
workers = int(sys.argv[2])
with GradientStreamer(settings, model="m", run=0, workers=workers) as streamer:
    table = streamer.code({"epoch_avg": grads, "last_batch": grads}, epoch=4, n_batches=3)
table.to_csv(sys.argv[1], sep="\\t", index=False)
"""


@pytest.mark.slow
def test_worker_processes_give_the_rows_in_model_order(tmp_path: Path) -> None:
    """workers = 2, started from an unguarded script (as a Snakemake job's script) after
    torch ran threaded, returns the rows of workers = 1, in the model's order, and runs the
    script once. Planted bugs that fail it: spawned workers (each re-runs the script),
    rows gathered in completion order, or heads zipped to other jobs."""
    import os
    import subprocess
    import sys

    script = tmp_path / "job.py"
    script.write_text(WORKER_SCRIPT)
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.tsv"
        subprocess.run(
            [sys.executable, str(script), str(out), str(workers)],
            check=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        )
        assert (tmp_path / f"w{workers}.tsv.starts").read_text() == "start\n"
        tables.append(pd.read_csv(out, sep="\t"))
    pd.testing.assert_frame_equal(*tables, check_exact=True)
    assert list(dict.fromkeys(tables[1]["tensor"])) == ["a.weight", "c.weight", "d.weight"]
    fp8 = tables[1][tables[1]["coder"] == "fp8"]
    assert (fp8["numel"] == [1200, 300, 400]).all()  # exact only: its signs are in its bytes
    huffman = tables[1][tables[1]["coder"] == "huffman_gennorm"]
    assert (huffman["numel"] == [1200, 1200, 300, 300, 400, 400]).all()  # exact, slip
