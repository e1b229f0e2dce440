from __future__ import annotations

import heapq
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch

from gradcomp.distributions import fit
from gradcomp.lossless.code_lossless import code_run, code_tensor, fp8_bytes, model_code
from gradcomp.lossless.dumps import write_dump
from gradcomp.lossless.fit_lossless import fit_run
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


@pytest.mark.slow
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
        # float32 parameters and a flag bit saying whether p0 follows
        assert rows[f"huffman_{family}"]["side_bits"] == 32 * len(fits[family].params) + 1
    # GenNorm data: the GenNorm-designed code beats the Norm-designed one
    assert rows["huffman_gennorm"]["payload_bits"] < rows["huffman_norm"]["payload_bits"]
    assert rows["ans_gennorm"]["payload_bits"] <= rows["huffman_gennorm"]["payload_bits"] + 64
    nonzero = rows["entropy"]["n_nonzero"]
    assert 0 < nonzero <= n


@pytest.mark.slow
def test_slip_charges_one_sign_bit_per_codebook_symbol(gradient) -> None:
    grid = get_grid("fp8_e5m2")
    fits = {"gennorm": fit(gradient, "gennorm")}
    exact = by_coder(code_tensor(gradient, fits, grid, general_purpose=False))
    slip = by_coder(code_tensor(gradient, fits, grid, sign_per_symbol=True, general_purpose=False))
    nonzero = exact["entropy"]["n_nonzero"]
    diff = exact["huffman_gennorm"]["payload_bits"] - slip["huffman_gennorm"]["payload_bits"]
    assert diff == nonzero - grid.n_magnitudes
    # every coder charged alike: only the i.i.d. and per-channel codes, whose signs are raw
    # bits, each re-charged by the same count; no context coder or byte compressor
    raw = {"huffman_gennorm", "xent_gennorm", "ans_gennorm", "huffman_empirical", "entropy",
           "ans_gennorm_channel", "entropy_channel"}  # fmt: skip
    assert set(slip) == raw and {"lz78", "ans_context", "cm_fast"} <= set(exact)
    for name in raw:
        assert exact[name]["payload_bits"] - slip[name]["payload_bits"] == pytest.approx(diff)


def huffman_total_bits(counts: np.ndarray) -> int:
    """Bits of an optimal prefix code for these symbol counts: the sum of the weights of
    the merged nodes of Huffman's construction (independent of the project's coder)."""
    heap = [int(c) for c in counts if c > 0]
    heapq.heapify(heap)
    total = 0
    while len(heap) > 1:
        merged = heapq.heappop(heap) + heapq.heappop(heap)
        total += merged
        heapq.heappush(heap, merged)
    return total if len(counts[counts > 0]) > 1 else int(counts.sum())


@pytest.mark.slow
@pytest.mark.parametrize("p0", [0.0, 0.02, 0.1, 0.3])
def test_huffman_gennorm_with_zero_atom_is_near_the_empirical_huffman(p0) -> None:
    x = scipy.stats.laplace.rvs(scale=1e-3, size=20_000, random_state=4)
    x[np.random.default_rng(5).permutation(x.size)[: round(p0 * x.size)]] = 0.0
    grid = get_grid("fp8_e5m2")
    fitted = fit(x, "gennorm")
    rows = by_coder(code_tensor(x, {"gennorm": fitted}, grid, general_purpose=False))
    q = grid.quantize(x)
    _, counts = np.unique(np.abs(q), return_counts=True)
    empirical = huffman_total_bits(counts) + np.count_nonzero(q)  # magnitudes + sign bits
    model = rows["huffman_gennorm"]["payload_bits"]
    assert empirical <= model <= 1.01 * empirical
    # beta, loc, scale, the p0 flag bit, p0
    assert rows["huffman_gennorm"]["side_bits"] == 32 * (3 + (p0 > 0)) + 1


def test_model_pmf_puts_p0_on_the_zero_bin() -> None:
    grid = get_grid("fp8_e5m2")
    fitted = fit(np.r_[np.zeros(300), np.linspace(-1, 1, 700)], "laplace")
    _, pmf = model_code(fitted, grid)
    half_bin = grid.magnitude_edges[1]  # |x| below it rounds to zero
    lap = scipy.stats.laplace(**fitted.params)
    continuous = lap.cdf(half_bin) - lap.cdf(-half_bin)
    assert pmf[0] == pytest.approx(0.3 + 0.7 * continuous, rel=1e-9)


@pytest.mark.slow
def test_zero_and_saturation_shares_follow_the_grid_range() -> None:
    # E5M2: |x| <= 2**-17 (half the smallest subnormal) rounds to zero, |x| > 57344 saturates
    rng = np.random.default_rng(0)
    x = rng.laplace(scale=1e-5, size=4000) * np.where(rng.random(4000) < 0.5, 1.0, 1e10)
    x[:40] = 0.0
    rows = code_tensor(x, {}, get_grid("fp8_e5m2"), general_purpose=False)
    for row in rows:
        assert row["zero_share"] == pytest.approx(np.mean(np.abs(x) <= 2.0**-17))
        assert row["saturated_share"] == pytest.approx(np.mean(np.abs(x) > 57344.0))
        assert min(row["zero_share"], row["saturated_share"]) > 0.01
        assert row["n_exact_zero"] == 40


@pytest.mark.slow
def test_amax_scaling_rows_in_the_run_table(tmp_path: Path) -> None:
    # gradients of the size the mean loss gives late in training: many round to zero raw
    rng = np.random.default_rng(1)
    tensor = torch.from_numpy(rng.laplace(scale=2e-5, size=(40, 50)).astype(np.float32))
    path = tmp_path / "epoch1.safetensors"
    kinds = {"epoch_avg": {"w": tensor}, "last_batch": {"w": tensor}}
    write_dump(path, kinds, {"epoch": 1, "n_batches": 5})
    fits = fit_run([path], model="m", run=0, families=["gennorm"], floc=None, skip_below=10)
    table = code_run(
        [path], fits, model="m", run=0, families=["gennorm"],
        accountings=["exact"], scalings=["none", "amax"], general_purpose=False,
    )  # fmt: skip
    none = table[table["scaling"] == "none"].set_index("coder")
    amax = table[table["scaling"] == "amax"].set_index("coder")
    values = tensor.double().numpy()
    k = int(amax["scale_exponent"].iloc[0])
    assert np.abs(values).max() * 2.0**k <= 57344.0 < np.abs(values).max() * 2.0 ** (k + 1)
    assert none["zero_share"].iloc[0] == pytest.approx(np.mean(np.abs(values) <= 2.0**-17))
    assert none["zero_share"].iloc[0] > 0.05
    assert amax["zero_share"].iloc[0] == 0.0 and amax["saturated_share"].iloc[0] == 0.0
    # the same coders, each charged the 8-bit exponent on top; FP8 stays 8 bits an entry
    assert (amax["side_bits"] - none["side_bits"] == 8).all()
    assert amax.loc["fp8", "payload_bits"] == 8 * values.size
    scaled = torch.from_numpy(values * 2.0**k).to(torch.float8_e5m2)
    grid = get_grid("fp8_e5m2", scale=2.0**-k)
    assert fp8_bytes(grid.quantize(values), grid) == scaled.view(torch.uint8).numpy().tobytes()
