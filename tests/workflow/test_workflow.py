"""End-to-end: the Snakemake workflow on a tiny config (tiny data made here): the run that the
workflow-level tests share (conftest.shared_run: paper L on the mlp and docs/extending.md's
model ``wide``, paper Y on ``wide``), dry runs from it, and small targeted runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import (
    REPO,
    SNAKEMAKE,
    TINY_CONFIG,
    assert_drawn_figure,
    planned_rules,
    planned_wildcards,
    run_snakemake,
    write_imagefolder_tree,
)
from gradcomp.lossless.dumps import read_dump

pytestmark = pytest.mark.slow


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run_snakemake(workdir, *args, check=check)


def tiny(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The tiny config again, one core, with extra arguments (e.g. -n)."""
    return snakemake(workdir, "--cores", "1", "--configfile", "tiny.yaml", *args, check=check)


@pytest.fixture(scope="module")
def tiny_workdir(shared_run: Path) -> Path:
    return shared_run


def private_copy(work: Path, dest: Path) -> Path:
    """``work`` (outputs, modification times and Snakemake's records) copied to ``dest``,
    for a test that changes files: the shared run is read by other workers meanwhile."""
    shutil.copytree(work, dest, symlinks=True)
    return dest


def test_train_rule_writes_dumps_and_logs(tiny_workdir: Path) -> None:
    for run in (0, 1):
        base = tiny_workdir / f"results/lossless/mlp/run{run}"
        dump = read_dump(base / "grads/epoch2.safetensors")
        assert dump.epoch == 2 and dump.metadata["seed"] == str(run)
        assert dump.metadata["loss_reduction"] == "sum"  # the authors' default
        assert dump.names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
        assert len((base / "train_log.tsv").read_text().splitlines()) == 3
        assert (base / "state/checkpoint.pt").exists()
        progress = (tiny_workdir / f"results/logs/lossless/mlp/run{run}/train.log").read_text()
        assert "epoch 2/2" in progress and "images/s" in progress


def test_heavy_rules_write_benchmarks(tiny_workdir: Path) -> None:
    """Every heavy rule of the data and paper-L stages leaves Snakemake's benchmark row
    (wall seconds, peak memory) under results/benchmarks/<rule>/<wildcards>.tsv."""
    import pandas as pd

    bench = tiny_workdir / "results/benchmarks"
    paths = [bench / "prepare_cifar10/cifar10.tsv"]
    for rule in ("train_lossless", "fit_lossless", "code_lossless"):
        paths += [bench / f"{rule}/mlp/run{run}.tsv" for run in (0, 1)]
    for path in paths:
        row = pd.read_csv(path, sep="\t")
        assert len(row) == 1 and {"s", "max_rss"} <= set(row.columns), path
        assert (row["s"] >= 0).all()


def test_fits_figures_and_t2(tiny_workdir: Path) -> None:
    import pandas as pd

    fits = pd.read_csv(tiny_workdir / "results/lossless/mlp/run0/fits.tsv", sep="\t")
    assert set(fits["family"]) == {"norm", "laplace", "gennorm"}
    assert set(fits["epoch"]) == {1, 2} and set(fits["kind"]) == {"epoch_avg"}
    positions = pd.read_csv(tiny_workdir / "results/lossless/mlp/positions.tsv", sep="\t")
    assert dict(zip(positions["position"], positions["tensor"], strict=True)) == {
        "lower": "fc1.weight",
        "middle": "fc2.weight",
        "upper": "fc2.weight",
    }
    assert fits["loglik"].notna().all() and (fits["w2"] > 0).all()
    assert fits["p0"].between(0, 1).all() and fits["shape_at_bound"].dtype == bool
    for fig in ("L1", "L2", "L3", "L4", "L5", "L5b"):
        assert_drawn_figure(tiny_workdir / f"results/figures/{fig}_mlp.png")
    t2 = pd.read_csv(tiny_workdir / "results/tables/T2.tsv", sep="\t")
    assert set(t2["family"]) == {"norm", "laplace", "gennorm"} and (t2["n"] == 4).all()
    assert "±" in (tiny_workdir / "results/tables/T2.md").read_text()


