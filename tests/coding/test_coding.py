import math

import numpy as np
import pytest
from bitarray import bitarray, decodetree
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcomp.coding import (
    CorruptStreamError,
    HuffmanCode,
    ans_bits,
    ans_decode,
    ans_encode,
    cross_entropy_bits,
    entropy_bits,
    general_purpose_bits,
    lz78_bits,
    lz78_decode,
    lz78_encode,
)
from gradcomp.coding.pmf import empirical_pmf


@st.composite
def pmf_and_symbols(draw, max_alphabet=300, max_n=400):
    """A pmf with some zero entries and symbols drawn from its support."""
    L = draw(st.integers(1, max_alphabet))
    weights = draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-9, 1.0)), min_size=L, max_size=L))
    p = np.asarray(weights)
    if p.sum() == 0:
        p[draw(st.integers(0, L - 1))] = 1.0
    support = np.flatnonzero(p > 0)
    kind = draw(st.sampled_from(["random", "empty", "single"])) if max_n else "empty"
    if kind == "empty":
        sym = np.zeros(0, dtype=np.int64)
    elif kind == "single":
        sym = np.full(draw(st.integers(1, max_n)), draw(st.sampled_from(support.tolist())))
    else:
        idx = draw(st.lists(st.integers(0, support.size - 1), max_size=max_n))
        sym = support[np.asarray(idx, dtype=np.int64)]
    return p, sym.astype(np.int64)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(pmf_and_symbols())
def test_huffman_roundtrip_and_length(case):
    p, sym = case
    code = HuffmanCode.from_pmf(p)
    np.testing.assert_array_equal(code.lengths > 0, p > 0)
    bits = code.encode(sym)
    counts, _ = empirical_pmf(sym, p.size)
    assert len(bits) == code.charged_bits(counts) == int(counts @ code.lengths)
    assert len(bits) == code.bit_length(sym)
    np.testing.assert_array_equal(code.decode(bits, sym.size), sym)
    # prefix property: every codeword is distinct and none is a prefix of another
    words = sorted(w.to01() for w in code.codewords.values())
    assert all(not b.startswith(a) for a, b in zip(words, words[1:], strict=False))


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(pmf_and_symbols(max_n=0))
def test_huffman_average_length_within_one_bit_of_entropy(case):
    p, _ = case
    code = HuffmanCode.from_pmf(p)
    H = entropy_bits(p)
    avg = code.expected_length(p)
    if np.count_nonzero(p) == 1:
        assert avg == 1.0  # a lone symbol still costs one bit
    else:
        assert H - 1e-9 <= avg < H + 1


def test_huffman_single_symbol_and_empty():
    code = HuffmanCode.from_pmf(np.array([0.0, 0.0, 3.0]))
    np.testing.assert_array_equal(code.lengths, [0, 0, 1])
    bits = code.encode(np.full(10, 2))
    assert bits == bitarray("0" * 10)
    np.testing.assert_array_equal(code.decode(bits, 10), np.full(10, 2))
    assert len(code.encode(np.zeros(0, dtype=np.int64))) == 0
    assert code.decode(bitarray(), 0).size == 0
    with pytest.raises(ValueError):
        HuffmanCode.from_pmf(np.zeros(4))


@pytest.mark.slow
def test_huffman_alphabet_of_2_16_symbols():
    rng = np.random.default_rng(0)
    p = rng.random(2**16) ** 4
    code = HuffmanCode.from_pmf(p)
    sym = rng.choice(2**16, size=100_001, p=p / p.sum())
    bits = code.encode(sym)
    assert len(bits) == code.bit_length(sym)
    np.testing.assert_array_equal(code.decode(bits, sym.size), sym)


