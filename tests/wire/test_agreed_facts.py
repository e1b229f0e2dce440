"""Agreed facts bound into the bytes: every built-in compressor x every fact a receiver must
share with the sender and does not read from the bytes (the spec: its rate, M and the kind's
options; the layout; the seed, the user and the update's index) x one wrong value, decoded in
a separate Python process that never saw the sender. Each wrong fact raises
AgreedFactError naming it ("spec", "layout" or "seed/user/round"); the right facts decode bit
for bit to the sender's reconstruction. Planted bugs that fail it: the spec check left out
of the header (a wrong rate or M then decodes, or fails as a "Kraft inequality" or a
"truncated?" record); the update index left out of the facts (a wrong round decodes)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest
import torch

from gradcomp.compression.specs import check_spec, user_seed
from gradcomp.wire import UpdateLayout, encode_update
from gradcomp.wire.users import compressor_factory

SEED, USER, RND = 3, 1, 2
#: spec -> a wrong value of each of its own keys the receiver must share (rate and M where
#: the kind takes them, an option where it has one)
SPECS = [
    ({"quantizer": "none", "topk": 0.3}, {"topk": 0.4}),
    ({"quantizer": "float16", "topk": 0.3}, {"topk": 0.31}),
    ({"quantizer": "float8", "topk": 0.3}, {"float8_format": "e4m3"}),
    ({"quantizer": "uniform", "rate": 2, "topk": 0.3}, {"rate": 3}),
    ({"quantizer": "uniform", "rate": 2, "levels": 3, "topk": 0.3}, {"levels": 4}),
    ({"quantizer": "lloyd", "family": "gennorm", "rate": 2, "M": 2, "topk": 0.3}, {"M": 0}),
    ({"quantizer": "lloyd", "family": "gennorm", "rate": 2, "slip": True}, {"rate": 3}),
    ({"quantizer": "kmeans", "rate": 2, "M": 2, "topk": 0.3}, {"M": 1}),
    ({"quantizer": "qsgd", "rate": 4, "sparsifier": "none"}, {"rate": 5}),
    ({"quantizer": "terngrad", "sparsifier": "none"}, {"sparsifier": "topk", "topk": 0.5}),
    ({"quantizer": "scaled_sign", "sparsifier": "none"}, {"min_entries": 10}),
    ({"quantizer": "tcq", "family": "gennorm", "rate": 1, "topk": 0.3}, {"states": 4}),
    ({"quantizer": "none", "sparsifier": "randomk", "topk": 0.2}, {"topk": 0.25}),
    ({"compressor": "powersgd", "rate": 2}, {"rate": 1}),
    ({"compressor": "count_sketch", "rate": 100}, {"rows": 3}),
]


def update(n: int = 4) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return {
        "conv.weight": torch.randn(16, 8, 3, 3, generator=gen) * 0.01,
        "fc.weight": torch.randn(40, 32, generator=gen) * 0.01,
        "fc.bias": torch.randn(40, generator=gen) * 0.01,
    }


DECODER = textwrap.dedent(
    """
    import pickle, sys, torch
    from gradcomp.wire import UpdateLayout, make_receiver
    from gradcomp.wire.records import AgreedFactError
    out = []
    for spec, items, seed, user, rnd, data, want in pickle.load(sys.stdin.buffer):
        layout = UpdateLayout.from_items(items)
        try:
            got = make_receiver(spec, layout, seed=seed, user=user, rnd=rnd).decode(data)
        except AgreedFactError as err:
            out.append(("refused", err.fact))
            continue
        except Exception as err:
            out.append(("other", type(err).__name__ + ": " + str(err)))
            continue
        same = want is not None and all(
            torch.equal(got[n].view(torch.int32), want[n].view(torch.int32)) for n in want)
        out.append(("decoded", same))
    pickle.dump(out, sys.stdout.buffer)
    """
)


def cells():
    """(label, spec, layout items, seed, user, rnd, data, the sender's reconstruction or None,
    the expected outcome)."""
    out = []
    u = update()
    for spec, wrong in SPECS:
        checked = check_spec(spec if "compressor" in spec else {**spec, "min_entries": 100})
        make = compressor_factory(checked, SEED)  # the study's users: seed 1000 SEED + user
        sender = make(USER)
        for _ in range(RND + 1):  # the update with index RND
            payload, ctx = sender.compress(u)
        data = encode_update(sender, payload, ctx)
        recon = sender.decompress(payload, ctx)
        items = [(n, t.shape, t.dtype) for n, t in u.items()]
        name = spec.get("quantizer") or spec["compressor"]
        base = (checked.plain(), items, SEED, USER, RND)
        out.append((f"{name} right", *base, data, recon, ("decoded", True)))
        other = check_spec({**checked.plain(), **wrong, "seed": checked["seed"]}).plain()
        out.append((f"{name} {sorted(wrong)}", other, *base[1:], data, None, ("refused", "spec")))
        bad_items = [("conv.weight", (16, 8, 3, 3), torch.float32),
                     ("fc.weight", (32, 40), torch.float32), items[2]]  # fmt: skip
        out.append((f"{name} layout", base[0], bad_items, SEED, USER, RND, data, None,
                    ("refused", "layout")))  # fmt: skip
        for fact, (seed, user, rnd) in {
            "seed": (SEED + 1, USER, RND), "user": (SEED, USER + 1, RND),
            "round": (SEED, USER, RND - 1),
        }.items():  # fmt: skip
            out.append((f"{name} {fact}", base[0], items, seed, user, rnd, data, None,
                        ("refused", "seed/user/round")))  # fmt: skip
    return out


@pytest.mark.slow
def test_every_wrong_agreed_fact_is_refused_by_name_in_another_process():
    table = cells()
    assert len(table) == 6 * len(SPECS)
    sent = [c[1:-1] for c in table]
    run = subprocess.run([sys.executable, "-c", DECODER], input=pickle.dumps(sent),
                         capture_output=True, check=True, timeout=600)  # fmt: skip
    results = pickle.loads(run.stdout)
    wrong = [(c[0], r, c[-1]) for c, r in zip(table, results, strict=True) if r != c[-1]]
    assert not wrong, wrong


def test_the_check_values_are_charged_in_the_bytes():
    """The header holds the two 32-bit checks (16 bytes: 12 with format 2's 16-bit checks,
    8 before them), every update's."""
    from gradcomp.wire import HEADER_BYTES

    spec = check_spec({"quantizer": "uniform", "rate": 2, "topk": 0.3, "min_entries": 10**9})
    c = compressor_factory(spec, SEED)(USER)
    payload, ctx = c.compress(update())
    data = encode_update(c, payload, ctx)
    assert HEADER_BYTES == 16
    # every tensor raw: the header, then per record 8 bytes of framing + its body
    assert data[:2] == b"GW" and data[2] == 3
    layout = UpdateLayout.of(update())
    assert int.from_bytes(data[4:8], "little") == layout.fingerprint()