def test_coding_table_and_t1(tiny_workdir: Path) -> None:
    import pandas as pd

    coding = pd.read_csv(tiny_workdir / "results/lossless/mlp/run1/coding.tsv", sep="\t")
    coders = set(coding["coder"])
    assert {"huffman_gennorm", "huffman_norm", "lz78", "entropy", "fp8"} <= coders
    assert set(coding["accounting"]) == {"exact", "slip"}
    assert set(coding["scaling"]) == {"none", "amax"}
    assert coding["zero_share"].between(0, 1).all() and coding["saturated_share"].eq(0).all()
    raw = (coding["accounting"] == "exact") & (coding["scaling"] == "none")
    exact = coding[raw].set_index(["epoch", "tensor", "coder"])
    fp8 = exact.xs("fp8", level="coder")["bits_per_entry"]
    assert (fp8 == 8.0).all()
    # no i.i.d. magnitude code beats the empirical entropy of its symbols
    entropy = exact.xs("entropy", level="coder")["total_bits"]
    for coder in ("huffman_gennorm", "huffman_norm", "huffman_empirical"):
        assert (exact.xs(coder, level="coder")["total_bits"] >= entropy).all()
    t1 = pd.read_csv(tiny_workdir / "results/tables/T1.tsv", sep="\t")
    assert set(t1["accounting"]) == {"exact", "slip"} and (t1["runs"] == 2).all()
    assert set(t1["scaling"]) == {"none", "amax"} and t1["zero_share_mean"].notna().all()


def test_federated_runs_figures_and_t3(tiny_workdir: Path) -> None:
    import pandas as pd

    base = tiny_workdir / "results/lossy/wide"
    runs = sorted(
        p.parent.parent.relative_to(base).as_posix() for p in base.glob("*/*/seed0/rounds.tsv")
    )
    assert runs == [
        "dense/R32_M0",
        "gennorm/R2_M0",
        "gennorm/R2_M2",
        "mine/R3_M0",  # no full runs: the shared run's target (conftest.SHARED_TARGETS)
        "none/R32_M0",
        "uniform/R2_M0",
        "uniform/R3_M0",
    ]
    rounds = pd.read_csv(base / "gennorm/R2_M2/seed0/rounds.tsv", sep="\t")
    assert rounds["round"].tolist() == [0, 1, 2]
    # the run's identity is in its rows, as its folder names it
    ident = rounds[["model", "compressor", "rate", "M", "seed"]].drop_duplicates()
    assert ident.values.tolist() == [["wide", "gennorm", 2, 2, 0]]
    uplink = pd.read_csv(base / "gennorm/R2_M2/seed0/uplink.tsv", sep="\t")
    assert len(uplink) == 4 and (uplink["bits_coded"] > 0).all()
    parts = ["position_bits", "side_bits", "raw_bits"]
    coded = uplink[["payload_huffman_bits", "huffman_side_bits", *parts]].sum(axis=1)
    assert (coded == uplink["bits_accounted"]).all()
    assert (uplink[["payload_fixed_bits", *parts]].sum(axis=1) == uplink["bits_fixed"]).all()
    # the bits sent: the bytes the server decoded, the accounted bits plus the framing
    assert (uplink["bits_source"] == "bytes").all()
    assert (uplink["bits_coded"] > uplink["bits_accounted"]).all()
    assert rounds["cumulative_bits_coded"].iloc[-1] == uplink["bits_coded"].sum()
    none = pd.read_csv(base / "none/R32_M0/seed0/uplink.tsv", sep="\t")
    assert none["bits_fixed"].sum() > uplink["bits_fixed"].sum()
    assert (none["position_bits"] > 0).all()  # top-K + float32: positions are charged
    for fig in ("Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7a", "Y8"):
        assert_drawn_figure(tiny_workdir / f"results/figures/{fig}_wide.png")
    for part in ("Y7b", "Y7c"):  # a part may hold no compressor of the tiny config: it says so
        assert (tiny_workdir / f"results/figures/{part}_wide.png").stat().st_size > 5_000
    t3 = pd.read_csv(tiny_workdir / "results/tables/T3.tsv", sep="\t")
    assert len(t3) == 6 and t3["per_bit_acc_coded_mean"].notna().all()
    # one job per warm start, its two nested seeds inside: seeds x rounds x variants (the
    # six with full runs and docs/extending.md's mine at rates 3 and 4)
    one_round = pd.read_csv(base / "one_round/ws0.tsv", sep="\t")
    assert len(one_round) == 2 * 2 * 8 and set(one_round["seed"]) == {0, 1}
    assert set(one_round["warm_start"]) == {0} and set(one_round["model"]) == {"wide"}
    t4 = pd.read_csv(tiny_workdir / "results/tables/T4.tsv", sep="\t")
    # 2 warm starts x 2 seeds = 4 trajectories (not trajectories x rounds); 2 units
    assert len(t4) == 8 and (t4["trajectories"] == 4).all() and (t4["units"] == 2).all()
    assert (t4["design"] == "warm starts").all()
    assert {"test_loss_vs_uniform_p", "test_loss_vs_uniform_p_holm", "verdict"} <= set(t4.columns)
    t5 = pd.read_csv(tiny_workdir / "results/tables/T5.tsv", sep="\t")
    assert set(t5["curve"]) == {"dense", "none", "gennorm", "mine"}
    assert (t5["trajectories"] == 4).all()
    verdicts = pd.read_csv(tiny_workdir / "results/tables/verdicts.tsv", sep="\t")
    # the tiny config's curves share top-K 45.2%: auto matches on that kept set; one
    # question per rate of the test (gennorm has R2 only)
    assert list(verdicts["question"]) == ["gennorm R2 M2 on top-K 45.2% vs uniform M0, kept set"]
    assert list(verdicts["match"]) == ["kept_set"] and list(verdicts["family"]) == ["primary"]
    assert verdicts["verdict"].isin(["better", "worse", "equivalent", "undecided"]).all()
    assert (base / "warm_start/ws0.pt").exists() and (base / "warm_start/ws1.pt").exists()
    rd = pd.read_csv(base / "distortion_study.tsv", sep="\t")
    assert set(rd["M"]) == {0, 2} and (rd["distortion"] > 0).all()


