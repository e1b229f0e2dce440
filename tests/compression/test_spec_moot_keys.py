"""Issue 54, item 3: no key of a compressor spec or config entry is ever dropped.

A key that another key (or the kind) makes moot is refused by
:func:`~gradcomp.compression.specs.check_spec` and by the config entries
(:func:`~gradcomp.compression.entries.expand_entries`), naming both keys; the enumeration
derives the kinds from the registry and the keys from ``spec_keys()``, and calls a key dropped
when the spec is accepted but the compressor decodes and counts exactly as without it.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gradcomp.compression import build_compressor
from gradcomp.compression.entries import EntryError, expand_entries
from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.compression.specs import SpecError, check_spec, spec_keys

# -- the five causes, each a named case -----------------------------------------------


@pytest.mark.parametrize(
    ("spec", "key", "other"),
    [
        (
            {"quantizer": "uniform", "rate": 2, "topk": 0.1, "sparsifier": "none"},
            "topk",
            "sparsifier",
        ),
        (
            {"quantizer": "uniform", "rate": 2, "topk_budget_percent": 50, "sparsifier": "none"},
            "topk_budget_percent",
            "sparsifier",
        ),
        (
            {"quantizer": "uniform", "rate": 2, "memory_decay": 0.5},
            "memory_decay",
            "error_feedback",
        ),
        (
            {"compressor": "powersgd", "rate": 2, "memory_decay": 0.5},
            "memory_decay",
            "error_feedback",
        ),
        ({"quantizer": "uniform", "rate": 2, "lloyd_fit": "survivors"}, "lloyd_fit", "quantizer"),
        ({"quantizer": "kmeans", "rate": 2, "lloyd_fit": "update"}, "lloyd_fit", "quantizer"),
        (
            {"quantizer": "tcq", "family": "gennorm", "rate": 2, "lloyd_fit": "survivors"},
            "lloyd_fit",
            "quantizer",
        ),
        (
            {"quantizer": "uniform", "rate": 2, "topk": 0.1, "topk_budget_percent": 50},
            "topk",
            "topk_budget_percent",
        ),
        (
            {"compressor": "count_sketch", "rate": 100, "sketch_feedback": "subtract"},
            "sketch_feedback",
            "error_feedback",
        ),
        ({"quantizer": "kmeans", "rate": 2, "slip": True}, "slip", "quantizer"),
        ({"quantizer": "float16", "huffman": False}, "huffman", "quantizer"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_moot_key_is_refused_naming_both_keys(spec, key, other):
    with pytest.raises(SpecError) as err:
        check_spec(spec)
    assert err.value.key == key and err.value.other == other
    assert repr(key) in str(err.value) and other in str(err.value)


def test_an_entry_with_sparsifier_none_and_topk_is_refused():
    entry = {"name": "u", "quantizer": "uniform", "rates": [2], "sparsifier": "none",
             "topk": 0.1}  # fmt: skip
    with pytest.raises(EntryError) as err:
        expand_entries([entry])
    (problem,) = err.value.problems
    assert problem.key == "topk" and "sparsifier" in problem.message


def test_an_entrys_topk_under_the_sections_budget_is_refused_naming_it():
    entry = {"name": "u", "quantizer": "uniform", "rates": [2], "topk": 0.1}
    with pytest.raises(EntryError) as err:
        expand_entries([entry], {"topk_budget_percent": 60})
    (problem,) = err.value.problems
    assert problem.key == "topk" and "topk_budget_percent" in problem.message
    assert "section's default" in problem.message


def test_section_defaults_that_an_entry_makes_moot_do_not_apply():
    """The section's keep fraction, decay, fit and slip fill only the entries they act on."""
    defaults = {"topk": 0.4, "memory_decay": 0.5, "lloyd_fit": "survivors", "slip": True}
    (v,) = expand_entries([{"name": "k", "quantizer": "kmeans", "rates": [2],
                            "sparsifier": "none"}], defaults)  # fmt: skip
    assert v.spec["sparsifier"] == "none" and v.spec["topk"] is None
    assert not v.spec["slip"] and v.spec["memory_decay"] == 1.0


def test_a_checked_specs_plain_dict_checks_again():
    """What check_spec fills in (topk from a budget, the default decay and fit) restated."""
    spec = check_spec({"quantizer": "uniform", "rate": 2, "topk_budget_percent": 50})
    assert check_spec(spec.plain()) == spec
    assert check_spec({**spec.plain(), "min_entries": 5})["min_entries"] == 5


