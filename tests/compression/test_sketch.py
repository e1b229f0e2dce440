"""Count sketch sizing, hashes, error feedback rules and FetchSGD's server, against references
written here: Python integers for the hashes, numpy sketches and medians, the algorithm's
recursions by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from gradcomp.compression import SpecError, build_compressor, check_spec
from gradcomp.compression.count_sketch import (
    CHECK_ENTRIES,
    CountSketch,
)
from gradcomp.compression.fetchsgd import FetchSGDServer
from gradcomp.compression.sketch_hash import SketchHash
from gradcomp.compression.sketch_probe import probe_vector, sketch_relative_error
from gradcomp.study.lossy import compressor_variants

REPO = Path(__file__).resolve().parents[2]
P = 2**61 - 1


def np_sketch(h: SketchHash, x: np.ndarray) -> np.ndarray:
    table = np.zeros((h.rows, h.columns))
    for j in range(h.rows):
        np.add.at(table[j], h.buckets[j].numpy(), h.signs[j].numpy() * x)
    return table


def np_unsketch(h: SketchHash, table: np.ndarray, k: int) -> np.ndarray:
    est = np.median([h.signs[j].numpy() * table[j, h.buckets[j].numpy()] for j in range(h.rows)], 0)
    out = np.zeros(h.d)
    top = np.argsort(-np.abs(est), kind="stable")[:k]
    out[top] = est[top]
    return out


# ---- hashes -------------------------------------------------------------------------------


def coefficients(seed: int, rows: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, P, (rows, 6), dtype=torch.int64, generator=g).tolist()


def wrap64(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def horner(coef: list[int], i: int, wrap: bool) -> int:
    acc = coef[0]
    for c in coef[1:]:
        acc = wrap64(acc * i + c) if wrap else (acc * i + c) % P
    return acc % P  # Python's % is the floor remainder, as torch's on int64


TOKENS = [0, 1, 2, 3, 4, 5, 1000, 12_345, 19_999]


@pytest.mark.parametrize("kind,seed,wrap", [("polynomial", 7, False), ("m22_slip", 42, True)])
def test_polynomial_hashes_by_python_integers(kind, seed, wrap):
    """Buckets ((a i + b) mod p) mod c and signs of the cubic mod p mod 2, in Python's exact
    integers (``polynomial``) or with every step wrapped to int64 as CSVec's torch code does
    (``m22_slip``, coefficients from seed 42 whatever the seed given). Planted bugs caught:
    a product that overflows in the exact hash, a seed other than 42 for M22's."""
    h = SketchHash(20_000, 5, 4_000, seed=7, kind=kind)
    for j, coef in enumerate(coefficients(seed, 5)):
        for i in TOKENS:
            assert int(h.buckets[j, i]) == horner(coef[:2], i, wrap) % 4_000
            assert float(h.signs[j, i]) == 2 * (horner(coef[2:], i, wrap) % 2) - 1


def test_m22_hash_leaves_most_columns_of_a_row_empty():
    """M22's overflowing hash of 60,000 entries into 12,000 columns (its c = d / 5) leaves a
    row with 3,000 occupied columns (75% empty); the same coefficients (seed 42) evaluated
    exactly fill every column of every row here (not at every size: that row's linear hash is
    itself poor on consecutive keys below 40,000 entries), and the random hash leaves about
    e^-5 = 0.7% empty. Counted with numpy's unique. Planted bug caught: the exact evaluation under
    m22_slip (no empty row)."""

    def used(kind: str, seed: int) -> list[int]:
        buckets = SketchHash(60_000, 5, 12_000, seed, kind).buckets.numpy()
        return [len(np.unique(row)) for row in buckets]

    assert min(used("m22_slip", 0)) <= 0.25 * 12_000
    assert min(used("polynomial", 42)) >= 0.95 * 12_000
    assert min(used("random", 0)) >= 0.95 * 12_000


# ---- sizing -------------------------------------------------------------------------------


