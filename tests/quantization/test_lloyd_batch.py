"""Lloyd designs made together: each is, bit for bit, the design made alone.

References: :func:`gradcomp.quantization.lloyd.lloyd_design` one law at a time, one call of
:func:`log_gammaincc` per group, ``scipy.linalg.solve_banded`` for the Newton step, and the
quantizer's one-tensor path for the pipeline. A receiver designs each sender's levels from the
side values alone, so any difference would be a level the two ends disagree on.
"""

import numpy as np
import pytest
import torch
from scipy import linalg, stats

from gradcomp.coding.fields import WireFormatError
from gradcomp.compression import build_compressor, check_spec
from gradcomp.compression.lloyd_quantizer import LloydQuantizer, forget_designs
from gradcomp.quantization.lloyd import lloyd_design
from gradcomp.quantization.lloyd_batch import lloyd_levels_batch
from gradcomp.quantization.lloyd_newton import newton_levels
from gradcomp.quantization.symmetric_law import SymmetricLaw
from gradcomp.quantization.tail_gamma import log_gammaincc
from gradcomp.wire import UpdateLayout, encode_update, make_receiver


def _laws(rng, n, *, truncated):
    """``n`` (family, params, tau) of every family; beta = 2 and the normal (p = 2) on purpose:
    numpy squares for a scalar exponent 2 but calls pow for an array of them."""
    out = [("gennorm", {"beta": 2.0, "scale": 0.3}), ("norm", {"scale": 0.01})]
    while len(out) < n:
        family = str(rng.choice(["gennorm", "gennorm", "norm", "laplace", "dweibull"]))
        params = {"scale": float(10 ** rng.uniform(-5, 0))}
        if family == "gennorm":
            params["beta"] = float(rng.uniform(0.4, 2.5))
        if family == "dweibull":
            params["c"] = float(rng.uniform(0.7, 2.2))
        out.append((family, params))
    taus = []
    for i, (family, params) in enumerate(out):
        if not truncated:
            taus.append(0.0)
            continue
        law = SymmetricLaw.from_family(family, params)
        # moderate thresholds (top-K) and far ones (the continued fraction, many terms)
        sigmas = rng.uniform(0.2, 2.5) if i % 3 else rng.uniform(8.0, 30.0)
        taus.append(float(sigmas * np.sqrt(law.unit.abs_moment(2.0)) * law.scale))
    return [(f, p, t) for (f, p), t in zip(out, taus, strict=True)]


@pytest.mark.parametrize("n_levels, M", [(2, 2.0), (4, 2.0), (4, 0.0), (16, 1.0)])
@pytest.mark.parametrize("truncated", [False, True])
def test_batched_designs_equal_designs_made_alone(n_levels, M, truncated):
    rng = np.random.default_rng(n_levels * 10 + int(M) + truncated)
    laws = _laws(rng, 10, truncated=truncated)
    got = lloyd_levels_batch(
        [SymmetricLaw.from_family(f, p) for f, p, _ in laws], [t for *_, t in laws], n_levels, M
    )
    for (family, params, tau), levels in zip(laws, got, strict=True):
        alone = lloyd_design(family, params, n_levels, M, tau=tau).levels
        assert isinstance(levels, np.ndarray), (family, params, tau, levels)
        np.testing.assert_array_equal(levels, alone, err_msg=f"{family} {params} tau={tau}")


def test_a_failed_design_stays_with_its_law():
    """A law with no mass beyond tau and a negative tau give their ValueError; the others are
    designed as alone."""
    laws = [SymmetricLaw.from_family("gennorm", {"beta": 1.0, "scale": 1.0})] * 3
    got = lloyd_levels_batch(laws, [0.5, np.inf, -1.0], 4, 2.0)
    np.testing.assert_array_equal(got[0], lloyd_design(laws[0], None, 4, 2.0, tau=0.5).levels)
    assert isinstance(got[1], ValueError) and "no mass" in str(got[1])
    assert isinstance(got[2], ValueError) and "tau" in str(got[2])
    with pytest.raises(ValueError, match="taus"):
        lloyd_levels_batch(laws, [0.5], 4, 2.0)


def test_stacked_law_moments_are_each_laws_own():
    rng = np.random.default_rng(3)
    units = [SymmetricLaw.from_family(f, p).unit for f, p, _ in _laws(rng, 6, truncated=False)]
    cells = np.sort(rng.normal(size=(6, 5)) * 2.0, axis=1)
    lo = np.concatenate([np.full((6, 1), -np.inf), cells], axis=1)
    hi = np.concatenate([cells, np.full((6, 1), np.inf)], axis=1)
    for tau in (0.0, 0.7):
        shift = np.array([[u.log_tail_mass(tau)] for u in units])
        taus = np.full((6, 1), tau)
        both = SymmetricLaw.stacked(units).truncated_cell_moments(
            lo, hi, 2.0, taus, log_shift=shift
        )
        for i, u in enumerate(units):
            alone = u.truncated_cell_moments(lo[i], hi[i], 2.0, tau, log_shift=shift[i, 0])
            np.testing.assert_array_equal(both[:, i], alone)
    with pytest.raises(ValueError, match="everywhere or nowhere"):
        SymmetricLaw.stacked(units[:2]).truncated_cell_moments(
            lo[:2], hi[:2], 2.0, np.array([[0.0], [0.5]])
        )


