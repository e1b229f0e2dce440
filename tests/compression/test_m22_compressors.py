"""The follow-up's (M22) compressors against independent references: float8 vs a decode of the
8-bit formats from their definition and torch's casts, bucketed QSGD vs its definition and
bound, the count sketch vs its definition and the textbook bound, M22's memory by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from gradcomp.compression import SpecError, build_compressor, check_spec
from gradcomp.compression.count_sketch import CountSketch, SketchHash
from gradcomp.compression.float8 import Float8
from gradcomp.compression.qsgd import QSGD, qsgd_variance_bound
from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.study.lossy import compressor_variants


def fp8_values(exp_bits: int, man_bits: int, bias: int, ieee: bool) -> np.ndarray:
    """Every finite value of an 8-bit float, decoded code by code from the bit layout
    (sign | exponent | mantissa). ``ieee``: exponent all ones is inf/NaN (E5M2); otherwise only
    S.1111.111 is NaN (E4M3 'fn')."""
    out = set()
    for code in range(256):
        sign = -1.0 if code >> 7 else 1.0
        e = (code >> man_bits) & (2**exp_bits - 1)
        m = code & (2**man_bits - 1)
        if ieee and e == 2**exp_bits - 1:
            continue
        if not ieee and e == 2**exp_bits - 1 and m == 2**man_bits - 1:
            continue
        if e == 0:
            value = m / 2**man_bits * 2.0 ** (1 - bias)
        else:
            value = (1 + m / 2**man_bits) * 2.0 ** (e - bias)
        out.add(sign * value)
    return np.array(sorted(out))


FORMATS = {
    "e5m2": (fp8_values(5, 2, 15, True), torch.float8_e5m2),
    "e4m3": (fp8_values(4, 3, 7, False), torch.float8_e4m3fn),
}


def test_float8_grids_are_the_formats_finite_values():
    """Planted bug caught: a wrong bias, or the E5M2 inf codes counted as values."""
    for fmt, (values, _) in FORMATS.items():
        np.testing.assert_array_equal(Float8(fmt).unit_levels, values)
    assert len(FORMATS["e5m2"][0]) == 247 and FORMATS["e5m2"][0][-1] == 57344
    assert len(FORMATS["e4m3"][0]) == 253 and FORMATS["e4m3"][0][-1] == 448


def probe_values(values: np.ndarray, seed: int) -> torch.Tensor:
    """Random in-range values, every grid value and every exact midpoint (ties), float32."""
    rng = np.random.default_rng(seed)
    top = values[-1]
    mids = 0.5 * (values[1:] + values[:-1])
    spread = np.concatenate([rng.uniform(-top, top, 2000), rng.standard_normal(2000) * 1e-3])
    return torch.tensor(np.concatenate([spread, values, mids]), dtype=torch.float32)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["e5m2", "e4m3"])
def test_float8_even_ties_match_the_torch_cast(fmt):
    """Round to nearest, ties to even, as torch casts in range. Planted bug caught: ties
    towards zero or upwards (the midpoints are in the probe)."""
    values, dtype = FORMATS[fmt]
    x = probe_values(values, 1)
    q = Float8(fmt)
    got = q.decode(q.encode(x))
    want = x.to(dtype).to(torch.float64)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_float8_saturates_beyond_the_largest_value():
    """Out of range: E4M3 saturates to +-448 as torch's cast does; E5M2 saturates to +-57344
    where torch's cast gives inf. Planted bug caught: values beyond range sent as inf."""
    x = torch.tensor([500.0, -1e4, 448.0, 1e5, -7e4], dtype=torch.float32)
    e4 = Float8("e4m3")
    torch.testing.assert_close(e4.decode(e4.encode(x)), x.to(torch.float8_e4m3fn).double())
    e5 = Float8("e5m2")
    got = e5.decode(e5.encode(x))
    assert got.tolist() == [512.0, -10240.0, 448.0, 57344.0, -57344.0]
    assert torch.isinf(x[3:].to(torch.float8_e5m2).double()).all()


