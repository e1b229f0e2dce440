"""The context-mixing binary coders ``cm_context`` and its speed preset ``cm_fast``
(gradcomp.coding.cm, .cm_fast, .binary_rc) against independent references: exact
roundtrips (one tensor, a message of tensors with statistics carried, extreme symbols),
committed streams that must decode (and re-encode) byte for byte on any machine, the
logistic function in closed form, the binary coder's length against -log2 of the
probabilities it was given, an i.i.d. source's entropy and a Markov sign source's
conditional entropy in closed form.

The committed streams (``tests/data/<coder>/*.bin``) were written by the coder's
``encode_message`` from the sources ``tests/data/cm_context/*.npy``, one stream per source
and one message of all three in the order of ``STREAMS``; a change of a coder's bitstream
format rewrites them that way.

The first test to run compiles the numba functions (about 10-20 s once; numba caches them
in __pycache__ afterwards)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcomp.coding import cm, cm_fast
from gradcomp.coding.base import TensorSymbols
from gradcomp.coding.binary_rc import (
    rc_decode_bit,
    rc_encode_bit,
    rc_flush,
    squash_table,
    stretch_table,
)
from gradcomp.coding.cm import kernel_width
from gradcomp.coding.registry import builtin_specs
from gradcomp.quantization.grids import get_grid

GRID = get_grid("fp8_e5m2")
DATA = Path(__file__).resolve().parents[1] / "data"
STREAMS = ("real_a", "real_b", "uniform")
MODULES = {"cm_context": cm, "cm_fast": cm_fast}  # coder name -> its module
coders = pytest.mark.parametrize("name", list(MODULES))


@pytest.mark.slow
@coders
def test_committed_streams_decode_and_reencode_byte_for_byte(name) -> None:
    """Streams written when the coder was committed (two real FP8 gradient slices and
    arbitrary symbols, one stream each and one message of all three) decode to their source
    symbols here, and encoding the symbols gives the same bytes: the integer model leaves
    nothing to the CPU or the numpy build. Planted bugs caught: any change of a context,
    rate, table or the coder's byte output."""
    mod = MODULES[name]
    sources = [np.load(DATA / "cm_context" / f"{n}.npy").astype(np.int64) for n in STREAMS]
    for stream, s in zip(STREAMS, sources, strict=True):
        data = (DATA / name / f"{stream}.bin").read_bytes()
        np.testing.assert_array_equal(mod.decode_message(data, [s.shape], GRID)[0], s)
        assert mod.encode_message([TensorSymbols(s, GRID)]) == data
    data = (DATA / name / "message.bin").read_bytes()
    back = mod.decode_message(data, [s.shape for s in sources], GRID)
    for got, s in zip(back, sources, strict=True):
        np.testing.assert_array_equal(got, s)
    assert mod.encode_message([TensorSymbols(s, GRID) for s in sources]) == data