def test_grouped_continued_fraction_is_each_group_alone():
    """Far tails (Q below 1e-280) use the continued fraction, which runs until every value of
    the call has converged, and further terms can move a value that converged early: with
    groups, each group's values are those of a call of that group alone (what lets a stack of
    laws share one call). Planted bug: groups ignored (one stopping rule for all)."""
    rng = np.random.default_rng(0)
    a = rng.uniform(0.2, 6.0, size=400)
    x = np.concatenate([rng.uniform(650.0, 800.0, 200), 10 ** rng.uniform(3.0, 5.0, 200)])
    together = log_gammaincc(a, x, np.arange(400))  # each value its own group
    alone = np.array([log_gammaincc(ai, xi) for ai, xi in zip(a, x, strict=True)])
    np.testing.assert_array_equal(together, alone)
    assert not np.array_equal(log_gammaincc(a, x), alone)  # one rule for all moves some
    # against scipy where Q is still a normal double
    np.testing.assert_allclose(log_gammaincc(2.0, 600.0), np.log(stats.gamma.sf(600.0, 2.0)),
                               rtol=1e-12)  # fmt: skip


def test_newton_step_solves_the_tridiagonal_system():
    rng = np.random.default_rng(0)
    y = np.sort(rng.normal(size=6))
    c = y + 0.01 * rng.normal(size=6)
    m0 = rng.uniform(0.1, 0.3, size=6)

    def g(t):
        return np.exp(-(t**2))

    step = newton_levels(y, c, m0, g)
    t = 0.5 * (y[:-1] + y[1:])
    up = np.zeros(6)
    low = np.zeros(6)
    up[:-1] = g(t) * (t - c[:-1]) / m0[:-1]
    low[1:] = g(t) * (c[1:] - t) / m0[1:]
    jac = np.diag(0.5 * (up + low)) + np.diag(0.5 * up[:-1], 1) + np.diag(0.5 * low[1:], -1)
    np.testing.assert_allclose(step - y, linalg.solve(np.eye(6) - jac, c - y), rtol=1e-12)
    assert newton_levels(y, c, np.where(np.arange(6) == 2, 0.0, m0), g) is None
    assert newton_levels(y, np.where(np.arange(6) == 1, np.inf, c), m0, g) is None


def _update(seed):
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(16, 3, 3, 3, generator=g) - 0.5  # Laplace(0, 0.01) by its inverse cdf
    return {
        "conv.weight": -0.01 * torch.sign(u) * torch.log1p(-2.0 * u.abs()),
        "fc.weight": 0.002 * torch.randn(10, 300, generator=g),
        "fc.bias": 0.1 * torch.randn(10, generator=g),
        "flat": torch.full((200,), 0.25),  # constant: the fit fails, uniform fallback
        "big": 0.05 * torch.randn(4000, generator=g, dtype=torch.float64).float(),
    }


@pytest.mark.parametrize("topk", [None, 0.1])
def test_pipeline_encodes_together_what_each_tensor_encodes_alone(topk):
    spec = {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2.0, "min_entries": 16}
    if topk:
        spec["topk"] = topk
    comp = build_compressor(check_spec(spec).with_seed(0))
    update = _update(1)
    forget_designs()
    payload, _ = comp.compress(update)
    alone = LloydQuantizer(2, "gennorm", 2.0)
    for name, p in payload.items():
        if p.raw or not p.quantized.n:
            continue
        flat = update[name].reshape(-1)
        values = flat if p.indices is None else flat[p.indices]
        forget_designs()
        q = alone.encode(values, name, full=flat)
        np.testing.assert_array_equal(q.levels, p.quantized.levels, err_msg=name)
        assert torch.equal(q.indices, p.quantized.indices), name
    assert payload["flat"].quantized.fallback


def test_receiver_designs_together_and_names_the_record_at_fault(monkeypatch):
    spec = check_spec({"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2.0,
                       "topk": 0.2, "min_entries": 16})  # fmt: skip
    update = _update(2)
    comp = build_compressor(spec.with_seed(0))
    payload, ctx = comp.compress(update)
    data = encode_update(comp, payload, ctx)
    layout = UpdateLayout.of(update)
    forget_designs()
    got = make_receiver(spec, layout, seed=0, user=0, rnd=0).decode(data)
    sent = comp.decompress(payload, ctx)
    for name in update:
        assert torch.equal(got[name], sent[name]), name
    # the receiver's batch fails on the law of "big" only (the largest scale): the error
    # names that record and its side values, not the first record of the batch
    from gradcomp.compression import lloyd_quantizer

    real = lloyd_quantizer.lloyd_levels_batch
    big_scale = payload["big"].quantized.side["scale"]

    def failing(laws, taus, n_levels, M, **kwargs):
        out = real(laws, taus, n_levels, M, **kwargs)
        return [ValueError("planted") if np.isclose(law.scale, big_scale) else y
                for law, y in zip(laws, out, strict=True)]  # fmt: skip

    monkeypatch.setattr(lloyd_quantizer, "lloyd_levels_batch", failing)
    forget_designs()
    with pytest.raises(WireFormatError, match="'big'.*beta, scale, tau.*planted"):
        make_receiver(spec, layout, seed=0, user=0, rnd=0).decode(data)
    forget_designs()
