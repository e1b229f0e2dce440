"""The field's compressors against their own definitions: QSGD, TernGrad, scaled sign with
error feedback (EF-SGD), random-K and PowerSGD; rates recomputed independently.

Statistical checks use fixed seeds (so they are deterministic) and a tolerance of 5 standard
errors of the Monte Carlo mean, computed from the method's own per-entry variance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from bitarray import bitarray

from gradcomp.compression import (
    QSGD,
    PowerSGD,
    QSGDEliasCode,
    RandomK,
    ScaledSign,
    TernGrad,
    build_compressor,
    qsgd_variance_bound,
)
from gradcomp.study.config import ConfigError
from gradcomp.study.lossy import compressor_variants

TRIALS = 3000


def gamma_len(v: int) -> int:
    """Elias-gamma codeword length, from the definition (v in binary, its length - 1 zeros)."""
    return 2 * int(v).bit_length() - 1


def vector(n: int = 40, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, generator=g, dtype=torch.float64) * torch.rand(n, generator=g)
    v[3] = 0.0  # an exact zero stays zero
    return v


def monte_carlo(quantizer, v: torch.Tensor, trials: int = TRIALS) -> torch.Tensor:
    """``trials`` decoded quantizations of v, (trials, n)."""
    return torch.stack([quantizer.decode(quantizer.encode(v)) for _ in range(trials)])


def sent_scale(quantizer, v: torch.Tensor, true_scale: float) -> float:
    """The scale sent as side info: a float32 at least the true one, within float32 rounding."""
    (sent,) = quantizer.encode(v).side.values()
    assert true_scale <= sent <= true_scale * (1 + 2**-23) and sent == np.float32(sent)
    return sent


def assert_unbiased(samples: torch.Tensor, v: torch.Tensor, per_entry_var: torch.Tensor):
    stderr = (per_entry_var / samples.shape[0]).sqrt()
    assert ((samples.mean(0) - v).abs() <= 5 * stderr + 1e-12).all()


@pytest.mark.slow
@pytest.mark.parametrize("rate", [2, 4])
def test_qsgd_is_unbiased_with_the_definition_s_levels(rate):
    v, s = vector(), 2 ** (rate - 1) - 1
    q = QSGD(rate, seed=1)
    samples = monte_carlo(q, v)
    norm = sent_scale(q, v, float(v.norm()))
    xi = samples * s / norm  # the levels xi * sign, integers in -s..s
    assert torch.allclose(xi, xi.round(), atol=1e-6) and xi.abs().max() <= s
    assert ((samples == 0) | (samples.sign() == v.sign())).all() and (samples[:, 3] == 0).all()
    r = s * v.abs() / norm
    frac = r - r.floor()
    per_entry_var = (norm / s) ** 2 * frac * (1 - frac)  # Bernoulli(frac) rounding
    assert_unbiased(samples, v, per_entry_var)
    # a planted bias (nearest rounding) would be caught by this tolerance
    nearest = torch.sign(v) * (r.round()) * norm / s
    assert ((nearest - v).abs() > 5 * (per_entry_var / TRIALS).sqrt() + 1e-12).any()


@pytest.mark.slow
@pytest.mark.parametrize(
    "v",
    [vector(400, 1), torch.ones(400, dtype=torch.float64), torch.linspace(-1, 1, 400).double()],
)
@pytest.mark.parametrize("rate", [2, 3, 5])
def test_qsgd_variance_bound(v, rate):
    s, norm = 2 ** (rate - 1) - 1, float(v.norm())
    samples = monte_carlo(QSGD(rate, seed=2), v, 1000)
    mse = ((samples - v) ** 2).sum(1).mean() / norm**2
    r = s * v.abs() / norm
    exact = float(((norm / s) ** 2 * (r - r.floor()) * (r.ceil() - r)).sum()) / norm**2
    assert mse <= qsgd_variance_bound(v.numel(), s) and exact <= qsgd_variance_bound(400, s)
    assert float(mse) == pytest.approx(exact, rel=0.1, abs=1e-9)


@pytest.mark.slow
def test_qsgd_elias_stream_by_hand():
    # s = 3, levels [0, 2, 0, 0, -1]: count 2; gap 2, +, level 2; gap 3, -, level 1
    code = QSGDEliasCode(3)
    indices = np.array([0, 2, 0, 0, -1]) + 3
    bits = code.encode(indices)
    expected = format(2, "032b") + "010" + "0" + "010" + "011" + "1" + "1"
    assert bits == bitarray(expected) and code.side_info_bits() == 0
    np.testing.assert_array_equal(code.decode(bits, 5), indices)
    with pytest.raises(ValueError):
        code.decode(bits[:-1], 5)


@pytest.mark.slow
def test_qsgd_rates_recomputed():
    upd = {"w": 0.01 * vector(6000, 3).reshape(60, 100), "b": vector(30, 4)}
    c = build_compressor(
        {"quantizer": "qsgd", "rate": 3, "min_entries": 100, "seed": 5, "bucket_size": 6000}
    )
    payload, ctx = c.compress(upd)
    out, rate = c.decompress(payload, ctx), c.rate(payload, ctx)
    levels = payload["w"].quantized.indices.numpy() - 3  # s = 3
    nz = np.flatnonzero(levels)
    gaps = np.diff(nz, prepend=-1)
    coded = 32 + sum(
        gamma_len(g) + 1 + gamma_len(abs(levels[i])) for g, i in zip(gaps, nz, strict=True)
    )
    assert rate.payload_huffman_bits == coded and rate.huffman_side_bits == 0
    assert rate.payload_fixed_bits == 3 * 6000  # R bits per entry: index of 2^R - 1 levels
    assert rate.side_bits == 32 and rate.raw_bits == 32 * 30 and rate.position_bits == 0
    norm = payload["w"].quantized.side["norm"]
    expected = (torch.from_numpy(levels) * norm / 3).reshape(60, 100)
    torch.testing.assert_close(out["w"], expected.to(out["w"].dtype))
    torch.testing.assert_close(out["b"], upd["b"].float().double())


@pytest.mark.slow
def test_terngrad_is_unbiased_ternary_with_the_max_scale():
    v = vector()
    samples = monte_carlo(TernGrad(seed=3), v)
    s = sent_scale(TernGrad(), v, float(v.abs().max()))
    assert set(torch.unique(samples / s).round().tolist()) <= {-1.0, 0.0, 1.0}
    assert ((samples == 0) | (samples.sign() == v.sign())).all()
    assert_unbiased(samples, v, s * v.abs() - v**2)  # Var of s sign(v) Bernoulli(|v|/s)


def test_terngrad_rates_recomputed():
    v = vector(5000, 6)
    c = build_compressor({"quantizer": "terngrad", "seed": 1})
    payload, ctx = c.compress({"w": v})
    rate = c.rate(payload, ctx)
    counts = np.bincount(payload["w"].quantized.indices.numpy(), minlength=3)
    p = counts[counts > 0] / counts.sum()
    entropy = float(-(counts[counts > 0] * np.log2(p)).sum())
    assert entropy <= rate.payload_huffman_bits <= entropy + 5000  # Huffman: H <= L < H + 1
    assert rate.payload_fixed_bits == 2 * 5000 and rate.side_bits == 32
    assert rate.huffman_side_bits == payload["w"].code.side_info_bits() > 0
    assert build_compressor({"quantizer": "terngrad"}).quantize.quantizer.fixed_rate == 2


@pytest.mark.slow
def test_scaled_sign_with_error_feedback_updates_the_memory():
    g1, g2 = vector(2000, 7), vector(2000, 8)
    g1[5] = 0.0
    c = build_compressor(
        {"quantizer": "scaled_sign", "error_feedback": True, "min_entries": 10, "seed": 0}
    )
    e = torch.zeros(2000, dtype=torch.float64)
    for g in (g1, g2):
        payload, ctx = c.compress({"w": g})
        p = g + e  # EF-SGD: p = g + e; delta = (||p||_1 / d) sign(p); e = p - delta
        sign = torch.where(p >= 0, 1.0, -1.0).double()
        delta = float(np.float32(p.abs().mean())) * sign
        torch.testing.assert_close(c.decompress(payload, ctx)["w"], delta)
        e = p - delta
        torch.testing.assert_close(c.memory.residuals["w"], e)
        rate = c.rate(payload, ctx)
        assert rate.payload_fixed_bits == rate.payload_huffman_bits == 2000
        assert rate.total(True) == rate.total(False) == 2000 + 32
    assert ScaledSign.fixed_rate == 1


@pytest.mark.slow
def test_random_k_is_unbiased_and_keeps_exactly_k():
    upd = {"a": vector(30, 9), "z": torch.zeros(10, dtype=torch.float64)}
    c = build_compressor(
        {"quantizer": "none", "sparsifier": "randomk", "topk": 0.25, "min_entries": 0, "seed": 4}
    )
    k, n, draws = 10, 40, []
    for step in range(TRIALS):
        payload, ctx = c.compress(upd)
        out = c.decompress(payload, ctx)
        masks = c.kept_masks(payload, ctx)
        assert sum(int(m.sum()) for m in masks.values()) == k
        # the receiver regenerates the positions from the seed and the update's index
        seed = RandomK.mask_seed(4, step)
        again = RandomK.masks_from_seed(seed, k, {n_: t.shape for n_, t in upd.items()})
        assert all(torch.equal(again[name], masks[name]) for name in upd)
        rate = c.rate(payload, ctx)
        assert rate.position_bits == 0 and rate.n_sent == k  # zeros in the mask sent too
        assert rate.total(True) == 32 * k
        draws.append(torch.cat([out["a"], out["z"]]))
    samples, v = torch.stack(draws), torch.cat([upd["a"], upd["z"]])
    p = k / n
    assert_unbiased(samples, v, v**2 * (1 / p - 1))
    assert ((samples == 0) | torch.isclose(samples, v / p)).all()


def test_powersgd_rank_and_exactness_on_rank_r_input():
    g = torch.Generator().manual_seed(0)
    low = torch.randn(64, 3, generator=g) @ torch.randn(3, 90, generator=g)
    update = {"conv": low.reshape(64, 10, 3, 3), "bias": torch.randn(64, generator=g)}
    c = PowerSGD(3, seed=1)
    payload, ctx = c.compress(update)
    out = c.decompress(payload, ctx)
    torch.testing.assert_close(out["conv"], update["conv"], rtol=1e-4, atol=1e-4)
    assert torch.equal(out["bias"], update["bias"])
    assert payload["conv"].p.shape == (64, 3) and payload["conv"].q.shape == (90, 3)
    rate = c.rate(payload, ctx)
    assert rate.payload_fixed_bits == rate.payload_huffman_bits == 32 * (64 + 90) * 3
    assert rate.raw_bits == 32 * 64 and rate.total(True) == 32 * (154 * 3 + 64)
    full = {"w": torch.randn(50, 40, generator=g)}
    rank2 = PowerSGD(2, seed=1)
    recon = rank2.decompress(*rank2.compress(full))["w"]
    assert torch.linalg.matrix_rank(recon.double(), rtol=1e-5) == 2


def test_powersgd_warm_start_converges_to_the_best_rank_r():
    # the same matrix every round, no memory: warm-started power iteration = subspace iteration
    g = torch.Generator().manual_seed(2)
    u, _ = torch.linalg.qr(torch.randn(40, 40, generator=g, dtype=torch.float64))
    w, _ = torch.linalg.qr(torch.randn(30, 30, generator=g, dtype=torch.float64))
    sv = torch.tensor([10.0, 8.0, 3.0, 2.0] + [0.5] * 26, dtype=torch.float64)
    m = (u[:, :30] * sv) @ w.T
    c = PowerSGD(2, seed=3)
    for _ in range(40):
        recon = c.decompress(*c.compress({"w": m}))["w"]
    best = float(sv[2:].pow(2).sum().sqrt())  # Eckart-Young
    assert float((recon - m).norm()) == pytest.approx(best, rel=1e-4)


def test_powersgd_error_feedback_and_raw_tensors():
    g = torch.Generator().manual_seed(4)
    c = build_compressor({"compressor": "powersgd", "rate": 1, "error_feedback": True})
    small = {"w": torch.randn(30, 20, generator=g), "tiny": torch.randn(3, 2, generator=g)}
    payload, ctx = c.compress(small)
    out = c.decompress(payload, ctx)
    torch.testing.assert_close(c.memory.residuals["w"], small["w"] - out["w"])
    assert payload["tiny"].raw is not None  # 2 (3 + 2) 1 >= 3 * 2: no saving, sent raw
    assert torch.equal(c.memory.residuals["tiny"], torch.zeros(3, 2))
    second = {n: torch.randn(t.shape, generator=g) for n, t in small.items()}
    payload, ctx = c.compress(second)
    out2 = c.decompress(payload, ctx)
    torch.testing.assert_close(
        c.memory.residuals["w"], second["w"] + small["w"] - out["w"] - out2["w"]
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"quantizer": "qsgd", "rate": 3},
        {"quantizer": "terngrad"},
        {"quantizer": "none", "sparsifier": "randomk", "topk": 0.3},
        {"compressor": "powersgd", "rate": 2},
    ],
)
def test_stochastic_compressors_are_deterministic_per_seed(spec):
    upd = {"w": vector(3000, 11).reshape(30, 100).float()}

    def run(seed):
        c = build_compressor({**spec, "seed": seed})
        return [c.decompress(*c.compress(upd))["w"] for _ in range(2)]

    first, again, other = run(1), run(1), run(2)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])


@pytest.mark.parametrize(
    "spec, key",
    [
        ({"quantizer": "qsgd", "rate": 1}, "rate"),
        ({"quantizer": "terngrad", "rate": 3}, "rate"),
        ({"quantizer": "scaled_sign", "M": 2}, "M"),
        ({"quantizer": "none", "sparsifier": "random"}, "sparsifier"),
        ({"compressor": "powersgd"}, "rate"),
        ({"compressor": "powersgd", "rate": 0}, "rate"),
        ({"compressor": "powersgd", "rate": 2, "topk": 0.4}, "topk"),
        ({"compressor": "powersgd", "rate": 2, "family": "norm"}, "family"),
        ({"compressor": "lowrank", "rate": 2}, "compressor"),
        ({"quantizer": "none", "compressor": "powersgd", "rate": 2}, "compressor"),
        ({"quantizer": "none", "options": {"a": 1}}, "options"),
    ],
)
def test_bad_field_spec_names_the_key(spec, key):
    with pytest.raises(ValueError, match=f"'{key}'"):
        build_compressor(spec)


def test_config_entries_of_the_field():
    lossy = {"topk": 0.452, "error_feedback": False, "min_entries": 1000, "memory_decay": 1.0}
    lossy["compressors"] = [
        {"name": "qsgd", "quantizer": "qsgd", "rates": [2, 4], "sparsifier": "none"},
        {"name": "terngrad", "quantizer": "terngrad", "sparsifier": "none"},
        {"name": "randk", "quantizer": "none", "sparsifier": "randomk", "topk": 0.1},
        {"name": "powersgd", "compressor": "powersgd", "rates": [1, 4], "error_feedback": True},
    ]
    variants = {(v.name, v.rate, v.M): v.spec for v in compressor_variants(lossy)}
    assert set(variants) == {
        ("qsgd", 2, 0), ("qsgd", 4, 0), ("terngrad", 2, 0), ("randk", 32, 0),
        ("powersgd", 1, 0), ("powersgd", 4, 0),
    }  # fmt: skip
    assert variants[("powersgd", 4, 0)]["topk"] is None  # the lossy section's top-K: not its key
    assert build_compressor(variants[("powersgd", 4, 0)]).rank == 4
    bad = {
        **lossy,
        "compressors": [{"name": "p", "compressor": "powersgd", "rates": [2], "M": [1]}],
    }
    with pytest.raises(ConfigError, match=r"lossy\.compressors\.0\.M"):
        compressor_variants(bad)
    both = {**lossy, "compressors": [{"name": "p", "quantizer": "none", "compressor": "powersgd"}]}
    with pytest.raises(ConfigError, match=r"'lossy\.compressors\.0': give exactly one"):
        compressor_variants(both)


def test_qsgd_rate_maps_to_levels():
    assert [QSGD(r).s for r in (2, 3, 4, 8)] == [1, 3, 7, 127]
    assert all(math.ceil(math.log2(2 * QSGD(r).s + 1)) == r for r in range(2, 17))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "spec",
    [
        {"quantizer": "qsgd", "rate": 4, "sparsifier": "none"},
        {"quantizer": "terngrad", "sparsifier": "none"},
        {"quantizer": "scaled_sign", "sparsifier": "none", "error_feedback": True},
        {"quantizer": "none", "sparsifier": "randomk", "topk": 0.2},
        {"compressor": "powersgd", "rate": 2, "error_feedback": True},
    ],
)
def test_field_compressors_on_cuda_match_the_cpu(spec):
    upd = {"w": vector(6000, 12).reshape(60, 100).float(), "b": vector(60, 13).float()}
    cpu, gpu = build_compressor({**spec, "seed": 3}), build_compressor({**spec, "seed": 3})
    for _ in range(2):
        want = cpu.decompress(*cpu.compress(upd))
        got = gpu.decompress(*gpu.compress({n: t.cuda() for n, t in upd.items()}))
        for n, t in want.items():
            assert got[n].device.type == "cuda"
            torch.testing.assert_close(got[n].cpu(), t, rtol=1e-4, atol=1e-5)
