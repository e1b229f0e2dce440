"""The coder interface (gradcomp.coding.base, .registry) and the coders that model the
entries' dependence (per-channel GenNorm, adaptive context), against independent references:
exact roundtrips, stream sizes counted from the parts themselves, a brute-force conditional
entropy, and the entropy of a synthetic per-channel source computed from scipy.stats."""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch
from bitarray import bitarray
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import doc_blocks
from gradcomp.coding import bounds
from gradcomp.coding.base import TensorSymbols
from gradcomp.coding.bounds import ContextEntropy
from gradcomp.coding.context import CONTEXTS, LANE, ContextCoder
from gradcomp.coding.gennorm_channel import GenNormChannelCoder
from gradcomp.coding.registry import CoderEntryError, builtin_specs, coder_specs
from gradcomp.errors import ConfigError
from gradcomp.lossless.code_lossless import code_run, code_tensor
from gradcomp.lossless.dumps import write_dump
from gradcomp.lossless.fit_lossless import fit_run
from gradcomp.quantization.grids import get_grid
from gradcomp.study.lossless import configured_coders

GRID = get_grid("fp8_e5m2")


def part_length(part) -> int:
    """Bits of a stream part, counted from its serialised bytes (not Bitstream's method)."""
    if isinstance(part, bitarray):
        return len(part)
    if isinstance(part, bytes):
        return 8 * len(part)
    return 8 * np.asarray(part).nbytes  # uint32 ANS words