@pytest.mark.parametrize("spec", [{"quantizer": "uniform", "rate": 2}])
def test_a_compressor_built_without_its_spec_says_how_to_build_it(spec):
    from gradcomp.compression.update_compression import PipelineCompressor

    c = compressor_factory(check_spec(spec), SEED)(USER)
    bare = PipelineCompressor(c.quantize, topk=c.topk)
    payload, ctx = bare.compress(update())
    with pytest.raises(TypeError, match="build_compressor"):
        encode_update(bare, payload, ctx)
    assert user_seed(SEED, USER) == 1000 * SEED + USER


@pytest.mark.slow
def test_issue54_no_two_users_and_rounds_share_a_facts_check():
    """Issue 54: with 16-bit checks 528 of 100 users x 100 rounds shared a check with
    another; 32-bit checks: none among 100 users x 1000 rounds, for several run seeds."""
    from gradcomp.wire.records import Agreed

    spec = {"quantizer": "uniform", "rate": 2}
    for seed in (0, 3, 5):
        checks = {
            Agreed.of({**spec, "seed": user_seed(seed, u)}, rnd).facts
            for u in range(100)
            for rnd in range(1000)
        }
        assert len(checks) == 100 * 1000, seed


def test_issue54_the_searched_collision_is_refused():
    """Issue 54: a lloyd ``slip`` receiver at user 76, round 957 (run seed 3) decoded user 1,
    round 0's bytes silently (their 16-bit checks were equal); now refused by name."""
    from gradcomp.wire import make_receiver
    from gradcomp.wire.records import AgreedFactError

    spec = {"quantizer": "lloyd", "family": "gennorm", "rate": 2, "slip": True,
            "min_entries": 100}  # fmt: skip
    sender = compressor_factory(check_spec(spec), 3)(1)
    payload, ctx = sender.compress(update())
    data = encode_update(sender, payload, ctx)
    layout = UpdateLayout.of(update())
    make_receiver(spec, layout, seed=3, user=1, rnd=0).decode(data)  # the right facts decode
    with pytest.raises(AgreedFactError, match="seed, user or update index"):
        make_receiver(spec, layout, seed=3, user=76, rnd=957).decode(data)