def gradient_like(rows: int, cols: int, seed: int) -> np.ndarray:
    """Signed symbols: Laplace entries with a scale per row, signs in runs of 3."""
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.uniform(-16, -6, size=(rows, 1))
    v = rng.laplace(size=(rows, cols)) * scale
    signs = np.repeat(rng.choice([-1.0, 1.0], size=(rows, -(-cols // 3))), 3, 1)[:, :cols]
    return GRID.encode(np.abs(v) * signs)[0]


@pytest.mark.slow
@coders
@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 6), cols=st.sampled_from([1, 2, 7, 9, 25, 50, 144, 150]),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_roundtrip_is_exact_and_bits_are_the_bytes(name, rows, cols, seed) -> None:
    """Planted bugs caught: a context read from a not-yet-decoded entry (the decoder sees
    zeros there), a counter updated on one side only, the flush byte not written."""
    x = TensorSymbols(gradient_like(rows, cols, seed), GRID)
    coder = builtin_specs([])[name].build()
    stream = coder.encode(x)
    np.testing.assert_array_equal(coder.decode(stream, GRID, {}), x.symbols)
    assert stream.side_bits == 0
    assert stream.bits == 8 * len(stream.payload[0])


@pytest.mark.slow
@coders
@settings(max_examples=20, deadline=None)
@given(symbols=st.lists(st.integers(0, GRID.n_levels - 1), min_size=1, max_size=400))
def test_roundtrip_of_arbitrary_symbols(name, symbols) -> None:
    """Any sequence, even ones no gradient gives (saturated levels, alternating extremes)."""
    s = np.array(symbols, dtype=np.int64).reshape(1, -1)
    coder = builtin_specs([])[name].build()
    np.testing.assert_array_equal(coder.decode(coder.encode(TensorSymbols(s, GRID)), GRID, {}), s)


@pytest.mark.slow
@coders
def test_extreme_symbols_fit_the_buffer_and_decode(name) -> None:
    """20,000 levels drawn uniformly from the whole grid (every exponent class, long
    unary paths both ways from the prediction, the end candidates), then runs of zeros
    and of the extremes: more than 8 bits a symbol. Planted bug caught: the last
    candidate of ``cm_fast``'s exponent class (nothing to code) coded by the decoder."""
    rng = np.random.default_rng(1)
    top, zero = GRID.n_levels - 1, GRID.encode(np.array([0.0]))[0][0]
    runs = np.tile(np.repeat([zero, top, 0, zero, top], 7), 100)
    s = np.concatenate([rng.integers(0, GRID.n_levels, 20_000), runs]).reshape(1, -1)
    mod = MODULES[name]
    x = TensorSymbols(s.astype(np.int64), GRID)
    data = mod.encode_message([x])
    np.testing.assert_array_equal(mod.decode_message(data, [x.shape], GRID)[0], x.symbols)
    assert 8 * len(data) > 8 * 20_000


@pytest.mark.slow
@coders
def test_message_carries_statistics_from_tensor_to_tensor(name) -> None:
    """A message of similar tensors decodes exactly and costs less than the tensors coded
    apart (the later ones start from what the earlier ones taught). Planted bug caught: the
    decoder starting each tensor afresh (it then decodes garbage)."""
    mod = MODULES[name]
    xs = [TensorSymbols(gradient_like(4, 144, seed), GRID) for seed in range(4)]
    data = mod.encode_message(xs)
    back = mod.decode_message(data, [x.shape for x in xs], GRID)
    for got, x in zip(back, xs, strict=True):
        np.testing.assert_array_equal(got, x.symbols)
    apart = sum(len(mod.encode_message([x])) for x in xs)
    assert len(data) < apart


def test_squash_is_the_logistic_function_and_stretch_its_inverse() -> None:
    """squash(d) against 4096 / (1 + exp(-d / 256)) in closed form, within the error of
    linear interpolation between knots h = 128 apart, h^2 / 8 max |f''| (max |sigma''| =
    1 / (6 sqrt 3)), plus 1/2 for rounding the knots and 1/2 for rounding the result; and
    stretch(p) the smallest d with squash(d) >= p."""
    sq, stt = squash_table(), stretch_table()
    d = np.arange(-2048, 2048)
    exact = 4096 / (1 + np.exp(-d / 256))
    bound = 128**2 / 8 * 4096 / 256**2 / (6 * math.sqrt(3)) + 1.0
    assert np.max(np.abs(sq - exact)) <= bound
    assert np.all(np.diff(sq) >= 0)
    for p in range(1, 4096, 37):
        k = stt[p]
        assert sq[k + 2048] >= p or k == 2047
        assert k == -2047 or sq[k - 1 + 2048] < p


@pytest.mark.parametrize("p", [2048, 3500, 4000, 60])
def test_binary_coder_length_is_the_ideal_code_length(p) -> None:
    """20,000 Bernoulli bits coded at their true probability p/4096: the stream is within
    0.5 % + 4 bytes of sum -log2 P(bit) (computed here from the bits), and decodes."""
    rng = np.random.default_rng(p)
    bits = (rng.random(20_000) < p / 4096).astype(np.int64)
    out = np.zeros(40_000, dtype=np.uint8)
    state = np.array([0, 0xFFFFFFFF, 0], dtype=np.int64)
    for b in bits:
        rc_encode_bit(state, out, int(b), p)
    rc_flush(state, out)
    data = out[: state[2]].copy()
    ones = int(bits.sum())
    ideal = -(ones * math.log2(p / 4096) + (bits.size - ones) * math.log2(1 - p / 4096))
    assert 8 * data.size <= ideal * 1.005 + 32
    x0 = 0
    for k in range(4):
        x0 = (x0 << 8) | (int(data[k]) if k < data.size else 255)
    dstate = np.array([0, 0xFFFFFFFF, x0, 4], dtype=np.int64)
    got = np.array([rc_decode_bit(dstate, data, p) for _ in range(bits.size)])
    np.testing.assert_array_equal(got, bits)


@coders
def test_markov_signs_cost_their_conditional_entropy(name) -> None:
    """One magnitude everywhere, signs a Markov chain along the row that keeps the sign with
    probability 0.9: the adaptive code approaches h(0.9) = 0.469 bits per entry (magnitudes
    cost ~0 once learnt). Planted bug caught: the sign context read from the wrong
    neighbour (then ~1 bit per entry)."""
    rng = np.random.default_rng(0)
    n = 30_000
    flips = rng.random(n) < 0.1
    negative = np.cumsum(flips) % 2 == 1
    one = GRID.encode(np.array([1e-3]))[0][0]
    s = np.where(negative, GRID.n_levels - 1 - one, one).reshape(1, n)
    bits = 8 * len(MODULES[name].encode_message([TensorSymbols(s, GRID)]))
    h = -(0.9 * math.log2(0.9) + 0.1 * math.log2(0.1))
    assert h * n <= bits + 0.01 * n  # no code beats the entropy (up to the sample's luck)
    assert bits <= (h + 0.03) * n


def test_kernel_width_from_the_row_length() -> None:
    assert [kernel_width(c) for c in (27, 144, 2048, 75, 128, 1)] == [3, 3, 1, 5, 1, 1]


def test_kt_context_is_the_sequential_kt_code_length() -> None:
    """kt_context against a loop that codes entry after entry with KT counts (1/2 + count)
    / (K/2 + total) per context, written here; it is above the in-sample entropy_context.
    Planted bugs caught: a count updated before its own symbol is coded, a wrong alphabet
    size, the rule bit left out."""
    from gradcomp.coding.context import (
        choose_context,
        magnitude_contexts,
        sign_contexts,
        sign_states,
    )

    s = gradient_like(3, 90, 5)
    x = TensorSymbols(s, GRID)
    m = x.magnitudes
    states = sign_states(s, GRID)
    pairs = [
        (m.ravel(), magnitude_contexts(m, choose_context(m)).ravel(), GRID.n_magnitudes),
        (states[states > 0] - 1, sign_contexts(states, m)[states > 0], 2),
    ]
    expected = 1.0
    for symbols, contexts, k in pairs:
        counts: dict = {}
        for sym, ctx in zip(symbols.tolist(), contexts.tolist(), strict=True):
            seen = counts.setdefault(ctx, {})
            total = sum(seen.values())
            expected -= math.log2((seen.get(sym, 0) + 0.5) / (total + k / 2))
            seen[sym] = seen.get(sym, 0) + 1
    specs = builtin_specs([])
    got = specs["kt_context"].build().bits(x)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got > specs["entropy_context"].build().bits(x)


@coders
def test_iid_symbols_cost_their_entropy(name) -> None:
    """40,000 i.i.d. entries (magnitude index from a fixed pmf over 7 exponent classes and
    4 mantissas, fair signs): the adaptive code lands within 0.08 bits per entry above the
    entropy H(m) + P(m > 0), in closed form from the pmf, and not below it (up to the
    sample's luck). Planted bugs caught: a mantissa or exponent decision coded at a fixed
    1/2 (the cost rises by the bits the pmf saves there), a counter never learning."""
    rng = np.random.default_rng(3)
    pk = np.array([1, 2, 4, 8, 6, 3, 1], dtype=float)  # classes 3..9
    pf = np.array([4, 3, 2, 1], dtype=float)
    pm = np.zeros(GRID.n_magnitudes)
    pm[4 * 3 : 4 * 10] = np.outer(pk / pk.sum(), pf / pf.sum()).ravel()
    n = 40_000
    m = rng.choice(pm.size, size=n, p=pm)
    v = GRID.magnitude_levels[m] * rng.choice([-1.0, 1.0], size=n)
    s = GRID.encode(v)[0].reshape(1, n)
    nz = pm > 0
    h = -np.sum(pm[nz] * np.log2(pm[nz])) + 1.0  # every magnitude here is non-zero
    bits = 8 * len(MODULES[name].encode_message([TensorSymbols(s, GRID)]))
    assert h * n <= bits + 0.01 * n
    assert bits <= (h + 0.08) * n