def gradient_like(rows: int, cols: int, seed: int) -> np.ndarray:
    """Signed symbols of GenNorm entries with a scale per row and runs of equal signs."""
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.uniform(-16, -6, size=(rows, 1))
    v = scipy.stats.gennorm(0.8).rvs((rows, cols), random_state=rng) * scale
    v = np.abs(v) * np.repeat(rng.choice([-1.0, 1.0], size=(rows, -(-cols // 3))), 3, 1)[:, :cols]
    return GRID.encode(v)[0]


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 150),
    seed=st.integers(0, 2**16),
    coder=st.sampled_from(
        [ContextCoder, GenNormChannelCoder, lambda: ContextCoder(context="max2")]
    ),
)
def test_roundtrip_is_exact_and_bits_are_the_stream(rows, cols, seed, coder) -> None:
    """Planted bugs caught: a context taken from the wrong neighbour on one side only, a
    missed model update in the decoder, ANS words counted as bytes."""
    x = TensorSymbols(gradient_like(rows, cols, seed), GRID)
    c = coder()
    stream = c.encode(x)
    np.testing.assert_array_equal(c.decode(stream, GRID, {}), x.symbols)
    parts = (*stream.side, *stream.payload)
    assert stream.bits == sum(part_length(p) for p in parts)


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(symbols=st.lists(st.integers(0, GRID.n_levels - 1), min_size=1, max_size=300))
def test_roundtrip_of_arbitrary_symbols(symbols) -> None:
    """Any symbol sequence, even ones no gradient would give (saturated, alternating)."""
    s = np.array(symbols, dtype=np.int64).reshape(1, -1)
    x = TensorSymbols(s, GRID)
    for coder in (ContextCoder(), ContextCoder(context="max2"), GenNormChannelCoder()):
        np.testing.assert_array_equal(coder.decode(coder.encode(x), GRID, {}), s)


def test_code_tensor_reports_the_stream_length() -> None:
    """coding.tsv's bits of each real coder are the length of the stream it sends.
    Planted bug caught: side information left out of the reported total."""
    s = gradient_like(8, 300, 1)
    values = GRID.decode(s)
    specs = [builtin_specs(["gennorm"])[n] for n in ("ans_context", "ans_gennorm_channel")]
    rows = {r["coder"]: r for r in code_tensor(values, {}, GRID, coders=specs, verify=True)}
    x = TensorSymbols(s, GRID)
    for spec in specs:
        stream = spec.build().encode(x)
        assert rows[spec.name]["payload_bits"] == sum(part_length(p) for p in stream.payload)
        assert rows[spec.name]["side_bits"] == sum(part_length(p) for p in stream.side)
    assert rows["ans_gennorm_channel"]["side_bits"] == 6 + 8 + 8 * 8  # beta, p0, 8 scales


def brute_force_context_entropy(symbols: np.ndarray, rule: str) -> float:
    """n H(M | C) + n' H(S | C') by counting, with the contexts written out entry by entry:
    C = 0 at a lane start, else the class (1 for zero, then 1 + ceil(m / 3)) of the previous
    magnitude in the row (rule ``previous``) or the larger class of the two previous ones in
    the lane (``max2``); C' = (previous entry's sign state (0 zero, 1 +, 2 -) + 1, 0 at a
    lane start; the entry's own magnitude class, at most 15)."""
    mags, _ = GRID.signed_to_magnitude(symbols)
    negative = GRID.levels[symbols] < 0
    rows, cols = symbols.shape
    mag_pairs, sign_pairs = Counter(), Counter()
    for r in range(rows):
        for j in range(cols):
            start = j % LANE == 0
            before = [1 + math.ceil(mags[r, j - k] / 3) for k in (1, 2) if j % LANE >= k]
            mag_ctx = 0 if start else (max(before) if rule == "max2" else before[0])
            mag_pairs[(mag_ctx, mags[r, j])] += 1
            if mags[r, j]:
                state_prev = 0 if mags[r, j - 1] == 0 else 1 + negative[r, j - 1]
                own_class = min(1 + math.ceil(mags[r, j] / 3), 15)
                sign_ctx = (0 if start else state_prev + 1, own_class)
                sign_pairs[(sign_ctx, negative[r, j])] += 1
    bits = 0.0
    for pairs in (mag_pairs, sign_pairs):
        context_totals = Counter()
        for (c, _), n in pairs.items():
            context_totals[c] += n
        bits -= sum(n * math.log2(n / context_totals[c]) for (c, _), n in pairs.items())
    return bits


@pytest.mark.parametrize("rule", CONTEXTS)
def test_conditional_entropy_matches_a_brute_force_count(rule, monkeypatch) -> None:
    """entropy_context with each context rule (forced) against the count above. Planted bugs
    caught: contexts shifted by one entry, lanes restarting at the wrong place, ``max2``
    reaching into the previous lane, signs of zero entries counted, the sign context's own
    class left out."""
    s = gradient_like(3, 2 * LANE + 17, 5)
    monkeypatch.setattr(bounds, "choose_context", lambda m: rule)
    assert ContextEntropy().bits(TensorSymbols(s, GRID)) == pytest.approx(
        brute_force_context_entropy(s, rule), rel=1e-12
    )


@pytest.mark.slow
def test_bound_uses_the_rule_the_coder_sends() -> None:
    """The side bit of ans_context names the rule whose conditional entropy entropy_context
    reports, on a tensor where each rule wins. Planted bug caught: the bound fixed to one
    rule."""
    rules = []
    for s in (dead_groups(8, 2 * LANE + 17, 1), drifting_rows(8, 4096, 0)):
        x = TensorSymbols(s, GRID)
        rules.append(CONTEXTS[ContextCoder().encode(x).side[0][0]])
        assert ContextEntropy().bits(x) == pytest.approx(brute_force_context_entropy(s, rules[-1]))
    assert rules == ["previous", "max2"]


def dead_groups(rows: int, cols: int, seed: int) -> np.ndarray:
    """Signed symbols of groups of 9 entries (a 3 x 3 kernel), each all zero (a dead input
    channel) or Laplace at one scale: zero runs end abruptly, ``previous`` sees it."""
    rng = np.random.default_rng(seed)
    alive = np.repeat(rng.random((rows, -(-cols // 9))) < 0.5, 9, axis=1)[:, :cols]
    return GRID.encode(rng.laplace(size=(rows, cols)) * 2.0**-10 * alive)[0]


def drifting_rows(rows: int, cols: int, seed: int) -> np.ndarray:
    """Signed symbols of Laplace entries whose scale drifts slowly along each row."""
    rng = np.random.default_rng(seed)
    log_scale = -10 + np.cumsum(rng.normal(0, 0.15, size=(rows, cols)), axis=1)
    return GRID.encode(rng.laplace(size=(rows, cols)) * 2.0**log_scale)[0]


def test_context_coder_is_close_to_its_bound_on_a_large_tensor() -> None:
    """The adaptive code pays a learning cost over n H(M|C) + n' H(S|C'), small on 10^5
    entries (and it can never beat... the bound is of the same counts, so >= - rounding)."""
    x = TensorSymbols(gradient_like(64, 1600, 2), GRID)
    bound = ContextEntropy().bits(x)
    bits = ContextCoder().encode(x).bits
    assert bound < bits < 1.03 * bound


def test_per_channel_code_reaches_the_entropy_of_a_per_channel_source() -> None:
    """Rows of GenNorm(0.8) with scales 2**uniform(-14, -8): the per-channel code is within
    1% of the source's entropy (each row's FP8 bin probabilities from scipy.stats, plus one
    bit per non-zero sign); an i.i.d. code (empirical entropy of the whole tensor, its own
    floor) is measurably above. Planted bugs caught: a scale per tensor instead of per row,
    the wrong beta table."""
    rows, cols = 48, 4000
    rng = np.random.default_rng(3)
    scales = 2.0 ** rng.uniform(-14, -8, size=rows)
    law = scipy.stats.gennorm(0.8)
    values = law.rvs((rows, cols), random_state=rng) * scales[:, None]
    s = GRID.encode(values)[0]
    edges = GRID.magnitude_edges
    source = 0.0
    for r in range(rows):
        p = 2 * np.diff(law.cdf(edges / scales[r]))  # |X| in each magnitude bin
        p = p[p > 0]
        source += cols * (-(p * np.log2(p)).sum() + (1 - p[0]))  # + P(non-zero) sign bits
    x = TensorSymbols(s, GRID)
    channel = GenNormChannelCoder().encode(x).bits
    iid = builtin_specs([])["entropy"].build().bits(x)
    assert abs(channel / source - 1) < 0.01
    assert iid > 1.03 * source


def doc_block(language: str) -> str:
    return doc_blocks("coders.md", language)[0]


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch) -> Path:
    """docs/coders.md's example as ``mycoders.py``, importable here."""
    (tmp_path / "mycoders.py").write_text(doc_block("python"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("mycoders", None)


def test_docs_user_coder_runs_through_code_run(user_module, tmp_path: Path) -> None:
    """The docs' coder, named in a config as the docs show, through the function the
    workflow's code_lossless job calls; its bits are those of its own format (8-bit width
    field + width bits per symbol), checked here from the format, and it decodes exactly."""
    import yaml

    coders = yaml.safe_load(doc_block("yaml"))["lossless"]["coding"]["coders"]
    specs = configured_coders({"families": ["gennorm"], "coders": coders})
    tensor = torch.from_numpy(
        scipy.stats.laplace(scale=1e-3).rvs((6, 40), random_state=0).astype(np.float32)
    )
    path = tmp_path / "epoch1.safetensors"
    kinds = {"epoch_avg": {"w": tensor}, "last_batch": {"w": tensor}}
    write_dump(path, kinds, {"epoch": 1, "n_batches": 5})
    fits = fit_run(
        [path], model="m", run=0, families=["gennorm"], floc=None, skip_below=10,
        kinds=["epoch_avg"],
    )  # fmt: skip
    table = code_run(
        [path], fits, model="m", run=0, families=["gennorm"], accountings=["exact"],
        coders=specs, verify=True,
    )  # fmt: skip
    assert list(table["coder"]) == ["lzma", "entropy", "ans_context", "fixed"]
    fixed = table.set_index("coder").loc["fixed"]
    symbols = GRID.encode(tensor.double().numpy())[0]
    assert fixed["total_bits"] == 8 + symbols.size * int(symbols.max()).bit_length()


@pytest.mark.parametrize(
    "entry, says",
    [
        ("ans_contxt", "unknown coder 'ans_contxt'"),
        ({"name": "x", "class": "mycoders.FixedWidth"}, "not of the form"),
        ({"name": "x", "class": "nosuchmodule:Thing"}, "cannot import module 'nosuchmodule'"),
        ({"name": "x", "class": "mycoders:FixedWidht"}, "has no class 'FixedWidht'"),
        ({"name": "x", "class": "mycoders:FixedWidth", "options": {"k": 1}}, "cannot take"),
    ],
)
def test_bad_entries_name_the_key(user_module, entry, says) -> None:
    """The library's error names the entry (its index) and says why; the study's names the
    config key."""
    with pytest.raises(CoderEntryError) as info:
        coder_specs(["lzma", entry])
    assert info.value.index == 1 and says in info.value.message
    with pytest.raises(ConfigError) as info:
        configured_coders({"coders": ["lzma", entry]})
    assert "config key 'lossless.coding.coders.1" in str(info.value) and says in str(info.value)
