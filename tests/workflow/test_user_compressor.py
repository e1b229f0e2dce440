"""A user's own compressor class: config checks, and the example of ``docs/extending.md`` run
through the workflow (the shared run; the test runs the code that page shows)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from conftest import doc_blocks, run_snakemake
from gradcomp.compression import build_compressor
from gradcomp.study.config import ConfigError
from gradcomp.study.lossy import compressor_variants


def doc_block(language: str) -> str:
    """The first fenced ``language`` block of ``docs/extending.md`` (its compressor example)."""
    return doc_blocks("extending.md", language)[0]


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch) -> Path:
    """The documented example as ``mycompressors.py`` (importable here), plus a broken class."""
    code = doc_block("python")
    code += (
        "\n\nclass NoRate:\n    def compress(self, u): ...\n    def decompress(self, p, c): ...\n"
    )
    code += (  # the example without its byte format: compress, decompress and rate only
        "\n\nclass NoBytes:\n    def __init__(self, rate, seed=0):\n"
        "        self.inner = ScaledRound(rate)\n"
        "    def compress(self, u):\n        return self.inner.compress(u)\n"
        "    def decompress(self, p, c):\n        return self.inner.decompress(p, c)\n"
        "    def rate(self, p, c):\n        return self.inner.rate(p, c)\n"
    )
    (tmp_path / "mycompressors.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("mycompressors", None)


def entry_error(entry: dict) -> str:
    with pytest.raises(ConfigError) as info:
        compressor_variants(
            {"topk": 0.452, "compressors": [{"name": "none", "quantizer": "none"}, entry]}
        )
    return str(info.value)


@pytest.mark.parametrize(
    "path, says",
    [
        ("mycompressors.ScaledRound", "not of the form"),
        ("nosuchmodule:Thing", "cannot import module 'nosuchmodule'"),
        ("mycompressors:Missing", "has no class 'Missing'"),
        ("mycompressors:NoRate", "lacks the compressor method(s) rate"),
    ],
)
def test_bad_class_names_the_key(user_module, path, says):
    message = entry_error({"name": "mine", "class": path, "rates": [3]})
    assert "config key 'lossy.compressors.1.class'" in message and says in message


def test_constructor_keywords_are_checked(user_module):
    message = entry_error({"name": "mine", "class": "mycompressors:ScaledRound", "levels": 3})
    assert "config key 'lossy.compressors.1.class'" in message and "levels" in message


def test_entry_builds_the_class_with_rate_seed_and_options(user_module):
    entry = {"name": "mine", "class": "mycompressors:ScaledRound", "rates": [3, 4]}
    variants = compressor_variants({"topk": 0.452, "compressors": [entry]})
    assert [(v.name, v.rate, v.M) for v in variants] == [("mine", 3, 0), ("mine", 4, 0)]
    c = build_compressor({**variants[1].spec, "seed": 7})
    assert type(c).__name__ == "ScaledRound" and c.bits == 4 and c.L == 7
    # without rates: variant R0, and no rate keyword (ScaledRound needs one: refused)
    message = entry_error({"name": "mine", "class": "mycompressors:ScaledRound"})
    assert "lossy.compressors.1.class" in message and "rate" in message


def test_docs_example_is_decoded_from_its_bytes_and_without_them_self_reported(user_module):
    """The documented class's to_bytes / from_bytes: the server decodes each update from the
    bytes alone (send() checks it equals decompress bit for bit) and bits_coded is 8 x their
    length: per tensor a float32 scale and `rate` bits per entry, padded to a byte. The same
    class without the pair runs too, its rows self-reported. Planted bug that fails it: a
    from_bytes that reads one scale for every tensor."""
    from gradcomp.lossy.uplink import send
    from gradcomp.wire.users import compressor_factory

    g = torch.Generator().manual_seed(0)
    update = {"w": torch.randn(7, 5, generator=g), "b": torch.randn(13, generator=g)}
    for rnd in (1, 2):
        make = compressor_factory({"class": "mycompressors:ScaledRound", "rate": 3}, seed=1)
        receiver = make.receiver(0, rnd - 1)
        row = send(make(0), update, rnd=rnd, user=0, n_train=1, receiver=receiver).row
        assert row["bits_source"] == "bytes"
        assert row["bits_accounted"] == 3 * 48 + 32 * 2
        assert row["bits_coded"] == 8 * ((4 + (35 * 3 + 7) // 8) + (4 + (13 * 3 + 7) // 8))
    plain = compressor_factory({"class": "mycompressors:NoBytes", "rate": 3}, seed=1)
    row = send(plain(0), update, rnd=1, user=0, n_train=1, receiver=plain.receiver(0, 0)).row
    assert row["bits_source"] == "self-reported" and row["bits_coded"] == 3 * 48 + 32 * 2


@pytest.mark.slow
def test_docs_example_runs_through_the_workflow(shared_run: Path, tmp_path: Path):
    work = tmp_path / "wf"
    work.mkdir()
    tree = shared_run / "cifar"  # the shared run's image folder (60 users + 30 pool), read only
    (work / "mycompressors.py").write_text(doc_block("python"))  # importable from the workdir
    (work / "mine.yaml").write_text(doc_block("yaml"))
    # the documented config file as given, on the default study (its data subsets cut to
    # what the small folder holds, which -n checks): it plans without an error
    # (planted bug: the example replacing the list, which left the defaults' questions,
    # baseline and full runs naming compressors it no longer has)
    plan = run_snakemake(work, "-n", "--cores", "1", "--configfile", "mine.yaml", "--config",
                         f"cifar10={tree}", "data={train_subset: 60, test_subset: 20, "
                         "pretrain_subset: 30}")  # fmt: skip
    assert "one_round_study" in plan.stdout + plan.stderr
    # the shared run has the documented entries (conftest.shared_config) and ran one variant
    compressors = yaml.safe_load(doc_block("yaml"))["lossy"]["more_compressors"]
    config = yaml.safe_load((shared_run / "tiny.yaml").read_text())
    entries = config["lossy"]["compressors"]
    assert all(entry in entries for entry in compressors)
    run = "results/lossy/wide/mine/R3_M0/seed0/uplink.tsv"  # one of the entry's runs
    uplink = pd.read_csv(shared_run / run, sep="\t")
    # the class's own accounting: 3 bits per entry plus one 32-bit scale per tensor; the
    # bits sent: its bytes, the same plus each of its 4 tensors padded to a byte
    assert (uplink["bits_accounted"] == 3 * uplink["n_entries"] + 32 * 4).all()
    assert (uplink["bits_fixed"] == uplink["bits_accounted"]).all() and len(uplink) == 4
    assert (uplink["bits_source"] == "bytes").all()
    padding = uplink["bits_coded"] - uplink["bits_accounted"]
    assert ((padding >= 0) & (padding <= 7 * 4)).all()

    index = next(i for i, e in enumerate(entries) if e["name"] == "mine")
    entries[index] = {**entries[index], "class": "mycompressors:Nope"}
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(work, "-n", "--cores", "1", "--configfile", "tiny.yaml", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"config key 'lossy.compressors.{index}.class'" in out
    assert "has no class 'Nope'" in out
