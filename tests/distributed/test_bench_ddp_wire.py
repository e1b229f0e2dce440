"""bench/bench_ddp_wire.py's command line: a bad configuration name is refused before any
run, and ``--report`` merges results files (a later file's rate replaces an earlier one's)
into tables whose ratios and verdicts follow from the numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_ddp_wire.py"


def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=120
    )


def timing(ms: dict[str, float]) -> dict:
    return {
        name: {"ms": v, "ms_min": v - 1, "ms_max": v + 1, "wire_bytes": 1000, "cpu_ms": v / 2,
               "exchange": name}
        for name, v in ms.items()
    }  # fmt: skip


@pytest.mark.slow
def test_unknown_configuration_is_named() -> None:
    done = run_bench("--configs", "default", "no_such_config", "--phases", "time")
    assert done.returncode == 2
    assert "no_such_config" in done.stderr and "uniform_R2_top10" in done.stderr


@pytest.mark.slow
def test_report_merges_rates_and_decides(tmp_path: Path) -> None:
    args = {"models": ["cnn"], "margin": 0.03, "acc_steps": 80}
    default = [0.40, 0.42, 0.38, 0.41, 0.39, 0.43]
    jitter = [0.001, -0.002, 0.0, 0.002, -0.001, 0.0]
    accuracy = {
        "cnn": {
            "floor": [0.2] * 6,
            "default": default,
            "same": list(default),
            "worse": [a - 0.1 + d for a, d in zip(default, jitter, strict=True)],
        }
    }  # fmt: skip
    first = {"args": args, "accuracy": accuracy, "time": {
        "10": {"cnn": timing({"floor": 100, "default": 4000, "same": 4000, "worse": 200})},
        "100.0": {"cnn": timing({"floor": 100, "default": 400, "same": 400, "worse": 999})},
    }}  # fmt: skip
    second = {"args": args, "accuracy": {}, "time": {
        "100": {"cnn": timing({"floor": 100, "default": 400, "same": 410, "worse": 150})},
    }}  # fmt: skip
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "merged.json"
    a.write_text(json.dumps(first))
    b.write_text(json.dumps(second))
    done = run_bench("--report", str(a), str(b), "--out", str(out))
    assert done.returncode == 0, done.stderr
    merged = json.loads(out.read_text())
    assert sorted(merged["time"]) == ["10", "100"]
    assert merged["time"]["100"]["cnn"]["worse"]["ms"] == 150
    verdicts = merged["verdicts"]["cnn"]["default"]
    assert verdicts["same"]["verdict"] == "equivalent"
    assert verdicts["worse"]["verdict"] == "worse"
    assert abs(verdicts["worse"]["mean"] - 0.1) < 1e-9
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| worse | worse |")]
    assert len(rows) == 1
    assert "**0.05**" in rows[0] and "**1.50**" in rows[0]  # 200/4000, 150/100
    assert "worse" in rows[0].split("|")[-2]