@pytest.mark.parametrize("fmt", ["e5m2", "e4m3"])
def test_float8_upper_ties_are_m22s_digitize(fmt):
    """M22: ``centers[np.digitize(x, midpoints)]`` (ties up, saturation). Planted bug caught:
    the default even rule, which differs on half the midpoints."""
    values, _ = FORMATS[fmt]
    x = torch.cat([probe_values(values, 2), torch.tensor([1e6, -1e6, np.inf, -np.inf])])
    q = Float8(fmt, ties="upper")
    want = values[np.digitize(x.double().numpy(), 0.5 * (values[1:] + values[:-1]))]
    np.testing.assert_array_equal(q.decode(q.encode(x)).numpy(), want)
    assert not np.array_equal(Float8(fmt).decode(Float8(fmt).encode(x)).numpy(), want)


@pytest.mark.parametrize("fmt", ["e5m2", "e4m3"])
def test_float8_amax_scaling_is_a_power_of_two_sent_in_8_bits(fmt):
    """k is the largest integer with amax 2^k <= max level (found here by a scan); the output is
    the torch cast of ``x 2^k`` divided by ``2^k``. Planted bug caught: k off by one (the top
    value would saturate, or the grid would lose a binade)."""
    values, dtype = FORMATS[fmt]
    x = torch.tensor(stats.gennorm.rvs(0.8, size=3000, random_state=3) * 1e-4)
    amax = float(x.abs().max())
    k = next(k for k in range(200, -200, -1) if amax * 2.0**k <= values[-1])
    q = Float8(fmt, scaling="amax")
    enc = q.encode(x)
    assert enc.side == {"exponent": k} and enc.side_bits == 8
    want = (x * 2.0**k).to(torch.float32).to(dtype).to(torch.float64) / 2.0**k
    torch.testing.assert_close(q.decode(enc), want, rtol=0, atol=0)
    unscaled = Float8(fmt).encode(x)
    assert unscaled.side_bits == 0
    # scaling keeps more than the raw cast of these small values
    assert ((q.decode(enc) - x) ** 2).sum() < ((Float8(fmt).decode(unscaled) - x) ** 2).sum()


def test_float8_rates_fixed_and_huffman():
    """8 bits per value fixed; the Huffman column is the real bitstream plus its table."""
    x = torch.tensor(stats.gennorm.rvs(0.8, size=5000, random_state=4) * 1e-3)
    c = build_compressor({"quantizer": "float8", "float8_format": "e4m3", "float8_scaling": "amax"})
    payload, ctx = c.compress({"w": x})
    rate = c.rate(payload, ctx)
    assert rate.payload_fixed_bits == 8 * 5000 and rate.side_bits == 8
    assert rate.payload_huffman_bits == len(payload["w"].bitstream) < 8 * 5000
    torch.testing.assert_close(
        c.decompress(payload, ctx)["w"],
        Float8("e4m3", scaling="amax").decode(payload["w"].quantized),
    )
    with pytest.raises(ValueError, match="NaN"):
        Float8().encode(torch.tensor([1.0, float("nan")]))


@pytest.mark.parametrize(
    "spec, key",
    [
        ({"quantizer": "float8", "float8_format": "e3m4"}, "float8_format"),
        ({"quantizer": "float8", "float8_ties": "down"}, "float8_ties"),
        ({"quantizer": "float8", "rate": 4}, "rate"),
        ({"quantizer": "uniform", "rate": 2, "float8_ties": "upper"}, "float8_ties"),
        ({"quantizer": "uniform", "rate": 2, "bucket_size": 512}, "bucket_size"),
        ({"quantizer": "qsgd", "rate": 2, "bucket_size": 0}, "bucket_size"),
        ({"quantizer": "uniform", "rate": 2, "memory_mode": "m22"}, "memory_mode"),
        (
            {"quantizer": "uniform", "rate": 2, "memory_mode": "m23", "error_feedback": True},
            "memory_mode",
        ),
        ({"compressor": "count_sketch", "rate": 10, "rows": 0}, "rows"),
        ({"compressor": "count_sketch", "rate": 100, "topk": 0.5}, "topk"),
        ({"compressor": "count_sketch", "rate": 100, "sketch_k_ratio": 0}, "sketch_k_ratio"),
        ({"compressor": "count_sketch", "rate": 100, "sketch_feedback": "add"}, "sketch_feedback"),
        ({"compressor": "count_sketch", "rate": 100, "sketch_hash": "crc"}, "sketch_hash"),
        ({"compressor": "count_sketch", "rate": 100, "sketch_topk": 1.5}, "sketch_topk"),
        ({"compressor": "count_sketch", "rate": 10, "sketch_scope": "layer"}, "sketch_scope"),
        ({"compressor": "count_sketch", "rate": 10, "bucket_size": 4}, "bucket_size"),
        ({"compressor": "powersgd", "rate": 2, "rows": 4}, "rows"),
    ],
)
def test_new_spec_keys_are_checked(spec, key):
    with pytest.raises(SpecError) as err:
        check_spec(spec)
    assert err.value.key == key


