"""docs/library.md's examples run as given: every ``python`` block, each in a fresh
process, in one folder, in order (so the decode example reads the bytes the encode example
wrote, in another process, from what a receiver knows)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, doc_blocks


@pytest.mark.slow
def test_every_example_runs_and_says_what_its_comments_say(tmp_path: Path) -> None:
    blocks = doc_blocks("library.md", "python")
    assert len(blocks) >= 5
    out = []
    for i, code in enumerate(blocks):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")}, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, f"block {i}:\n{code}\n{proc.stderr[-2000:]}"
        out.append(proc.stdout)
    fit, lloyd, sent, decoded, coded = out[:5]
    beta = float(re.search(r"'beta': ([0-9.e-]+)", fit).group(1))
    assert 0.9 < beta < 1.1  # a Laplace sample: GenNorm's beta near 1 (scipy's fit agrees)
    levels = [float(v) for v in re.findall(r"-?\d+\.\d+", lloyd.split("]")[0])]
    assert len(levels) == 4 and levels == sorted(levels) and levels[0] == -levels[-1]
    assert "bits/entry" in sent and decoded.strip() == "True"
    bits = dict(re.findall(r"(\w+) ([0-9.]+) bits per entry", coded))
    assert float(bits["huffman_gennorm"]) < float(bits["huffman_norm"])  # heavy tails
