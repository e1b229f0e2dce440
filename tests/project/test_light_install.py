"""The reusable library (fits, quantizers, coders, compressors, wire, DDP hook) works without
the workflow extra: in a subprocess whose imports of the extra's modules fail, it imports and
sends an update as bytes that a receiver decodes, and the coders' plain-Python path (no
numba) writes the same bytes as the compiled one."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import REPO

#: top-level modules of ``pip install -e ".[workflow]"`` that ``pip install -e .`` lacks
EXTRA_MODULES = [
    "snakemake", "seaborn", "matplotlib", "numba", "llvmlite", "brotli", "zstandard", "pandas",
    "jsonschema", "pygments", "yaml", "safetensors", "threadpoolctl", "torchvision",
]  # fmt: skip

#: a Huffman-coded kind and the adaptive arithmetic code (ECSQ below 1.5 bits: numba's loops)
SPECS = [
    {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2, "topk": 0.5},
    {"quantizer": "ecsq", "family": "gennorm", "rate": 1, "M": 2, "topk": 0.5, "target_bits": 1},
]

BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}

class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"No module named {{name!r}} (not in the core install)")
        return None

sys.meta_path.insert(0, _Blocked())
"""

ROUND_TRIP = """
import hashlib, warnings
import numpy as np, torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import gradcomp.coding, gradcomp.quantization, gradcomp.distributed
    from gradcomp.distributions import fit
    from gradcomp.compression import build_compressor
    from gradcomp.compression.specs import check_spec, user_seed
    from gradcomp.wire import UpdateLayout, encode_update, make_receiver
assert any("numba is not installed" in str(w.message) for w in caught), caught

law = fit(0.01 * np.random.default_rng(0).laplace(size=5_000), "gennorm")
assert 0.5 < law.params["beta"] < 2, law.params
update = {"w": torch.randn(20, 30, generator=torch.Generator().manual_seed(1))}
for spec in {specs!r}:
    sender = build_compressor(check_spec(spec).with_seed(user_seed(seed=7, user=0)))
    payload, ctx = sender.compress(update)
    data = encode_update(sender, payload, ctx)
    got = make_receiver(spec, UpdateLayout.of(update), seed=7, user=0, rnd=0).decode(data)
    assert torch.equal(got["w"], sender.decompress(payload, ctx)["w"])
    print(spec["quantizer"], hashlib.sha256(data).hexdigest())
try:
    gradcomp.coding.general_purpose_bits(b"x")
except ImportError as exc:
    assert "gradcomp[workflow]" in str(exc), exc
else:
    raise AssertionError("brotli was blocked")
leaked = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
assert not leaked, leaked
"""


def run_light(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    script = BLOCKER.format(blocked=EXTRA_MODULES) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )


def test_blocker_blocks_the_extra() -> None:
    proc = run_light("import pandas")
    assert proc.returncode != 0 and "not in the core install" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_library_round_trip_without_the_workflow_extra() -> None:
    """Planted bugs it catches: brotli imported at the top of coding.general_purpose again,
    numba required by coding.binary_rc, pandas by distributions.goodness_of_fit."""
    proc = run_light(ROUND_TRIP.replace("{specs!r}", repr(SPECS)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    light = dict(line.split() for line in proc.stdout.splitlines())
    # the same updates in this process (numba compiled where the test extra installs it)
    from gradcomp.compression import build_compressor
    from gradcomp.compression.specs import check_spec, user_seed
    from gradcomp.wire import encode_update

    update = {"w": torch.randn(20, 30, generator=torch.Generator().manual_seed(1))}
    for spec in SPECS:
        sender = build_compressor(check_spec(spec).with_seed(user_seed(seed=7, user=0)))
        payload, ctx = sender.compress(update)
        data = encode_update(sender, payload, ctx)
        assert hashlib.sha256(data).hexdigest() == light[spec["quantizer"]], spec
