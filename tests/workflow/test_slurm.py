"""The workflow through the SLURM profile, on a real (local, one-node) SLURM.

Opt-in: needs running SLURM daemons and snakemake-executor-plugin-slurm. As root:

    scripts/local_slurm.sh start            # installs slurm-wlm + munge if missing
    GRADCOMP_SLURM_TEST=1 .venv/bin/python -m pytest tests/workflow/test_slurm.py -x -q
    scripts/local_slurm.sh stop

The tiny config of tests/conftest.py runs paper L's lossless chain (prepare_cifar10,
train_lossless, fit_lossless, code_lossless, table_T1, table_T2) locally. The whole tiny
study (with one seed per full run, WHOLE_OVERLAY: every rule of both papers, 18 queued jobs
instead of 24) then runs through ``--profile profiles/slurm --profile profiles/slurm-local`` (the
second layer drops the GPU requests: the test cluster has none): only the jobs of the heavy
rules may reach sbatch (figures, tables and the cost table are localrules), and the lossless
chain's data outputs must equal the local run's byte for byte (figures are not compared:
PNG/PDF carry metadata). Then a train_lossless job is cancelled
with scancel while it runs, twice (the profile's ``retries: 1`` resubmits it once, the
second cancel makes the run fail), and a rerun must complete with the same outputs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, SNAKEMAKE, TINY_CONFIG, run_snakemake, write_imagefolder_tree

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("GRADCOMP_SLURM_TEST") != "1",
        reason="opt-in: needs a running SLURM (as root: scripts/local_slurm.sh start) and "
        "snakemake-executor-plugin-slurm; set GRADCOMP_SLURM_TEST=1 to run",
    ),
]

SLURM_PROFILES = [
    "--profile",
    str(REPO / "profiles/slurm"),
    "--profile",
    str(REPO / "profiles/slurm-local"),
]

# Paper L's lossless chain without figures: prepare_cifar10, 2 x (train_lossless,
# fit_lossless, code_lossless) go through sbatch; tensor_positions, table_T1 and table_T2
# are localrules (run in the Snakemake process, not submitted).
TARGETS = ["results/tables/T1.tsv", "results/tables/T2.tsv"]
TIMING_COLUMNS = {"images_per_s", "seconds"}  # of train_log.tsv: wall-clock, not data
# The whole study's run through SLURM: one seed per full run (6 federated jobs, not 12). Every
# rule still has a job, which is what the localrules check needs; paper L's chain is as in
# the local run, whose outputs it must equal.
WHOLE_OVERLAY = {"lossy": {"seeds": [0]}}


def snakemake_cmd(workdir: Path, *args: str) -> list[str]:
    # targets first: --configfile takes several values and would swallow them
    return [*SNAKEMAKE, "--directory", str(workdir), *TARGETS, "--configfile", "tiny.yaml", *args]


def snakemake_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src")}


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return run_snakemake(workdir, "--configfile", "tiny.yaml", *args, targets=TARGETS, timeout=1800)


def data_outputs(workdir: Path) -> dict[str, bytes]:
    """Data outputs of the run (path -> bytes): dumps, fits, coding, tables, training log."""
    out = {}
    results = workdir / "results"
    patterns = [
        "lossless/*/run*/grads/*.safetensors",
        "lossless/*/run*/fits.tsv",
        "lossless/*/run*/coding.tsv",
        "tables/*.tsv",
        "tables/*.md",
    ]
    for pattern in patterns:
        for path in results.glob(pattern):
            out[str(path.relative_to(workdir))] = path.read_bytes()
    for path in results.glob("lossless/*/run*/train_log.tsv"):
        rows = [line.split("\t") for line in path.read_text().splitlines()]
        keep = [i for i, name in enumerate(rows[0]) if name not in TIMING_COLUMNS]
        text = "\n".join("\t".join(row[i] for i in keep) for row in rows)
        out[str(path.relative_to(workdir)) + " (no timings)"] = text.encode()
    return out


def assert_same_outputs(
    reference: dict[str, bytes], workdir: Path, *, more_allowed: bool = False
) -> None:
    """The run in ``workdir`` has the reference's data outputs, byte for byte (and, with
    ``more_allowed``, possibly more: a run of the whole study)."""
    got = data_outputs(workdir)
    missing = sorted(set(reference) - set(got))
    assert not missing, f"outputs missing: {missing}"
    assert more_allowed or sorted(got) == sorted(reference)
    differ = [name for name in reference if got[name] != reference[name]]
    assert not differ, f"outputs differ from the local run: {differ}"


def squeue(run_id: str) -> list[tuple[str, str, str]]:
    """(job id, state, comment) of this Snakemake run's SLURM jobs, finished ones included."""
    proc = subprocess.run(
        ["squeue", "-h", "--states=all", "--name", run_id, "-o", "%i|%T|%k"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [tuple(line.split("|", 2)) for line in proc.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory) -> Path:
    if shutil.which("sbatch") is None or subprocess.run(["sinfo"], capture_output=True).returncode:
        pytest.fail("GRADCOMP_SLURM_TEST=1 but no SLURM answers: run scripts/local_slurm.sh start")
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        pytest.fail(
            "GRADCOMP_SLURM_TEST=1 but the executor plugin is missing: pip install -e '.[slurm]'"
        )
    base = tmp_path_factory.mktemp("slurm")
    tree = write_imagefolder_tree(base / "cifar", n_train=100, n_test=40)
    (base / "tiny.yaml").write_text(yaml.safe_dump({**TINY_CONFIG, "cifar10": str(tree)}))
    (base / "whole.yaml").write_text(yaml.safe_dump(WHOLE_OVERLAY))
    return base


def new_workdir(base: Path, name: str) -> Path:
    work = base / name
    work.mkdir()
    for name in ("tiny.yaml", "whole.yaml"):
        shutil.copy(base / name, work / name)
    return work


@pytest.fixture(scope="module")
def local_outputs(tiny_data: Path) -> dict[str, bytes]:
    work = new_workdir(tiny_data, "local")
    snakemake(work, "--cores", "2")
    outputs = data_outputs(work)
    assert any(name.endswith(".safetensors") for name in outputs)
    assert "results/tables/T1.tsv" in outputs and "results/tables/T2.tsv" in outputs
    return outputs


# Rules whose jobs go through sbatch; every other rule (figures, tables, positions, costs)
# is a localrule and runs in the Snakemake process.
QUEUED_RULES = {
    "prepare_cifar10", "train_lossless", "fit_lossless", "code_lossless", "warm_start",
    "federated", "one_round_study", "distortion_study",
}  # fmt: skip


def job_counts(text: str) -> dict[str, int]:
    """Rule -> number of jobs, from the "Job stats" table of a Snakemake log."""
    table = text[text.index("Job stats:") :].splitlines()[3:]
    counts = {}
    for line in table:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def test_whole_workflow_queues_only_the_heavy_jobs_and_equals_local(
    tiny_data: Path, local_outputs: dict[str, bytes]
) -> None:
    """The whole tiny study (both papers, costs table included; WHOLE_OVERLAY) through
    SLURM: every heavy rule has a job, exactly the jobs of QUEUED_RULES are submitted
    (counted from the dry run's plan), the figure and table rules run locally (planted bug:
    a figure rule missing from localrules, which would queue one more job), and paper L's
    chain gives the local run's outputs byte for byte."""
    work = new_workdir(tiny_data, "whole")
    configs = ["--configfile", "tiny.yaml", "whole.yaml"]
    plan = run_snakemake(work, *configs, "-n", timeout=300)
    counts = job_counts(plan.stdout + plan.stderr)
    assert {"figure_Y7", "table_T5", "table_costs", "table_answers"} | QUEUED_RULES <= set(counts)
    expected = sum(n for rule, n in counts.items() if rule in QUEUED_RULES)
    proc = run_snakemake(work, *configs, *SLURM_PROFILES, timeout=3000)
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", proc.stdout + proc.stderr)
    assert len(submitted) == expected, (counts, len(submitted))
    assert (work / "results/tables/costs.md").exists()
    assert_same_outputs(local_outputs, work, more_allowed=True)
    print(f"whole tiny study through SLURM: {len(submitted)} of {sum(counts.values())} jobs queued")


def test_scancel_then_rerun_completes(tiny_data: Path, local_outputs: dict[str, bytes]) -> None:
    work = new_workdir(tiny_data, "cancel")
    logfile = work / "first_run.log"
    cancelled: list[str] = []
    with open(logfile, "w") as fh:
        proc = subprocess.Popen(
            snakemake_cmd(work, *SLURM_PROFILES),
            stdout=fh,
            stderr=subprocess.STDOUT,
            text=True,
            env=snakemake_env(),
            cwd=work,
        )
    try:
        run_id = None
        deadline = time.monotonic() + 600
        # Cancel train_lossless of run 0 while it runs, then its resubmission too.
        while len(cancelled) < 2 and proc.poll() is None and time.monotonic() < deadline:
            if run_id is None:
                found = re.search(r"SLURM run ID: (\S+)", logfile.read_text())
                run_id = found and found.group(1)
            else:
                for job_id, state, comment in squeue(run_id):
                    if (
                        state == "RUNNING"
                        and comment.startswith("rule_train_lossless")
                        and comment.endswith("_0")
                        and job_id not in cancelled
                    ):
                        subprocess.run(["scancel", job_id], check=True)
                        cancelled.append(job_id)
            time.sleep(0.2)
        assert len(cancelled) == 2, f"cancelled {cancelled}:\n{logfile.read_text()[-3000:]}"
        rc = proc.wait(timeout=1200)
    finally:
        if proc.poll() is None:
            proc.terminate()  # Snakemake cancels its SLURM jobs on SIGTERM
            proc.wait(timeout=120)
    first = logfile.read_text()
    assert rc != 0, "the run should fail: both attempts of the job were cancelled"
    for job_id in cancelled:
        assert f"SLURM-job '{job_id}' failed, SLURM status is: 'CANCELLED'" in first, first[-3000:]
    assert not (work / "results/tables/T1.tsv").exists()

    proc = snakemake(work, *SLURM_PROFILES)  # the rerun: finishes the interrupted work
    assert_same_outputs(local_outputs, work)
    assert "SLURM status is: 'CANCELLED'" not in proc.stdout + proc.stderr