@pytest.mark.parametrize("n", [1, 2, 5, 70_001])
def test_huffman_long_codewords(n):
    # p_k ~ 2^-k gives codewords up to 119 bits: exercises the bitarray encode fallback
    p = 2.0 ** -np.arange(120)
    code = HuffmanCode.from_pmf(p)
    assert code.max_length > 64
    rng = np.random.default_rng(n)
    sym = np.minimum(rng.geometric(0.5, n) - 1, 119)
    sym[n // 2] = 119  # one very long codeword in the middle
    bits = code.encode(sym)
    assert len(bits) == code.bit_length(sym)
    np.testing.assert_array_equal(code.decode(bits, n), sym)


def test_huffman_numpy_encoder_matches_bitarray_encode():
    rng = np.random.default_rng(3)
    p = rng.random(247) ** 8
    code = HuffmanCode.from_pmf(p)
    assert code.max_length <= 64
    sym = rng.choice(247, size=200_001, p=p / p.sum())
    ref = bitarray(endian="big")
    ref.encode(code.codewords, sym.tolist())
    assert code.encode(sym) == ref
    np.testing.assert_array_equal(code.decode(ref, sym.size), sym)


@pytest.mark.parametrize(
    "lengths",
    [[1, 1], [2, 2, 2, 2], [0, 3, 3, 3, 3, 3, 3, 3, 3], [3, 3, 0, 3, 3, 3], [0, 1, 0], [8] * 256],
)
def test_huffman_fixed_width_codes_match_bitarray(lengths):
    """Codes of one codeword length (the fast path) give bitarray's bits for the same
    codewords, decode them back, and reject a codeword the code does not have."""
    code = HuffmanCode.from_lengths(lengths)
    used = np.flatnonzero(np.array(lengths))
    rng = np.random.default_rng(len(lengths))
    for n in (1, 7, 8, 9, 100_003):
        sym = rng.choice(used, size=n)
        ref = bitarray(endian="big")
        ref.encode(code.codewords, sym.tolist())
        assert code.encode(sym) == ref
        np.testing.assert_array_equal(code.decode(ref + bitarray("1011"), n), sym)
        with pytest.raises(CorruptStreamError):
            code.decode(ref[:-1], n)
    w, n_used = lengths[used[0]], used.size
    if n_used < 2**w:  # the all-ones word is no codeword of a canonical incomplete code
        with pytest.raises(CorruptStreamError):
            code.decode(bitarray("1" * w * 3, endian="big"), 3)


@pytest.mark.parametrize("seed", range(4))
def test_huffman_decoder_matches_bitarray_decodetree(seed):
    """The compiled canonical decoder gives bitarray's decode-tree symbols, on complete
    Huffman codes and on incomplete codes (Kraft sum < 1), whose unused words it rejects."""
    rng = np.random.default_rng(seed)
    p = rng.random(40) ** (4 * seed + 1)
    codes = [HuffmanCode.from_pmf(p), HuffmanCode.from_lengths([1, 3, 3, 0, 5])]
    for code in codes:
        used = np.flatnonzero(code.lengths)
        sym = rng.choice(used, size=5000)
        bits = code.encode(sym)
        ref = np.array(list(bits.decode(decodetree(code.codewords))))
        np.testing.assert_array_equal(ref, sym)
        np.testing.assert_array_equal(code.decode(bits, sym.size), ref)
    incomplete = codes[1]  # codewords 0, 100, 101, 11000: 111 starts none
    with pytest.raises(CorruptStreamError, match="no codeword"):
        incomplete.decode(bitarray("0100111000", endian="big"), 4)


def test_huffman_errors():
    code = HuffmanCode.from_pmf(np.array([0.5, 0.0, 0.5]))
    with pytest.raises(ValueError, match="no codeword"):
        code.encode(np.array([0, 1]))
    with pytest.raises(ValueError, match="no codeword"):
        code.charged_bits(np.array([1, 1, 0]))
    with pytest.raises(ValueError):
        code.encode(np.array([3]))
    with pytest.raises(ValueError):
        code.encode(np.array([-1]))
    bits = code.encode(np.array([0, 2, 2]))
    with pytest.raises(CorruptStreamError):
        code.decode(bits, 4)
    with pytest.raises(ValueError, match="Kraft"):
        HuffmanCode.from_lengths([1, 1, 1])


def test_canonical_code_and_side_info():
    code = HuffmanCode.from_lengths([2, 0, 1, 3, 3])
    assert {s: w.to01() for s, w in code.codewords.items()} == {2: "0", 0: "10", 3: "110", 4: "111"}
    assert code.length_width == 2
    assert code.side_info_bits() == 8 + 5 * 2
    assert code.expected_length([0.25, 0, 0.5, 0.125, 0.125]) == 1.75


def test_entropy_and_cross_entropy():
    assert entropy_bits(np.ones(8)) == pytest.approx(3.0)
    assert entropy_bits([1, 0, 0]) == 0.0
    p, q = np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.25, 0.5])
    assert cross_entropy_bits(p, q) == pytest.approx(0.5 * 2 + 0.25 * 2 + 0.25 * 1)
    assert cross_entropy_bits(p, p) == pytest.approx(entropy_bits(p))
    assert cross_entropy_bits(p, [0.5, 0.5, 0]) == math.inf
    assert cross_entropy_bits([0.5, 0.5, 0], [0.5, 0.5, 0]) == pytest.approx(1.0)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(pmf_and_symbols(max_alphabet=100))
def test_ans_roundtrip(case):
    p, sym = case
    words = ans_encode(sym, p)
    assert words.dtype == np.uint32
    np.testing.assert_array_equal(ans_decode(words, sym.size, p), sym)
    assert ans_bits(sym, p) == 32 * words.size


