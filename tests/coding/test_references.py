"""The strong byte-compressor references of T1 (lzma_raw, brotli, zpaq) against the
libraries and the program called here directly, with the settings written out."""

from __future__ import annotations

import lzma
import shutil

import brotli
import numpy as np
import pytest

from gradcomp.coding.base import TensorSymbols
from gradcomp.coding.general_purpose import general_purpose_bits
from gradcomp.coding.registry import builtin_specs
from gradcomp.coding.zpaq import zpaq_bits
from gradcomp.quantization.grids import get_grid

GRID = get_grid("fp8_e5m2")


@pytest.mark.slow
def test_lzma_raw_and_brotli_are_the_libraries_at_their_strongest_settings() -> None:
    """Planted bugs caught: the xz container kept, preset 9 without extreme, brotli at its
    default window."""
    rng = np.random.default_rng(0)
    data = bytes(rng.geometric(0.05, size=50_000).clip(0, 255).astype(np.uint8))
    filters = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "lc": 4,
                "lp": 0, "pb": 0}]  # fmt: skip
    out = general_purpose_bits(data)
    assert out["lzma_raw"] == 8 * len(lzma.compress(data, format=lzma.FORMAT_RAW, filters=filters))
    assert out["brotli"] == 8 * len(brotli.compress(data, quality=11, lgwin=24))


@pytest.mark.parametrize("method", ["lzma_raw", "brotli"])
def test_byte_coders_roundtrip(method) -> None:
    s = np.random.default_rng(1).integers(0, GRID.n_levels, size=(3, 40))
    coder = builtin_specs([])[method].build()
    stream = coder.encode(TensorSymbols(s, GRID))
    np.testing.assert_array_equal(coder.decode(stream, GRID, {}), s)


NO_ZPAQ = "zpaq not installed (apt-get install zpaq)"


@pytest.mark.skipif(shutil.which("zpaq") is None, reason=NO_ZPAQ)
def test_zpaq_net_size() -> None:
    """The empty file costs nothing net; random bytes cost at least their 8 bits each
    (less 1 %), repetitive bytes far less."""
    assert zpaq_bits(b"") == 0.0
    noise = bytes(np.random.default_rng(2).integers(0, 256, size=4000, dtype=np.uint8))
    assert zpaq_bits(noise) >= 0.99 * 8 * len(noise)
    assert zpaq_bits(b"abc" * 2000) < 0.05 * 8 * 6000