# -- every key of every kind against every key that can make it moot --------------------------

#: Keys not enumerated: the source keys and the label say what is built and name it; rate is
#: part of every base spec; seed is an agreed fact every user's spec carries (its own seed),
#: whether or not the kind draws anything with it.
NOT_ENUMERATED = ("name", "quantizer", "compressor", "class", "options", "rate", "seed")
#: A value of each enumerated key other than its default (a new spec key needs one here).
SAMPLE = {
    "family": "laplace", "lloyd_fit": "survivors", "M": 2, "sparsifier": "randomk",
    "topk": 0.3, "topk_budget_percent": 50, "min_entries": 10, "error_feedback": True,
    "memory_decay": 0.5, "slip": True, "huffman": False, "memory_mode": "m22", "states": 16,
    "levels": 3, "float8_format": "e4m3", "float8_scaling": "amax", "float8_ties": "upper",
    "bucket_size": 64, "rows": 3, "sketch_scope": "tensor", "sketch_k_ratio": 0.1,
    "sketch_feedback": "subtract", "sketch_hash": "polynomial", "sketch_topk": 0.5,
    "target_bits": 1.5,
}  # fmt: skip
#: The settings that can make another key moot (the kind itself is the empty context).
CONTEXTS = ({}, {"sparsifier": "none"}, {"topk_budget_percent": 50})


def _base(kind: str) -> dict:
    """A valid spec of the kind: rate 2 (or its fixed rate, or the first rate its own check
    accepts), a family where it takes one, and min_entries 100 (the update below has a
    small tensor sent raw)."""
    if kind in COMPRESSORS:
        source = {"compressor": kind}
        if "min_entries" in getattr(COMPRESSORS[kind], "options", {}):
            source["min_entries"] = 100
    else:
        cls = QUANTIZERS[kind]
        source = {"quantizer": kind, "min_entries": 100}
        if cls.takes_family:
            source["family"] = "gennorm"
        if cls.fixed_rate is not None:
            return source
    for rate in (2, 4, 100):
        try:
            check_spec({**source, "rate": rate})
        except SpecError:
            continue
        return {**source, "rate": rate}
    raise AssertionError(f"no rate of {kind} passes check_spec")


def _updates() -> list[dict[str, torch.Tensor]]:
    """Two rounds of an update (float64: half its entries dyadic, so that ties and exact
    float32 values occur): a 30-entry tensor, a 200-entry one and a 16 x 25 matrix."""
    g = torch.Generator().manual_seed(54)
    out = []
    for _ in range(2):
        update = {}
        for name, shape in (("a", (30,)), ("b", (200,)), ("c", (16, 25))):
            x = torch.randn(shape, generator=g, dtype=torch.float64)
            dyadic = torch.round(x * 8) / 8
            update[name] = torch.where(torch.rand(shape, generator=g) < 0.5, dyadic, x)
        out.append(update)
    return out


def _behaviour(spec) -> list:
    """Per round: the decoded update and the rate's parts."""
    c = build_compressor(spec)
    out = []
    for update in _updates():
        payload, ctx = c.compress(update)
        decoded = c.decompress(payload, ctx)
        out.append(({n: t.tolist() for n, t in decoded.items()},
                    dataclasses.astuple(c.rate(payload, ctx))))  # fmt: skip
    return out


def test_every_enumerated_key_has_a_sample_value():
    assert set(SAMPLE) == set(spec_keys()) - set(NOT_ENUMERATED)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [*QUANTIZERS, *COMPRESSORS])
def test_no_key_of_any_kind_is_dropped_in_any_context(kind):
    """For every key and every context that can make it moot: the spec is refused naming the
    key, or restates what it would be anyway, or the compressor's decode or rate differs
    from the one without the key."""
    dropped = []
    base = _base(kind)
    for ctx in CONTEXTS:
        try:
            without = check_spec({**base, **ctx})
        except SpecError:
            continue  # the context itself is not one of this kind's
        reference = None
        for key in SAMPLE:
            if key in ctx:
                continue
            try:
                given = check_spec({**base, **ctx, key: SAMPLE[key]})
            except SpecError as err:
                assert key in str(err), f"{kind} {ctx}: refusing {key} does not name it: {err}"
                continue
            if given == without:
                continue  # the key restates what the spec is anyway
            reference = reference or _behaviour(without)
            if _behaviour(given) == reference:
                dropped.append(f"{key}={SAMPLE[key]!r} in context {ctx or 'of the kind'}")
    assert not dropped, f"{kind}: accepted but without effect: {dropped}"