def test_ans_rate_close_to_cross_entropy():
    rng = np.random.default_rng(0)
    p = rng.random(50) ** 3
    sym = rng.choice(50, size=100_000, p=p / p.sum())
    _, emp = empirical_pmf(sym, 50)
    assert ans_bits(sym, p) / sym.size == pytest.approx(cross_entropy_bits(emp, p), abs=0.01)
    # a symbol of model probability 0 is still codable
    q = p.copy()
    q[sym[0]] = 0
    np.testing.assert_array_equal(ans_decode(ans_encode(sym[:100], q), 100, q), sym[:100])


def brute_force_lz78(data: bytes) -> tuple[list[int], bytes]:
    """LZ78 by its textbook definition: a list of phrases (bytes), index 0 the empty one; at
    each position take the longest phrase in the list that the remaining data starts with,
    send (its index, the next byte) and append match + byte. Data that end inside a match
    send that match's index alone."""
    phrases = [b""]
    indices, next_bytes, i = [], bytearray(), 0
    while i < len(data):
        match = max(
            (k for k, ph in enumerate(phrases) if data.startswith(ph, i)),
            key=lambda k: len(phrases[k]),
        )
        end = i + len(phrases[match])
        indices.append(match)
        if end == len(data):
            break
        next_bytes.append(data[end])
        phrases.append(data[i : end + 1])
        i = end + 1
    return indices, bytes(next_bytes)


def documented_lz78_bits(n_indices: int, n_bytes: int) -> int:
    """The documented code length: the k-th index chooses among k dictionary entries,
    ceil(log2 k) bits, plus 8 bits per byte."""
    return sum(math.ceil(math.log2(k)) for k in range(1, n_indices + 1)) + 8 * n_bytes


def check_lz78_against_brute_force(data: bytes) -> None:
    indices, next_bytes = brute_force_lz78(data)
    idx, nxt = lz78_encode(data)
    assert idx.tolist() == indices
    assert bytes(nxt) == next_bytes
    assert lz78_bits(data) == documented_lz78_bits(len(indices), len(next_bytes))
    assert lz78_decode(idx, nxt) == data


def test_lz78_known_parse():
    data = b"AABABBBABAABABBBABBABB"
    idx, nxt = lz78_encode(data)
    # phrases: A, AB, ABB, B, ABA, ABAB, BB, ABBA, BB(tail)
    assert bytes(nxt) == b"ABBBABBA"
    np.testing.assert_array_equal(idx, [0, 1, 2, 0, 2, 5, 4, 3, 7])
    # 9 indices: 0+1+2+2+3+3+3+3+4 bits, 8 bytes of 8 bits
    assert lz78_bits(data) == 21 + 64
    check_lz78_against_brute_force(data)
    assert lz78_bits(b"") == 0 and lz78_encode(b"")[0].size == 0
    assert lz78_bits(b"A") == 8 and lz78_bits(b"AA") == 8 + 1  # "A", then tail "A"


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=1500), st.lists(st.sampled_from([0, 1, 255]), max_size=1500).map(bytes)
    )
)
def test_lz78_matches_a_brute_force_parse(data):
    check_lz78_against_brute_force(data)


@pytest.mark.parametrize(
    "data",
    [
        b"a" * 3000,  # phrase lengths 1, 2, 3, ...
        bytes(range(256)) * 8,
        b"abcab" * 400,
        bytes(np.random.default_rng(3).geometric(0.3, 3000).clip(0, 255).astype(np.uint8)),
    ],
    ids=["run", "cycle", "period5", "geometric"],
)
def test_lz78_structured_inputs_match_the_brute_force(data):
    check_lz78_against_brute_force(data)


def test_lz78_run_length_closed_form():
    # n copies of one byte: phrases of lengths 1..P, then a tail of length t < P + 1
    for n in (1, 2, 3, 10, 55, 56, 1000):
        p = int((math.isqrt(8 * n + 1) - 1) // 2)  # largest P with P (P + 1) / 2 <= n
        tail = n - p * (p + 1) // 2
        assert lz78_bits(b"x" * n) == documented_lz78_bits(p + (tail > 0), p)


def test_lz78_decode_rejects_bad_index():
    with pytest.raises(CorruptStreamError):
        lz78_decode([0, 5], b"ab")


@pytest.mark.slow
def test_general_purpose_bits():
    """Each entry is 8 x the byte length of the standard library's own compression of the
    data at the documented level (planted bugs: bytes reported as bits, i.e. no factor 8,
    or zlib at its default level 6 instead of 9)."""
    import bz2
    import lzma
    import random
    import zlib

    rng = random.Random(0)
    words = [bytes(rng.choices(b"abcdefgh", k=rng.randint(2, 9))) for _ in range(300)]
    data = b" ".join(rng.choices(words, k=20_000))
    out = general_purpose_bits(data)
    assert zlib.compress(data, 9) != zlib.compress(data)  # the level shows in the size
    assert out["zlib"] == 8 * len(zlib.compress(data, 9))
    assert out["bz2"] == 8 * len(bz2.compress(data, 9))
    assert out["lzma"] == 8 * len(lzma.compress(data, preset=6))
