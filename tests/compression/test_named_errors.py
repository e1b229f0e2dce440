"""Issue 54, item 5: every error names the fact, key or input at fault, and a refused update
leaves every compressor's state as it was (refuse, then send, then decode, every kind)."""

from __future__ import annotations

import pytest
import torch

from gradcomp.compression import build_compressor
from gradcomp.compression.count_sketch import MAX_HASH_ENTRIES, CountSketch, SketchSizeError
from gradcomp.compression.inputs import NonFiniteUpdateError, OutOfRangeUpdateError
from gradcomp.compression.random_k import RandomK
from gradcomp.compression.registry import COMPRESSORS, QUANTIZERS
from gradcomp.compression.specs import MAX_SEED, SpecError, check_spec, user_seed
from gradcomp.wire import (
    AgreedValueError,
    PayloadError,
    UpdateLayout,
    encode_update,
    make_receiver,
)

UNIFORM = {"quantizer": "uniform", "rate": 2, "topk": 0.5, "min_entries": 0}


def _update(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(12, 30, generator=g), "b": torch.randn(40, generator=g)}


def test_make_receiver_with_seed_none_names_seed():
    with pytest.raises(AgreedValueError) as err:
        make_receiver(UNIFORM, UpdateLayout.of(_update()), seed=None, user=0, rnd=0)
    assert err.value.fact == "seed" and "'seed'" in str(err.value)


@pytest.mark.parametrize("fact", ["user", "rnd"])
def test_make_receiver_with_a_negative_user_or_round_names_it(fact):
    args = {"seed": 0, "user": 0, "rnd": 0, fact: -1}
    with pytest.raises(AgreedValueError) as err:
        make_receiver(UNIFORM, UpdateLayout.of(_update()), **args)
    assert err.value.fact == fact


def test_random_k_receiver_at_round_minus_one_names_rnd():
    spec = {"quantizer": "none", "sparsifier": "randomk", "min_entries": 0}
    with pytest.raises(AgreedValueError, match="'rnd'"):
        make_receiver(spec, UpdateLayout.of(_update()), seed=0, user=0, rnd=-1)
    with pytest.raises(AgreedValueError, match="'rnd'"):
        RandomK.mask_seed(0, -1)


@pytest.mark.parametrize("layout", [{"w": (12, 30)}, [("w", (12, 30), torch.float32)]])
def test_a_layout_given_as_a_dict_or_list_names_layout(layout):
    with pytest.raises(AgreedValueError) as err:
        make_receiver(UNIFORM, layout, seed=0, user=0, rnd=0)
    assert err.value.fact == "layout" and type(layout).__name__ in str(err.value)


def test_a_dtype_string_in_a_layout_names_the_entry():
    with pytest.raises(AgreedValueError, match="'w'.*'float32'"):
        UpdateLayout.from_items([("w", (3,), "float32")])


def test_a_meta_tensor_is_refused_naming_the_entry():
    update = {"w": torch.empty(12, 30, device="meta")}
    for spec in (UNIFORM, {"compressor": "powersgd", "rate": 1}):
        with pytest.raises(TypeError, match="'w' is a meta tensor"):
            build_compressor(spec).compress(update)


def test_encode_update_with_another_kinds_payload_names_the_payload():
    update = _update()
    uniform = build_compressor(UNIFORM)
    uniform.compress(update)
    kmeans = build_compressor({**UNIFORM, "quantizer": "kmeans"})
    powersgd = build_compressor({"compressor": "powersgd", "rate": 1})
    with pytest.raises(PayloadError, match="'payload'"):
        encode_update(uniform, *kmeans.compress(update))
    with pytest.raises(PayloadError, match="'payload'"):
        encode_update(uniform, *powersgd.compress(update))
    with pytest.raises(PayloadError, match="'payload'"):
        encode_update(powersgd, *uniform.compress(update))


def test_a_seed_beyond_what_the_draws_take_is_refused_at_check_spec():
    """2**70 passed check_spec, then five kinds raised 'Overflow when unpacking long long'."""
    for spec in ({"quantizer": "gaussian_channel", "rate": 2}, {"compressor": "powersgd",
                                                                  "rate": 1}):  # fmt: skip
        with pytest.raises(SpecError) as err:
            check_spec({**spec, "seed": 2**70})
        assert err.value.key == "seed"
    with pytest.raises(AgreedValueError, match="'seed'"):
        make_receiver(UNIFORM, UpdateLayout.of(_update()), seed=MAX_SEED, user=0, rnd=0)


def test_the_largest_seed_builds_every_kind_that_draws():
    big = MAX_SEED
    for spec in ({"quantizer": "gaussian_channel", "rate": 2, "min_entries": 0},
                 {"quantizer": "qsgd", "rate": 2, "min_entries": 0},
                 {"quantizer": "none", "sparsifier": "randomk", "min_entries": 0},
                 {"compressor": "powersgd", "rate": 1},
                 {"compressor": "count_sketch", "rate": 100, "min_entries": 0}):  # fmt: skip
        c = build_compressor({**spec, "seed": big})
        c.decompress(*c.compress(_update()))


