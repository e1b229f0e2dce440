from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from gradcomp.distributions import fit
from gradcomp.lossless.code_lossless import code_tensor, fp8_bytes
from gradcomp.quantization.grids import get_grid


@pytest.fixture(scope="module")
def gradient() -> np.ndarray:
    return scipy.stats.gennorm(0.8, scale=2e-3).rvs(20_000, random_state=1)


def by_coder(rows):
    return {r["coder"]: r for r in rows}


def e5m2_value(byte: int) -> float:
    """Decode one FP8 E5M2 byte from the format's definition: 1 sign bit, 5 exponent bits
    (bias 15), 2 mantissa bits; exponent 0 holds the subnormals (and zero), exponent 31
    inf/NaN."""
    sign = -1.0 if byte >> 7 else 1.0
    exponent, mantissa = (byte >> 2) & 0b11111, byte & 0b11
    if exponent == 31:
        return sign * math.inf if mantissa == 0 else math.nan
    if exponent == 0:
        return sign * (mantissa / 4) * 2.0**-14
    return sign * (1 + mantissa / 4) * 2.0 ** (exponent - 15)


def test_e5m2_decoder_reference_points() -> None:
    # the decoder above against well-known E5M2 values
    assert e5m2_value(0x3C) == 1.0 and e5m2_value(0xC0) == -2.0
    assert e5m2_value(0x7B) == 57344.0  # largest finite
    assert e5m2_value(0x04) == 2.0**-14 and e5m2_value(0x01) == 2.0**-16  # normal / subnormal
    assert e5m2_value(0x7C) == math.inf and math.isnan(e5m2_value(0x7F))


def test_fp8_bytes_are_e5m2_bit_patterns(gradient) -> None:
    grid = get_grid("fp8_e5m2")
    finite = [b for b in range(256) if (b >> 2) & 0b11111 != 31]
    table = np.array([e5m2_value(b) for b in finite])
    # the grid is exactly the set of finite E5M2 values
    np.testing.assert_array_equal(grid.levels, np.unique(table))
    # every finite byte (-0 included) is the code of its own value
    assert fp8_bytes(table, grid) == bytes(finite)
    # real data, with zeros, subnormals, the extremes and saturating values
    special = [0.0, -0.0, 1e-9, -1e-9, 2.0**-16, -(2.0**-14), 57344.0, -57344.0, 1e9, -1e9]
    values = grid.quantize(np.concatenate([gradient, special]))
    codes = fp8_bytes(values, grid)
    assert len(codes) == values.size
    decoded = np.array([e5m2_value(b) for b in codes])
    np.testing.assert_array_equal(decoded, values)
    assert np.all(np.signbit(decoded[values != 0]) == np.signbit(values[values != 0]))


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