def test_new_kinds_are_registered_with_their_defaults():
    assert QUANTIZERS["float8"] is Float8 and COMPRESSORS["count_sketch"] is CountSketch
    s = check_spec({"quantizer": "float8"})
    assert (s["float8_format"], s["float8_scaling"], s["float8_ties"], s["rate"]) == (
        "e5m2", "none", "even", 8,
    )  # fmt: skip
    assert check_spec({"quantizer": "qsgd", "rate": 3})["bucket_size"] == 512
    m22 = check_spec(
        {"quantizer": "kmeans", "rate": 2, "error_feedback": True, "memory_mode": "m22"}
    )
    assert (
        m22["memory_decay"] == 0.3
        and check_spec({"quantizer": "kmeans", "rate": 2})["memory_decay"] == 1.0
    )
    cs = check_spec({"compressor": "count_sketch", "rate": 100})
    assert (cs["rows"], cs["sketch_k_ratio"], cs["min_entries"], cs["sketch_scope"]) == (
        5,
        0.25,
        1000,
        "update",
    )
    assert (cs["sketch_feedback"], cs["sketch_hash"], cs["sketch_topk"], cs["topk"]) == (
        "zero", "random", None, None,
    )  # fmt: skip
    lossy = {"topk": 0.1, "error_feedback": False, "min_entries": 1000, "memory_decay": None}
    lossy["compressors"] = [
        {"name": "sk", "compressor": "count_sketch", "rates": [100, 200], "rows": 3},
        {"name": "fp", "quantizer": "float8", "float8_ties": "upper", "sparsifier": "none"},
        {
            "name": "km",
            "quantizer": "kmeans",
            "rates": [2],
            "error_feedback": True,
            "memory_mode": "m22",
        },
    ]
    variants = {(v.name, v.rate): v.spec for v in compressor_variants(lossy)}
    sk = build_compressor(variants[("sk", 200)])
    assert (sk.rows, sk.percent, sk.k_ratio, sk.topk) == (3, 200, 0.25, None)  # no lossy.topk
    assert build_compressor(variants[("fp", 8)]).quantize.quantizer.ties == "upper"
    km = build_compressor(variants[("km", 2)])
    assert (km.memory.mode, km.memory.decay) == ("m22", 0.3)


# ---- QSGD with buckets --------------------------------------------------------------------


def vector(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, generator=g, dtype=torch.float64) * torch.rand(n, generator=g) ** 3
    v[:100] *= 20  # buckets of very different norms
    return v


@pytest.mark.slow
@pytest.mark.parametrize("rate", [2, 4])
def test_qsgd_buckets_unbiased_within_the_bound_per_bucket(rate):
    """Each bucket of 512 (the last one of 276) is QSGD of its own: unbiased, the bucket's norm
    as its scale, and its variance ``sum (norm/s)^2 f (1 - f)`` (f: fractional level) within
    Lemma 3.1's bound for a bucket of its size. Planted bug caught: one norm for the whole
    tensor (the per-bucket scales and the variance would not match)."""
    v, s, trials = vector(1300, 5), 2 ** (rate - 1) - 1, 1000
    q = QSGD(rate, seed=7, bucket_size=512)
    encoded = [q.encode(v) for _ in range(trials)]
    samples = torch.stack([q.decode(e) for e in encoded])
    edges = [(0, 512), (512, 1024), (1024, 1300)]
    norms = np.array([float(v[a:b].norm()) for a, b in edges])
    np.testing.assert_allclose(encoded[0].scales, norms, rtol=2**-23)
    assert encoded[0].side_bits == 32 * 3
    for (a, b), norm in zip(edges, norms, strict=True):
        r = s * v[a:b].abs() / norm
        f = r - r.floor()
        per_entry = (norm / s) ** 2 * f * (1 - f)
        mean_err = (samples[:, a:b].mean(0) - v[a:b]).abs()
        # 5 standard errors, plus 4 steps of norm/s over the trials for the rare-event entries
        # (f near 0 or 1) where the normal approximation fails
        assert (mean_err <= 5 * (per_entry / trials).sqrt() + 4 * norm / (s * trials)).all()
        mse = float(((samples[:, a:b] - v[a:b]) ** 2).sum(1).mean())
        assert mse == pytest.approx(float(per_entry.sum()), rel=0.1)
        assert mse <= qsgd_variance_bound(b - a, s) * norm**2