def test_count_sketch_rows_are_refused_before_any_allocation():
    """rows 10**7 tried to allocate 2.4 TB in the config check before anything said no."""
    with pytest.raises(SpecError) as err:
        check_spec({"compressor": "count_sketch", "rate": 100, "rows": 10**7})
    assert err.value.key == "rows"


def test_a_sketch_too_large_for_its_tensor_is_refused_before_its_hashes():
    rows = 64
    d = MAX_HASH_ENTRIES // rows + 1
    sketch = CountSketch(100, rows=rows, min_entries=0)
    update = {"w": torch.zeros(d).expand(d)}  # no memory of its own
    with pytest.raises(SketchSizeError, match="rows"):
        sketch.compress(update)
    assert sketch.step == 0
    layout = UpdateLayout.from_items([("w", (d,), torch.float32)])
    with pytest.raises(SketchSizeError, match="rows"):
        make_receiver({"compressor": "count_sketch", "rate": 100, "rows": rows,
                       "min_entries": 0}, layout, seed=0, user=0, rnd=0)  # fmt: skip


def _spec(kind: str) -> dict:
    """A spec of every kind, with error feedback where the kind takes it (state to keep)."""
    if kind in COMPRESSORS:
        spec = {"compressor": kind, "rate": 1 if kind == "powersgd" else 100}
        return {**spec, "error_feedback": True}
    cls = QUANTIZERS[kind]
    spec = {"quantizer": kind, "min_entries": 100, "topk": 0.5, "error_feedback": True}
    if cls.fixed_rate is None:
        spec["rate"] = 2
    if cls.takes_family:
        spec["family"] = "gennorm"
    return spec


def _refused(second: dict[str, torch.Tensor], cause: str) -> dict[str, torch.Tensor]:
    """``second`` made unsendable: a NaN in the last tensor (refused on input), or a float64
    tensor beyond float32's range (refused mid-update, by the kind's own range check, as
    :class:`OutOfRangeUpdateError`, after the first tensor's state has changed)."""
    if cause == "nan":
        bad = {**second, "b": second["b"].clone()}
        bad["b"][3] = float("nan")
        return bad
    name = "b" if cause == "last_beyond_float32" else "w"
    return {**second, name: second[name].double() * 1e200}


@pytest.mark.slow
@pytest.mark.parametrize("cause", ["nan", "last_beyond_float32", "first_beyond_float32"])
@pytest.mark.parametrize("kind", [*QUANTIZERS, *COMPRESSORS])
def test_a_refused_update_leaves_the_compressor_as_it_was(kind, cause):
    """Round 0 sent, round 1 refused, round 1 sent: the receiver of round 1 decodes it, and
    it is the update of a sender that was never refused."""
    if kind == "float8" and cause == "first_beyond_float32":
        pytest.skip("float8 saturates to its grid (counted and logged) rather than refuse")
    spec = check_spec(_spec(kind)).with_seed(user_seed(7, 1))
    sender, fresh = build_compressor(spec), build_compressor(spec)
    first, second = _update(1), _update(2)
    for c in (sender, fresh):
        c.compress(first)
    refusal = NonFiniteUpdateError if cause == "nan" else OutOfRangeUpdateError
    with pytest.raises(refusal):
        sender.compress(_refused(second, cause))
    payload, ctx = sender.compress(second)
    receiver = make_receiver(spec, UpdateLayout.of(second), seed=7, user=1, rnd=1)
    got = receiver.decode(encode_update(sender, payload, ctx))
    want = fresh.decompress(*fresh.compress(second))
    for name in second:
        assert torch.equal(got[name], want[name]), name


@pytest.mark.parametrize("kind", ["kmeans", "ecsq_data"])
def test_an_update_refused_after_its_first_tensor_leaves_the_memory_as_it_was(kind):
    """A tensor beyond float32's range refused mid-update (the first tensor's memory already
    updated) restores the pipeline: the next update decodes as a never-refused sender's."""
    spec = check_spec({"quantizer": kind, "rate": 2, "min_entries": 10, "error_feedback": True})
    sender, fresh = build_compressor(spec), build_compressor(spec)
    for c in (sender, fresh):
        c.compress(_update(1))
    second = _update(2)
    with pytest.raises(OutOfRangeUpdateError, match="'b'"):
        sender.compress({**second, "b": second["b"].double() * 1e200})
    got = sender.decompress(*sender.compress(second))
    want = fresh.decompress(*fresh.compress(second))
    assert all(torch.equal(got[n], want[n]) for n in second)


def test_the_seed_bound_holds_every_seed_the_workflow_derives():
    """The workflow's 32-bit run seeds give user seeds ``1000 seed + user`` up to 4.3e12: all
    below MAX_SEED (a bound of 2^40 refused the one-round study's own seeds), and a count
    sketch's hash seed ``1_000_003 seed + index`` at MAX_SEED stays below 2^63."""
    assert user_seed(2**32 - 1, 999) <= MAX_SEED
    assert 1_000_003 * MAX_SEED + 10**6 < 2**63
