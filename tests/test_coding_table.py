from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch

from gradcomp.distributions import fit
from gradcomp.lossless.code_lossless import code_tensor, fp8_bytes
from gradcomp.quantization.grids import get_grid


@pytest.fixture(scope="module")
def gradient() -> np.ndarray:
    return scipy.stats.gennorm(0.8, scale=2e-3).rvs(20_000, random_state=1)


def by_coder(rows):
    return {r["coder"]: r for r in rows}


def test_fp8_bytes_are_e5m2_bit_patterns(gradient) -> None:
    grid = get_grid("fp8_e5m2")
    values = grid.quantize(gradient)
    expected = torch.from_numpy(values.astype(np.float32)).to(torch.float8_e5m2)
    assert fp8_bytes(values, grid) == expected.view(torch.uint8).numpy().tobytes()


def test_rates_are_ordered_and_consistent(gradient) -> None:
    grid = get_grid("fp8_e5m2")
    fits = {f: fit(gradient, f) for f in ("gennorm", "norm")}
    rows = by_coder(code_tensor(gradient, fits, grid))
    n = gradient.size
    assert rows["fp8"]["payload_bits"] == 8 * n
    entropy = rows["entropy"]["payload_bits"]
    # Huffman is within one bit per symbol of the entropy of its design pmf
    assert entropy <= rows["huffman_empirical"]["payload_bits"] < entropy + n
    # a model-designed code costs at least the cross-entropy minus rounding, at least the entropy
    for family in fits:
        assert rows[f"huffman_{family}"]["payload_bits"] >= entropy
        assert rows[f"xent_{family}"]["payload_bits"] >= entropy - 1e-6
        assert rows[f"huffman_{family}"]["side_bits"] == 32 * len(fits[family].params)
    # GenNorm data: the GenNorm-designed code beats the Norm-designed one
    assert rows["huffman_gennorm"]["payload_bits"] < rows["huffman_norm"]["payload_bits"]
    assert rows["ans_gennorm"]["payload_bits"] <= rows["huffman_gennorm"]["payload_bits"] + 64
    nonzero = rows["entropy"]["n_nonzero"]
    assert 0 < nonzero <= n


def test_slip_charges_one_sign_bit_per_codebook_symbol(gradient) -> None:
    grid = get_grid("fp8_e5m2")
    fits = {"gennorm": fit(gradient, "gennorm")}
    exact = by_coder(code_tensor(gradient, fits, grid, general_purpose=False))
    slip = by_coder(code_tensor(gradient, fits, grid, slip=True, general_purpose=False))
    nonzero = exact["entropy"]["n_nonzero"]
    diff = exact["huffman_gennorm"]["payload_bits"] - slip["huffman_gennorm"]["payload_bits"]
    assert diff == nonzero - grid.n_magnitudes
    assert exact["lz78"]["payload_bits"] == slip["lz78"]["payload_bits"]
