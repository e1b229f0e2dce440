"""Bad input fails early with a named error: what a compressor takes, NaN and infinity refused
before encoding (the tensor and the count named), one default per name (the top-K fraction),
a missing data path at config check, did-you-mean for near-miss keys."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from gradcomp.compression import build_compressor
from gradcomp.compression.inputs import NonFiniteUpdateError, checked_update
from gradcomp.compression.specs import DEFAULT_TOPK, SpecError, check_spec
from gradcomp.errors import ConfigError, did_you_mean

REPO = Path(__file__).resolve().parents[2]
SPECS = [
    {"quantizer": "uniform", "rate": 2, "topk": 0.3, "min_entries": 10},
    {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2, "topk": 0.3, "min_entries": 10},
    {"quantizer": "qsgd", "rate": 3, "sparsifier": "none", "min_entries": 10},
    {"compressor": "powersgd", "rate": 1},
    {"compressor": "count_sketch", "rate": 100},
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.get("quantizer") or s["compressor"])
def test_one_nan_or_inf_is_refused_naming_the_tensor_and_the_count(spec):
    """A 20,000-entry tensor with one NaN (and one with two infinities) is refused before
    encoding by every kind, never decoded into a tensor of NaNs. Planted bug that fails it:
    the check left out of one kind's compress (uniform and Lloyd then return all-NaN)."""
    gen = torch.Generator().manual_seed(0)
    update = {"a": torch.randn(200, 100, generator=gen), "b": torch.randn(50, 40, generator=gen)}
    update["a"][3, 7] = float("nan")
    with pytest.raises(
        NonFiniteUpdateError, match=r"'a' has 1 non-finite entries of 20000 \(1 NaN"
    ):
        build_compressor(spec).compress(update)
    update["a"][3, 7] = 0.0
    update["b"][0, :2] = torch.tensor([float("inf"), -float("inf")])
    with pytest.raises(NonFiniteUpdateError, match=r"'b' has 2 non-finite .* 2 infinite"):
        build_compressor(spec).compress(update)


@pytest.mark.parametrize(
    ("update", "says"),
    [
        (np.zeros(5, dtype=np.float32), "got a numpy ndarray"),
        ({"w": np.zeros(5, dtype=np.float32)}, "entry 'w' is a numpy ndarray .*torch.from_numpy"),
        (torch.zeros(5), "got a single tensor"),
        ({"w": torch.zeros(5, dtype=torch.int32)}, "not floating point"),
        ({3: torch.zeros(5)}, "the name 3"),
        ([torch.zeros(5)], "got a list"),
    ],
)
def test_compress_says_what_it_takes(update, says):
    with pytest.raises(TypeError, match="takes one update: a dict of tensor name") as err:
        build_compressor(SPECS[0]).compress(update)
    assert re.search(says, str(err.value)), str(err.value)


def test_checked_update_passes_a_good_update_through():
    u = {"w": torch.ones(4, dtype=torch.float64)}
    assert checked_update(u) is u


def test_topk_without_a_fraction_means_the_same_everywhere(tmp_path):
    """The library's default (a spec with ``sparsifier: topk`` and no ``topk``), the config's
    ``lossy.topk``, the DDP hook's checked spec and the docs all say 45.2%. Planted
    bug: the library's old 1.0."""
    assert DEFAULT_TOPK == 0.452
    assert check_spec({"quantizer": "uniform", "rate": 2, "sparsifier": "topk"})["topk"] == 0.452
    assert check_spec({"quantizer": "none", "sparsifier": "randomk"})["topk"] == 0.452
    defaults = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert defaults["lossy"]["topk"] == DEFAULT_TOPK
    import torch.distributed as dist

    from gradcomp.distributed import CompressionHookState

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        state = CompressionHookState(
            {"quantizer": "uniform", "rate": 2, "sparsifier": "topk"}, model=torch.nn.Linear(3, 2)
        )
        assert state.checked["topk"] == DEFAULT_TOPK
    finally:
        dist.destroy_process_group()
    readme = (REPO / "config/README.md").read_text()
    assert "`lossy.topk` = 45.2%" in readme


def test_near_miss_keys_get_a_did_you_mean():
    """``rates`` in a spec (the library, the hook) and ``rate`` in a config entry point at
    each other; a config key one letter off is named."""
    from gradcomp.compression.entries import EntryError, expand_entries
    from gradcomp.study.config import validate_config

    with pytest.raises(SpecError, match="did you mean 'rate'"):
        check_spec({"quantizer": "uniform", "rates": [2]})
    with pytest.raises(EntryError, match="did you mean 'rates'"):
        expand_entries([{"name": "u", "quantizer": "uniform", "rate": 2}])
    with pytest.raises(ConfigError, match=r"'lossy.topK': unknown key \(did you mean 'topk'\?\)"):
        validate_config({"lossy": {"topK": 0.1}}, REPO / "workflow/schemas/config.schema.yaml")
    assert did_you_mean("zzzz", ["rate"]) == ""


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_a_bad_data_path_fails_at_config_check(tmp_path, where):
    """The ``cifar10`` key is checked when the study is built (at ``snakemake -n``): a path
    that does not exist, or a folder that is no CIFAR-10 copy, gives a ConfigError naming the
    key and the path. Planted bug: the check left to the prepare job (then the dry run
    passes)."""
    from gradcomp.study import load_study

    path = tmp_path / "nowhere" if where == "missing" else tmp_path
    config = {"cifar10": str(path)}
    with pytest.raises(ConfigError, match=rf"config key 'cifar10': .*{re.escape(str(path))}"):
        load_study(config, REPO / "workflow/schemas/config.schema.yaml")