def test_qsgd_one_bucket_is_the_whole_tensor_qsgd():
    """bucket_size = tensor size reproduces whole-tensor QSGD, rebuilt here from its definition
    with the same uniforms (one generator draw per entry). Planted bug caught: the last bucket
    padded into the norm or the uniforms drawn per bucket in another order."""
    v, rate, seed = vector(1300, 6), 3, 11
    s = 2 ** (rate - 1) - 1
    q = QSGD(rate, seed=seed, bucket_size=1300)
    got = q.decode(q.encode(v))
    u = torch.rand(1300, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    norm = float(np.float32(float(v.norm())))
    norm = norm if norm >= float(v.norm()) else float(np.nextafter(np.float32(norm), np.inf))
    r = s * v.abs() / norm
    xi = r.floor() + (u < r - r.floor()).double()
    torch.testing.assert_close(got, norm * torch.sign(v) * xi / s, rtol=0, atol=1e-15)
    whole = QSGD(rate, seed=seed)
    torch.testing.assert_close(whole.decode(whole.encode(v)), got, rtol=0, atol=0)


def test_qsgd_bucketed_rate_on_an_update():
    """Side info is one 32-bit norm per bucket; the default bucket is 512 entries."""
    upd = {"w": vector(6000, 8).reshape(60, 100), "b": vector(30, 9)}
    c = build_compressor({"quantizer": "qsgd", "rate": 4, "min_entries": 100})
    rate = c.rate(*c.compress(upd))
    assert rate.side_bits == 32 * math.ceil(6000 / 512) and rate.payload_fixed_bits == 4 * 6000


# ---- count sketch -------------------------------------------------------------------------


def brute_force_sketch(h: SketchHash, x: np.ndarray) -> np.ndarray:
    table = np.zeros((h.rows, h.columns))
    for j in range(h.rows):
        for i in range(h.d):
            table[j, int(h.buckets[j, i])] += float(h.signs[j, i]) * x[i]
    return table


def test_sketch_is_the_definition_and_linear():
    """S[j, h_j(i)] += s_j(i) x_i, entry by entry; S(a) + S(b) = S(a + b), S(3a) = 3 S(a).
    Planted bug caught: signs left out (the brute force uses them)."""
    h = SketchHash(300, 3, 17, seed=4)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(300), rng.standard_normal(300)
    ta, tb = h.sketch(torch.tensor(a)), h.sketch(torch.tensor(b))
    np.testing.assert_allclose(ta.numpy(), brute_force_sketch(h, a), atol=1e-12)
    torch.testing.assert_close(ta + tb, h.sketch(torch.tensor(a + b)), rtol=0, atol=1e-12)
    torch.testing.assert_close(3 * ta, h.sketch(torch.tensor(3 * a)), rtol=0, atol=1e-12)
    assert set(h.signs.unique().tolist()) == {-1.0, 1.0}


def test_k_sparse_vector_is_recovered_exactly():
    """A 20-sparse vector of 20,000 entries from a 5 x 4000 sketch: the unsketch of the top 20
    is the vector. Planted bug caught: mean instead of median (a collision in one row would
    spoil the estimate)."""
    d, k = 20_000, 20
    rng = np.random.default_rng(1)
    x = np.zeros(d)
    x[rng.choice(d, k, replace=False)] = rng.choice([-1, 1], k) * rng.uniform(1, 10, k)
    h = SketchHash(d, 5, 4000, seed=2)
    got = h.unsketch(h.sketch(torch.tensor(x)), k)
    np.testing.assert_array_equal(got.numpy(), x)
    c = CountSketch(100, rows=5, k_ratio=k / 4000, min_entries=10, seed=3)
    upd = {"w": torch.tensor(x, dtype=torch.float32).reshape(200, 100), "b": torch.ones(10)}
    payload, ctx = c.compress(upd)
    out = c.decompress(payload, ctx)
    torch.testing.assert_close(out["w"], upd["w"], rtol=0, atol=0)
    torch.testing.assert_close(out["b"], upd["b"])


def test_median_estimate_meets_the_textbook_bound():
    """|est_i - x_i| <= eps ||x||_2 with probability >= 1 - delta for c = 3/eps^2 columns:
    one row fails with probability <= 1/3 (Chebyshev, Var <= ||x||^2 / c), the median of r rows
    only if r/2 rows fail, so delta = P(Binomial(r, 1/3) >= r/2) (scipy). Measured over 300
    hash seeds on a vector with a large mean, eps = 0.25, r = 5. Planted bug caught: no sign
    hashing (the mean of the colliding entries would bias every estimate)."""
    eps, rows = 0.25, 5
    columns = math.ceil(3 / eps**2)
    delta = stats.binom.sf(math.ceil(rows / 2) - 1, rows, 1 / 3)
    rng = np.random.default_rng(5)
    x = torch.tensor(1.0 + rng.standard_normal(1000) * 0.5)
    x[:5] = 20.0
    bound = eps * float(x.norm())
    fails = row_fails = 0
    for seed in range(300):
        h = SketchHash(1000, rows, columns, seed=seed)
        table = h.sketch(x)
        fails += int(((h.estimate(table) - x).abs() > bound).sum())
        per_row = h.signs * table.reshape(-1)[h._flat]
        row_fails += int(((per_row - x).abs() > bound).sum())
    assert row_fails / (300 * 1000 * rows) <= 1 / 3
    assert fails / (300 * 1000) <= delta
    unsigned = SketchHash(1000, rows, columns, seed=0)
    unsigned.signs = torch.ones_like(unsigned.signs)
    est = unsigned.estimate(unsigned.sketch(x))
    assert float(((est - x).abs() > bound).double().mean()) > delta


def test_error_feedback_lives_in_the_sketch_domain():
    """FetchSGD's invariant (decay 1): what was unsketched plus the sketch-domain error equals
    the sketch of everything sent, ``S(sum D_t) + S_e = sum S(x_t)``, each side computed here
    from the hash. Planted bug caught: S_e not reduced by S(D) (it would exceed the sum)."""
    c = CountSketch(
        20, rows=3, k_ratio=0.3, min_entries=10, error_feedback=True, feedback="subtract", seed=1
    )
    rng = np.random.default_rng(2)
    xs = [torch.tensor(rng.standard_t(2, 3000), dtype=torch.float32) for _ in range(3)]
    sent_sum = torch.zeros(3000, dtype=torch.float64)
    for x in xs:
        payload, ctx = c.compress({"w": x})
        sent_sum += c.decompress(payload, ctx)["w"].double()
    (sk,) = payload["sketches"]
    h = SketchHash(3000, 3, c.columns(3000), seed=c.seed_of(0))
    total = sum(h.sketch(x.double()) for x in xs)
    torch.testing.assert_close(h.sketch(sent_sum) + c.errors[("w",)], total, rtol=1e-5, atol=1e-4)
    assert sk.table.shape == (3, math.ceil(20 * 3000 / 300))


def test_count_sketch_rate_and_scopes():
    """32 bits per cell and nothing for the seed (the receiver derives it), raw small tensors;
    per-tensor scope: one sketch each with c = ceil(R d / (100 r)) (M22: R = 100, r = 5)."""
    upd = {"a": torch.randn(40, 50), "b": torch.randn(3000), "bias": torch.randn(20)}
    whole = CountSketch(10, rows=5, k_ratio=0.5, min_entries=100)
    rate = whole.rate(*whole.compress(upd))
    cells = 5 * math.ceil(10 * 5000 / 500)
    assert rate.payload_fixed_bits == rate.payload_huffman_bits == 32 * cells
    assert rate.side_bits == 0 and rate.raw_bits == 32 * 20 and rate.n_entries == 5020
    per = CountSketch(100, rows=5, k_ratio=0.5, min_entries=100, scope="tensor")
    payload, ctx = per.compress(upd)
    assert [s.table.shape for s in payload["sketches"]] == [(5, 400), (5, 600)]
    out = per.decompress(payload, ctx)
    assert {n: t.shape for n, t in out.items()} == {n: t.shape for n, t in upd.items()}
    assert int((out["a"] != 0).sum()) == 200 and int((out["b"] != 0).sum()) == 300


# ---- M22's memory -------------------------------------------------------------------------

X1 = [4.0, -1.0, 2.0, 0.5, 1.2]
X2 = [1.0, 3.0, 1.6, -0.2, 0.1]


def two_rounds(mode: str):
    c = build_compressor(
        {"quantizer": "uniform", "rate": 1, "topk": 0.8, "min_entries": 0,
         "error_feedback": True, "memory_mode": mode, "huffman": False}
    )  # fmt: skip
    outs = []
    for x in (X1, X2):
        outs.append(c.decompress(*c.compress({"w": torch.tensor(x, dtype=torch.float64)}))["w"])
    return outs, c.memory.residuals["w"]


def test_m22_memory_by_hand():
    """Uniform R = 1 (levels: min and max of the values), top 4 of 5, beta = 0.3 (the mode's
    default). Round 1 keeps 0, 1, 2, 4: values (4, -1, 2, 1.2), levels (-1, 4), midpoint 1.5:
    sent (4, -1, 4, 0, -1), memory (0, 0, -2, 0, 2.2). Round 2 keeps 0, 1, 2, 3 by |x2| (not by
    the compensated values): v = x2 + 0.3 m there = (1, 3, 1, -0.2), levels (-0.2, 3),
    midpoint 1.4: sent (-0.2, 3, -0.2, -0.2, 0), memory v - Q(v) on the kept (1.2, 0, 1.2, 0)
    and entry 4's 2.2 carried over. Planted bug caught: memory added before selection (entry 4
    would be kept in round 2)."""
    (out1, out2), memory = two_rounds("m22")
    np.testing.assert_allclose(out1.numpy(), [4, -1, 4, 0, -1])
    np.testing.assert_allclose(out2.numpy(), [-0.2, 3, -0.2, -0.2, 0], atol=1e-12)
    # the levels' min and max travel as float32 (-0.2 as -0.20000000298): memory 3e-9 there
    np.testing.assert_allclose(memory.numpy(), [1.2, 0, 1.2, 0, 2.2], atol=1e-8)


def test_m22_slip_memory_by_hand():
    """The same rounds with M22's two slips: the levels (-0.2, 3) designed on v, but x2 labelled:
    entry 2 (x2 = 1.6 > 1.4) is sent as 3 (v = 1.0 would give -0.2); memory v - Q + 0.3 m:
    entry 2: 1.0 - 3 + 0.3 (-2) = -2.6, the others as in the correct mode (their old memory is
    0). Planted bug caught: either slip alone (entry 2 would be -1.4 or sent as -0.2)."""
    (out1, out2), memory = two_rounds("m22_slip")
    np.testing.assert_allclose(out1.numpy(), [4, -1, 4, 0, -1])
    np.testing.assert_allclose(out2.numpy(), [-0.2, 3, 3, -0.2, 0], atol=1e-12)
    np.testing.assert_allclose(memory.numpy(), [1.2, 0, -2.6, 0, 2.2], atol=1e-8)  # float32 min


@pytest.mark.parametrize("kind", [{"quantizer": "tcq", "family": "gennorm"}, {"quantizer": "none"}])
def test_m22_slip_is_refused_for_kinds_without_nearest_level_labels(kind):
    """m22_slip relabels the sent entries by their nearest level; TCQ's words and a value
    kind's floats are no such labels. Old behaviour: the spec passed and TCQ crashed on its
    first update ("symbol 7 outside the alphabet of 4")."""
    spec = {**kind, "rate": 2, "error_feedback": True, "memory_mode": "m22_slip"}
    if kind["quantizer"] == "none":
        del spec["rate"]
    with pytest.raises(SpecError, match="m22_slip relabels") as err:
        check_spec(spec)
    assert err.value.key == "memory_mode"