def test_relative_error_is_an_independent_sketch_of_the_probe():
    """sketch_relative_error = ||U(S(x)) - x|| / ||x|| with the numpy sketch and median here.
    Planted bug caught: the error measured against the sketched (top-K) vector, not x."""
    d, rate, rows, ratio = 3000, 100, 5, 0.25
    c = math.ceil(rate * d / (100 * rows))
    x = probe_vector(d).numpy()
    h = SketchHash(d, rows, c, 1)
    want = np.linalg.norm(np_unsketch(h, np_sketch(h, x), math.ceil(ratio * c)) - x)
    assert sketch_relative_error(d, rate, rows, ratio) == pytest.approx(
        want / np.linalg.norm(x), rel=1e-9
    )
    cut = np.where(np.abs(x) >= np.sort(np.abs(x))[-d // 2], x, 0.0)  # top half
    want = np.linalg.norm(np_unsketch(h, np_sketch(h, cut), math.ceil(ratio * c)) - x)
    got = sketch_relative_error(d, rate, rows, ratio, topk=0.5)
    assert got == pytest.approx(want / np.linalg.norm(x), rel=1e-9)


@pytest.mark.parametrize("rate,ratio", [(10, 0.25), (25, 0.01), (100, 3.0), (200, 0.25)])
def test_config_check_refuses_a_sketch_worse_than_nothing(rate, ratio):
    """Refused (key sketch_k_ratio, the error in the message) exactly when the measured
    relative error exceeds sending nothing's 1.0."""
    spec = {"compressor": "count_sketch", "rate": rate, "sketch_k_ratio": ratio}
    error = sketch_relative_error(CHECK_ENTRIES, rate, 5, ratio)
    if error > 1:
        with pytest.raises(SpecError) as err:
            check_spec(spec)
        assert err.value.key == "sketch_k_ratio" and f"{error:.3f}" in err.value.message
    else:
        assert check_spec(spec)["sketch_k_ratio"] == ratio
    assert (error > 1) == ((rate, ratio) != (200, 0.25))


def test_k_is_set_by_columns_not_by_lossy_topk():
    """lossy.topk 0.452 is not inherited: k = ceil(0.25 c) per sketch; topk is refused."""
    entry = {"name": "sk", "compressor": "count_sketch", "rates": [200]}
    lossy = {"topk": 0.452, "min_entries": 1000, "error_feedback": False, "memory_decay": None,
             "compressors": [entry]}  # fmt: skip
    (variant,) = compressor_variants(lossy)
    c = build_compressor(variant.spec)
    payload, _ = c.compress({"w": probe_vector(20_000).float(), "b": torch.ones(10)})
    (sk,) = payload["sketches"]
    assert sk.table.shape == (5, 8000) and sk.k == 2000
    with pytest.raises(SpecError) as err:
        check_spec({"compressor": "count_sketch", "rate": 200, "topk": 0.452})
    assert err.value.key == "topk"


@pytest.mark.parametrize("path", ["config/paper.yaml", "config/m22.yaml"])
def test_configured_sketches_pass_the_check(path):
    """Both paper-scale configs expand (the check would refuse a sketch worse than nothing);
    m22.yaml reproduces M22's fixed split (main.py re-seeds before every shuffle)."""
    lossy = yaml.safe_load((REPO / path).read_text())["lossy"]
    specs = [check_spec(v.spec) for v in compressor_variants(lossy)]
    sketches = [s for s in specs if s["compressor"] == "count_sketch"]
    assert sketches and all(s["sketch_k_ratio"] <= 0.25 for s in sketches)
    assert lossy["validation_split"] == ("once" if "m22" in path else "per_round")


# ---- error feedback -----------------------------------------------------------------------


def run_feedback(feedback: str, rounds: int = 30, d: int = 5000) -> tuple[list[float], CountSketch]:
    c = CountSketch(25, rows=5, k_ratio=0.5, min_entries=0, error_feedback=True,
                    feedback=feedback, seed=2)  # fmt: skip
    ref = np.linalg.norm(np_sketch(c.hash_of(d, 0), probe_vector(d, 0).numpy()))
    ratios = []
    for t in range(rounds):
        x = probe_vector(d, 10 + t).float()
        payload, ctx = c.compress({"w": x})
        ratios.append(float(c.errors[("w",)].norm()) / ref)
    return ratios, c


def test_zero_rule_stays_bounded_where_subtraction_diverges():
    """30 rounds at k/c = 0.5 (5 x 250 cells, k = 125): the default rule (zero the recovered
    cells) keeps ||S_e|| within 3 x one round's sketch; subtracting S(D) passes 100 x.
    Planted bug caught: subtraction as the default."""
    assert check_spec({"compressor": "count_sketch", "rate": 200})["sketch_feedback"] == "zero"
    zero, _ = run_feedback("zero")
    subtract, _ = run_feedback("subtract")
    assert max(zero) <= 3.0
    assert subtract[-1] >= 100.0


def test_zero_rule_clears_exactly_the_recovered_cells():
    """After a round, S_e is the sent table with the cells h_j(i) of every recovered entry i
    set to 0 (computed here from the buckets), and nothing else changed."""
    d = 4000
    c = CountSketch(50, rows=3, k_ratio=0.3, min_entries=0, error_feedback=True, seed=5)
    x = probe_vector(d, 3).float()
    payload, ctx = c.compress({"w": x})
    sent = c.decompress(payload, ctx)["w"].double().numpy()
    h = c.hash_of(d, 0)
    want = payload["sketches"][0].table.double().numpy().copy()
    for j in range(h.rows):
        want[j, h.buckets[j].numpy()[np.nonzero(sent)[0]]] = 0.0
    np.testing.assert_array_equal(c.errors[("w",)].numpy(), want)
    assert np.count_nonzero(sent) == math.ceil(0.3 * c.columns(d))


# ---- FetchSGD's server --------------------------------------------------------------------


def test_user_sketches_sum_to_the_sketch_of_the_summed_update():
    """One shared hash: the weighted sum of three users' tables is the numpy sketch of the
    weighted sum of their updates. With each user's own hash (CountSketch's seeds) it is not.
    """
    d, rng = 3000, np.random.default_rng(4)
    updates = [torch.tensor(rng.laplace(size=d)) for _ in range(3)]
    weights = [0.5, 0.3, 0.2]
    server = FetchSGDServer(d, 5, 300, k=50, seed=9)
    summed = sum(w * server.user_sketch(u) for w, u in zip(weights, updates, strict=True))
    mixed = sum(w * u for w, u in zip(weights, updates, strict=True)).numpy()
    np.testing.assert_allclose(summed.numpy(), np_sketch(server.hash, mixed), atol=1e-9)
    own = [CountSketch(50, rows=5, min_entries=0, seed=s).hash_of(d, 0) for s in range(3)]
    separate = sum(w * h.sketch(u) for w, h, u in zip(weights, own, updates, strict=True))
    assert not np.allclose(separate.numpy(), np_sketch(own[0], mixed), atol=1e-3)


def test_fetchsgd_server_follows_algorithm_1():
    """Subtract rule, no masking: D_1 = TopK(U(lr S_1)) (numpy unsketch), and after T rounds
    S_e + S(sum D_t) = lr sum_t S_u^t with S_u^t = rho S_u^(t-1) + mean of the tables,
    recursed here. Zero rule with masking: the cells of D's support are 0 in both sketches."""
    d, rows, cols, k, rho, lr = 2000, 5, 400, 40, 0.9, 0.1
    rng = np.random.default_rng(6)
    server = FetchSGDServer(d, rows, cols, k, rho=rho, lr=lr, feedback="subtract",
                            mask_momentum=False, seed=1)  # fmt: skip
    u = np.zeros((rows, cols))
    lr_sum_u = np.zeros((rows, cols))
    sent = np.zeros(d)
    for t in range(4):
        tables = [server.user_sketch(torch.tensor(rng.laplace(size=d))) for _ in range(2)]
        mean = (tables[0].numpy() + tables[1].numpy()) / 2
        u = rho * u + mean
        lr_sum_u += lr * u
        delta = server.step(tables).numpy()
        if t == 0:
            np.testing.assert_allclose(delta, np_unsketch(server.hash, lr * mean, k), atol=1e-12)
        sent += delta
    np.testing.assert_allclose(
        server.error.numpy() + np_sketch(server.hash, sent), lr_sum_u, atol=1e-9
    )
    zero = FetchSGDServer(d, rows, cols, k, rho=rho, lr=lr, seed=1)
    delta = zero.step([zero.user_sketch(torch.tensor(rng.laplace(size=d)))]).numpy()
    support = np.nonzero(delta)[0]
    assert len(support) == k
    for j in range(rows):
        cells = zero.hash.buckets[j].numpy()[support]
        assert not zero.error[j, cells].any() and not zero.momentum[j, cells].any()
    assert zero.error.count_nonzero() > 0