def test_rerun_with_nothing_changed_does_nothing(tiny_workdir: Path) -> None:
    proc = tiny(tiny_workdir, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


FIGURE_RULES = {
    "all", "figure_L1", "figure_L2", "figure_L3", "figure_L4", "figure_L5", "figures_Y1_Y3",
    "figure_Y4", "figure_Y5", "figure_Y6", "table_T1", "table_T2", "table_T3", "table_T4",
    "figure_Y7", "figure_Y8", "table_T5", "table_T6", "table_costs", "table_answers",
    "figure_manifest",
}  # fmt: skip
# Cheap rules that derive what a figure shows from cached artifacts (no training, no fits).
DERIVED_RULES = {"tensor_positions", "distortion_study"}


def test_deleted_figures_rerun_only_plotting(tiny_workdir: Path, tmp_path: Path) -> None:
    work = private_copy(tiny_workdir, tmp_path / "wf")
    shutil.rmtree(work / "results/figures")
    rules = planned_rules(tiny(work, "-n"))
    assert {"figure_L1", "figures_Y1_Y3", "figure_Y5"} <= rules
    assert rules <= FIGURE_RULES


def test_plot_option_reruns_only_plotting(tiny_workdir: Path) -> None:
    proc = tiny(tiny_workdir, "-n", "--config", "figures={histogram_bins: 40}")
    rules = planned_rules(proc)
    assert "figure_L1" in rules and "figure_Y4" in rules
    assert rules <= FIGURE_RULES


@pytest.mark.parametrize(
    ("config", "derived"),
    [
        ("figures={y4: {tensors: [fc2.weight]}}", set()),
        ("lossy={distortion_study: {tensor: fc2.weight}}", {"distortion_study"}),
        ("lossless={positions: {mlp: {middle: fc1.weight}}}", {"tensor_positions"}),
    ],
)
def test_figure_knobs_never_retrain(tiny_workdir: Path, config: str, derived: set) -> None:
    rules = planned_rules(tiny(tiny_workdir, "-n", "--config", config))
    assert rules and rules <= FIGURE_RULES | derived


@pytest.mark.parametrize("config", ["lossless={threads: 2}", "lossy={threads: 2}", "device=auto"])
def test_where_a_job_runs_is_no_rerun_trigger(tiny_workdir: Path, config: str) -> None:
    proc = tiny(tiny_workdir, "-n", "--config", config)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_report_has_every_figure_and_table(tiny_workdir: Path) -> None:
    tiny(tiny_workdir, "--report", "report.zip")
    names = "\n".join(zipfile.ZipFile(tiny_workdir / "report.zip").namelist())
    for item in "L1 L2 L3 L4 L5 L5b".split():
        assert f"{item}_mlp.png" in names and f"{item}_wide.png" in names
    for item in "Y1 Y2 Y3 Y4 Y5 Y6 Y7a Y7b Y8".split():
        assert f"{item}_wide.png" in names
    for table in ("T1", "T2", "T3", "T4"):
        assert f"{table}.tsv" in names
    answers = (tiny_workdir / "results/tables/answers.md").read_text()
    assert "| question | the paper | this study |" in answers  # from the tiny run's tables
    assert "GenNorm" in answers and "answers.md" in names


def test_figure_manifest_has_one_row_per_png(tiny_workdir: Path) -> None:
    """results/figures/manifest.tsv: one row per figure PNG the run made, each measured when
    it was saved, with its question (planted bug: a figure left out of the rule's input)."""
    figures = tiny_workdir / "results/figures"
    manifest = pd.read_csv(figures / "manifest.tsv", sep="\t", keep_default_na=False)
    assert sorted(manifest["file"]) == sorted(p.name for p in figures.glob("*.png"))
    assert manifest["question"].str.endswith("?").all()
    assert (manifest["width_in"] > 1).all()
    # Y7b and Y7c are placeholders without panels at the tiny config (nothing to draw)
    assert (manifest.set_index("file")["panels"].filter(like="L") >= 1).all()


def test_no_output_names_a_folder_of_the_machine(tiny_workdir: Path) -> None:
    """Every table, the figures' PDF text (its streams inflated, the strings of its text
    operators joined) and the report's files are free of the work folder's and the data's
    absolute paths; the figure titles' data line (reporting.data_source_label) names the data
    by its config key. Planted bug: the data's folder in the source line."""
    from gradcomp.reporting import data_source_label

    roots = [str(tiny_workdir), str(tiny_workdir.resolve())]
    label = data_source_label(tiny_workdir / "results/data/cifar10.json")
    assert "config key cifar10" in label and all(r not in label for r in roots)
    tiny(tiny_workdir, "--report", "report.zip")
    texts = {p.name: p.read_bytes() for p in sorted((tiny_workdir / "results/tables").glob("*"))}
    for path in sorted((tiny_workdir / "results/figures").glob("*.pdf")):
        raw = path.read_bytes()
        streams = [_inflate(s) for s in re.findall(rb"stream\r?\n(.*?)\r?\nendstream", raw, re.S)]
        strings = b"".join(re.findall(rb"\(((?:[^()\\]|\\.)*)\)", b"".join(streams)))
        texts[path.name] = raw + b"".join(streams) + strings
    with zipfile.ZipFile(tiny_workdir / "report.zip") as z:
        for name in z.namelist():
            if name.endswith((".html", ".js", ".tsv", ".md", ".json", ".txt")):
                texts[name] = z.read(name)
    assert len(texts) > 20
    for name, blob in texts.items():
        for root in roots:
            assert root.encode() not in blob, (name, root)


def _inflate(data: bytes) -> bytes:
    import zlib

    try:
        return zlib.decompress(data)
    except zlib.error:
        return b""


def test_bad_config_stops_before_any_job(tiny_workdir: Path) -> None:
    proc = tiny(tiny_workdir, "--config", "device=tpu", check=False)
    assert proc.returncode != 0
    assert "config key 'device'" in proc.stderr + proc.stdout


def test_m22_config_plans_the_follow_ups_study(tmp_path: Path) -> None:
    """``snakemake -n --configfile config/m22.yaml`` plans the follow-up's study: one
    federated job per (model, variant, seed) with the variants counted here from the file's
    entries (rates x M), each with a kept.tsv, for cnn, resnet18 and vgg16; the file holds
    the follow-up's compressors (float8 with M22's ties, count sketch per tensor, M22's
    memory, TCQ, GenNorm and double-Weibull Lloyd) and budget (P = 60).

    Planted bugs that fail it: resnet18 missing from the schema's models (the config is
    refused), the kept.tsv output dropped from the federated rule, a model's tensors left
    out of figures.model_tensors (a check below).
    """
    config_file = REPO / "config/m22.yaml"
    m22 = yaml.safe_load(config_file.read_text())["lossy"]
    entries = {e["name"]: e for e in m22["compressors"]}
    assert entries["float8"]["float8_ties"] == "upper"
    assert entries["sketch"]["compressor"] == "count_sketch"
    assert entries["gennormmem"]["memory_mode"] == "m22"
    assert {e.get("family") for e in entries.values()} >= {"gennorm", "dweibull"}
    assert entries["tcq"]["quantizer"] == "tcq" and m22["topk_budget_percent"] == 60
    assert m22["warm_start"] is None and len(entries[m22["baseline"]]["rates"]) >= 2
    n_variants = sum(len(e.get("rates", [0])) * len(e.get("M", [0])) for e in entries.values())
    proc = run_snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(config_file))
    jobs = planned_wildcards(proc, "federated")
    models = ["cnn", "resnet18", "vgg16"]
    assert len(jobs) == n_variants * len(m22["seeds"]) * len(models) == 378
    assert sorted({j["model"] for j in jobs}) == models
    assert {(j["compressor"], j["rate"]) for j in jobs} >= {("sketch", "100"), ("float8", "8")}
    text = proc.stdout + proc.stderr
    assert text.count("/kept.tsv") >= len(jobs)
    assert {"one_round_study", "figure_Y4", "distortion_study", "table_T5"} <= planned_rules(proc)
    tensors = yaml.safe_load(config_file.read_text())["figures"]["model_tensors"]
    assert set(tensors) == {"resnet18", "vgg16"}


def test_model_settings_reach_the_federated_job(tmp_path: Path) -> None:
    """lossy.model_settings.<model> gives that model's runs their lr and min_entries: with
    min_entries 100 for the mlp, fc2.weight (320 entries) is quantized (no raw bits but the
    biases'); a new lr for the mlp makes its federated job stale (params), one for another
    model does not.

    Planted bugs that fail it: federated_settings keeping lossy.lr, compressor_spec keeping
    lossy.min_entries.
    """
    tree = write_imagefolder_tree(tmp_path / "cifar", n_train=40, n_test=20)
    config = {
        **TINY_CONFIG,
        "cifar10": str(tree),
        "data": {"train_subset": 40, "test_subset": 20, "pretrain_subset": None},
        "lossy": {**TINY_CONFIG["lossy"], "rounds": 1, "warm_start": None,
                  "model_settings": {"mlp": {"min_entries": 100, "lr": 0.002}}},
    }  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    target = "results/lossy/mlp/uniform/R2_M0/seed0/uplink.tsv"
    args = ("--cores", "1", "--configfile", "c.yaml")
    run_snakemake(tmp_path, *args, targets=[target])
    uplink = pd.read_csv(tmp_path / target, sep="\t")
    kept = pd.read_csv(tmp_path / target.replace("uplink", "kept"), sep="\t")
    for row in uplink.itertuples():
        sent = kept[(kept["round"] == row.round) & (kept["user"] == row.user)]
        sent = sent.set_index("tensor")["kept"]
        assert sent["fc2.weight"] > 0
        # only the biases go raw: fc2.weight (320 entries) is over min_entries 100
        assert row.raw_bits == 32 * (sent["fc1.bias"] + sent["fc2.bias"])
    changed = "lossy={model_settings: {mlp: {min_entries: 100, lr: 0.003}}}"
    proc = run_snakemake(tmp_path, "-n", *args, "--config", changed, targets=[target])
    assert "federated" in planned_rules(proc)
    other = "lossy={model_settings: {mlp: {min_entries: 100, lr: 0.002}, cnn: {lr: 0.1}}}"
    proc = run_snakemake(tmp_path, "-n", *args, "--config", other, targets=[target])
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_snakemake_lint_is_clean() -> None:
    """``snakemake --lint`` finds nothing (planted bugs it reports: a rule without ``log:``,
    rules and plain functions mixed in one file)."""
    proc = subprocess.run(
        [*SNAKEMAKE, "--lint"], cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr
