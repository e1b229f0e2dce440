from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from gradcomp import models
from gradcomp.compression import RateBreakdown
from gradcomp.compression.rates import RATE_FIELDS
from gradcomp.data import Cifar10
from gradcomp.lossy.federated import (
    ROUND_COLUMNS,
    UPLINK_COLUMNS,
    FederatedSettings,
    Federation,
    run_federated,
)
from gradcomp.lossy.local_training import SequentialExecutor, split_users
from gradcomp.lossy.per_bit import per_bit_accuracy
from gradcomp.lossy.run_files import RUN_IDENTITY, read_snapshot, save_snapshot, write_rounds
from gradcomp.lossy.uplink import aggregate

torch.set_num_threads(1)


@pytest.fixture
def data() -> Cifar10:
    """200 train / 50 test images whose mean colour depends on the label."""
    gen = torch.Generator().manual_seed(0)

    def split(n: int):
        labels = torch.arange(n) % 10
        base = (labels.float() * 25).view(-1, 1, 1, 1)
        noise = torch.randint(0, 40, (n, 3, 32, 32), generator=gen).float()
        return (base + noise).clamp(0, 255).to(torch.uint8), labels

    return Cifar10(*split(200), *split(50), "synthetic")


class TinyBN(nn.Module):
    """A few-parameter model with BatchNorm (float and integer buffers) and dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 4, stride=4)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.fc(self.drop(x))


@pytest.fixture
def tinybn(monkeypatch) -> str:
    monkeypatch.setitem(models.MODELS, "tinybn", TinyBN)
    return "tinybn"


class IdentityCompressor:
    """Sends the update unchanged; made-up but user- and round-dependent bit counts."""

    def __init__(self, user: int) -> None:
        self.user = user
        self.calls = 0
        self.received: list[dict[str, torch.Tensor]] = []

    def compress(self, update):
        self.calls += 1
        self.received.append({k: v.clone() for k, v in update.items()})
        return {k: v.clone() for k, v in update.items()}, self.calls

    def decompress(self, payload, ctx):
        return {k: v.clone() for k, v in payload.items()}

    def rate(self, payload, ctx):
        n = sum(v.numel() for v in payload.values())
        return RateBreakdown(
            payload_fixed_bits=4 * n,
            payload_huffman_bits=3 * n,
            position_bits=n,
            side_bits=100 * (self.user + 1) + ctx,
            raw_bits=32 * len(payload),
            n_entries=n,
            n_sent=n,
        )


class RecordingExecutor(SequentialExecutor):
    def __init__(self) -> None:
        self.calls: list[tuple[list, list]] = []

    def map(self, fn, items):
        items = list(items)
        out = super().map(fn, items)
        self.calls.append((items, out))
        return out


def settings(model: str = "mlp", **kw) -> FederatedSettings:
    base = dict(
        model=model, seed=3, n_users=2, rounds=2, local_epochs=2, batch_size=16, lr=1e-3,
        eval_batch_size=64,
    )  # fmt: skip
    return FederatedSettings(**{**base, **kw})


def test_split_users_contiguous_disjoint_exact() -> None:
    users = split_users(50_000, 2, seed=0)
    assert [(u.n_train, len(u.val_idx)) for u in users] == [(18_750, 6_250)] * 2
    users = split_users(200, 3, validation_fraction=0.25, seed=1)
    blocks = [(0, 66), (66, 133), (133, 200)]
    seen = []
    for u, (lo, hi) in zip(users, blocks, strict=True):
        both = torch.cat([u.train_idx, u.val_idx])
        assert torch.equal(torch.sort(both).values, torch.arange(lo, hi))
        assert len(u.val_idx) == math.floor(0.25 * (hi - lo) + 0.5)
        assert u.train_idx.dtype == torch.int64
        seen.append(both)
    assert len(torch.unique(torch.cat(seen))) == 200
    again = split_users(200, 3, validation_fraction=0.25, seed=1)
    other = split_users(200, 3, validation_fraction=0.25, seed=2)
    assert all(torch.equal(a.val_idx, b.val_idx) for a, b in zip(users, again, strict=True))
    assert not torch.equal(users[0].val_idx, other[0].val_idx)
    with pytest.raises(ValueError, match="no training images"):
        split_users(3, 3, validation_fraction=0.5, seed=0)


def test_aggregate_weights_users_by_their_images() -> None:
    """w_c + sum_u n_u/n delta_u with unequal n_u (1/K weighting would give 2.5, not 1.75)."""
    g = {"w": torch.tensor([1.0, -2.0]), "steps": torch.tensor([7])}
    deltas = [{"w": torch.tensor([1.0, 0.0])}, {"w": torch.tensor([0.0, 4.0])}]
    out = aggregate(g, deltas, [3, 1])
    assert torch.equal(out["w"], torch.tensor([1.0 + 0.75, -2.0 + 1.0]))
    assert torch.equal(out["steps"], g["steps"])  # integer buffers are kept from w_c


@pytest.mark.slow
def test_identity_aggregation_is_fedavg_of_local_states(data, tinybn) -> None:
    executor = RecordingExecutor()
    comps: list[IdentityCompressor] = []

    def make(u):
        comps.append(IdentityCompressor(u))
        return comps[-1]

    s = settings(tinybn, rounds=2, optimizer_state="fresh")  # fresh: users go to the executor
    result = run_federated(data, s, make, executor=executor)
    assert len(executor.calls) == 2
    globals_seen = [tasks[0].global_state for tasks, _ in executor.calls] + [result.final_state]
    for r, (_, outcomes) in enumerate(executor.calls):
        w_c, w_next = globals_seen[r], globals_seen[r + 1]
        n = [o.n_train for o in outcomes]
        assert n == [75, 75]
        for name, g in w_c.items():
            if not g.is_floating_point():  # num_batches_tracked: from the global model
                assert torch.equal(w_next[name], g)
                assert name not in comps[0].received[r]
                continue
            expected = g.double() + sum(
                (nu / sum(n)) * (o.state[name].double() - g.double())
                for nu, o in zip(n, outcomes, strict=True)
            )
            torch.testing.assert_close(w_next[name].double(), expected, rtol=0, atol=1e-6)
            # The compressor saw the raw update of every float entry, BN statistics too.
            sent = comps[1].received[r][name]
            torch.testing.assert_close(sent, outcomes[1].state[name] - g, rtol=0, atol=0)
        assert "bn.running_mean" in comps[0].received[r]
        assert not torch.equal(w_next["bn.running_var"], w_c["bn.running_var"])
    assert [row["round"] for row in result.rounds] == [0, 1, 2]
    assert all(0.0 <= row["val_acc"] <= 1.0 for row in result.rounds[1:])


@pytest.mark.slow
def test_uplink_bits_per_user_and_round(data, tmp_path: Path) -> None:
    s = settings(rounds=3, local_epochs=1, validate_users=False)
    result = run_federated(data, s, IdentityCompressor)
    n = sum(p.numel() for p in models.build_model("mlp").parameters())
    assert [(r["round"], r["user"]) for r in result.uplink] == [
        (t, u) for t in (1, 2, 3) for u in (0, 1)
    ]
    for row in result.uplink:
        assert set(row) == set(UPLINK_COLUMNS)
        assert row["n_entries"] == n and row["raw_bits"] == 32 * 4
        assert row["side_bits"] == 100 * (row["user"] + 1) + row["round"]
        rest = n + row["side_bits"] + 32 * 4
        assert row["bits_coded"] == 3 * n + rest and row["bits_fixed"] == 4 * n + rest
    cum = {"coded": 0, "fixed": 0}
    assert result.rounds[0]["cumulative_bits_coded"] == 0
    for row in result.rounds[1:]:
        for kind in cum:
            this = sum(u[f"bits_{kind}"] for u in result.uplink if u["round"] == row["round"])
            cum[kind] += this
            assert row[f"bits_{kind}"] == this
            assert row[f"cumulative_bits_{kind}"] == cum[kind]
        assert math.isnan(row["val_acc"])
    ident = {"model": "m", "compressor": "c", "rate": 3, "M": 2, "warm_start": -1, "seed": 7}
    write_rounds(result, ident, tmp_path / "rounds.tsv", tmp_path / "uplink.tsv")
    lines = (tmp_path / "uplink.tsv").read_text().splitlines()
    assert lines[0].split("\t") == [*RUN_IDENTITY, *UPLINK_COLUMNS] and len(lines) == 7
    assert set(RATE_FIELDS) <= set(UPLINK_COLUMNS)
    lines = (tmp_path / "rounds.tsv").read_text().splitlines()
    assert lines[0].split("\t") == [*RUN_IDENTITY, *ROUND_COLUMNS] and len(lines) == 5
    # every row carries the run's identity (planted bug: only the header names it)
    rows = pd.read_csv(tmp_path / "rounds.tsv", sep="\t")
    assert rows[list(RUN_IDENTITY)].drop_duplicates().to_dict("records") == [ident]


def test_per_bit_accuracy_formula() -> None:
    rows = [
        {"round": 2, "test_acc": 0.40, "cumulative_bits_coded": 300, "cumulative_bits_fixed": 400},
        {"round": 0, "test_acc": 0.10, "cumulative_bits_coded": 0, "cumulative_bits_fixed": 0},
        {"round": 1, "test_acc": 0.30, "cumulative_bits_coded": 100, "cumulative_bits_fixed": 200},
    ]
    df = per_bit_accuracy(rows)
    assert df["round"].tolist() == [0, 1, 2]
    assert math.isnan(df["per_bit_acc_coded"][0]) and math.isnan(df["per_bit_acc_fixed"][0])
    assert df["per_bit_acc_coded"][1:].tolist() == pytest.approx([0.2 / 100, 0.3 / 300])
    assert df["per_bit_acc_fixed"][1:].tolist() == pytest.approx([0.2 / 200, 0.3 / 400])
    with pytest.raises(ValueError, match="round-0"):
        per_bit_accuracy(rows[:1])


@pytest.mark.slow
def test_same_seed_same_results(data, tinybn) -> None:
    s = settings(tinybn, augment=True)
    rng_before = torch.get_rng_state()
    a = run_federated(data, s, IdentityCompressor)
    assert torch.equal(torch.get_rng_state(), rng_before)
    b = run_federated(data, s, IdentityCompressor)

    def strip(rows):  # NaN != NaN: compare the repr of each value
        return [{k: repr(v) for k, v in r.items() if k != "seconds"} for r in rows]

    assert strip(a.rounds) == strip(b.rounds)
    assert a.uplink == b.uplink
    assert a.final_state.keys() == b.final_state.keys()
    assert all(torch.equal(a.final_state[k], b.final_state[k]) for k in a.final_state)
    c = run_federated(data, settings(tinybn, augment=True, seed=4), IdentityCompressor)
    assert not torch.equal(a.final_state["fc.weight"], c.final_state["fc.weight"])


def test_snapshot_holds_user0_last_update(data, tmp_path: Path) -> None:
    comps: list[IdentityCompressor] = []

    def make(u):
        comps.append(IdentityCompressor(u))
        return comps[-1]

    result = run_federated(data, settings(local_epochs=1), make)
    snap = result.snapshot
    last_update = comps[0].received[-1]
    assert list(snap) == ["before", "after", "kept"]
    assert list(snap["before"]) == list(last_update)  # every floating-point entry
    for name, sent in last_update.items():
        assert torch.equal(snap["before"][name], sent.float())
        assert torch.equal(snap["after"][name], sent.float())  # identity compressor
        # no mask from the compressor: kept = non-zero reconstruction
        assert torch.equal(snap["kept"][name], sent != 0)
    path = tmp_path / "h" / "update.safetensors"
    save_snapshot(snap, path)
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind
    back = read_snapshot(path)
    for part in ("before", "after", "kept"):
        assert list(back[part]) == list(snap[part])
        assert all(torch.equal(back[part][n], snap[part][n]) for n in snap[part])


def test_dense_float32_compressor_is_exact_and_charges_32_bits_per_entry(data) -> None:
    """The library's dense float32 sender changes nothing (same final state as sending the
    update itself) and costs 32 bits per floating-point state entry per user and round."""
    from gradcomp.compression import build_compressor

    s = settings(rounds=2, local_epochs=1)
    exact = run_federated(data, s, IdentityCompressor)
    dense = run_federated(data, s, lambda u: build_compressor({"quantizer": "none"}))
    assert all(torch.equal(dense.final_state[k], exact.final_state[k]) for k in exact.final_state)
    n_float = sum(t.numel() for t in exact.final_state.values() if t.is_floating_point())
    assert [row["bits_fixed"] for row in dense.uplink] == [32 * n_float] * 4
    assert [row["position_bits"] for row in dense.uplink] == [0] * 4


def test_validation_split_per_round_or_once(data) -> None:
    per_round = Federation(data, settings())
    once = Federation(data, settings(validation_split="once"))
    r1, r2 = per_round.users(1), per_round.users(2)
    assert not torch.equal(r1[0].val_idx, r2[0].val_idx)  # reshuffled and re-split
    for a, b in zip(r1, r2, strict=True):  # ... within the same block
        assert torch.equal(
            torch.sort(torch.cat([a.train_idx, a.val_idx])).values,
            torch.sort(torch.cat([b.train_idx, b.val_idx])).values,
        )
    assert all(
        torch.equal(a.val_idx, b.val_idx) for a, b in zip(once.users(1), once.users(2), strict=True)
    )


@pytest.mark.parametrize("mode", ["shared", "fresh"])
def test_adam_state_shared_across_users_and_rounds_or_fresh(data, mode) -> None:
    """Shared (the authors' one compiled Adam): the step count runs on over users and
    rounds and user 1 starts from user 0's moments; fresh: every user starts at step 0."""
    s = settings(optimizer_state=mode, local_epochs=2, batch_size=16)
    fed = Federation(data, s)
    steps = 2 * math.ceil(fed.users(1)[0].n_train / 16)  # minibatches per user and round
    seen = []
    trainer = fed.trainer

    def recording(task):
        seen.append(task.optimizer_state)
        return trainer(task)

    object.__setattr__(fed, "trainer", recording)
    state = fed.initial_state
    for rnd in (1, 2):
        outcomes = fed.train(rnd, state)
        state = outcomes[0].state
    final_steps = [
        [float(v["step"]) for v in o.optimizer_state["state"].values()] for o in outcomes
    ]
    if mode == "fresh":
        assert seen == [None] * 4
        assert all(step == steps for user in final_steps for step in user)
    else:
        assert seen[0] is None and all(x is not None for x in seen[1:])
        assert all(step == 4 * steps for step in final_steps[1])  # 2 rounds x 2 users
        first = seen[1]["state"]  # what user 1 of round 1 started from: user 0's moments
        assert all(float(first[k]["step"]) == steps for k in first)


class DropCompressor(IdentityCompressor):
    """Sends nothing useful: the server reconstructs a zero update (costs 1 bit per entry)."""

    def decompress(self, payload, ctx):
        return {k: torch.zeros_like(v) for k, v in payload.items()}


def test_one_round_study_pairs_compressors_on_the_same_updates(data, tinybn) -> None:
    from gradcomp.lossy.one_round import ONE_ROUND_COLUMNS, one_round_study

    s = settings(tinybn, rounds=3, local_epochs=1)

    def fresh(cls):  # a new object per user and round, as the study asks
        return lambda user, rnd: cls(user)

    table = one_round_study(
        data,
        s,
        {
            ("exact", 32, 0): fresh(IdentityCompressor),
            ("twin", 32, 0): fresh(IdentityCompressor),
            ("drop", 0, 0): fresh(DropCompressor),
        },  # fmt: skip
        reference=("exact", 32, 0),
    )
    assert list(table.columns) == list(ONE_ROUND_COLUMNS) and len(table) == 9
    # each row names its variant by columns (planted bug: the key's rate in the M column)
    assert set(map(tuple, table[["compressor", "rate", "M"]].drop_duplicates().values)) == {
        ("exact", 32, 0), ("twin", 32, 0), ("drop", 0, 0)
    }  # fmt: skip
    by = {c: g.set_index("round") for c, g in table.groupby("compressor")}
    # sending the update itself reproduces the uncompressed aggregate, twice identically
    for c in ("exact", "twin"):
        assert (by[c]["test_loss"] == by[c]["exact_loss"]).all()
    # a zero update leaves the round's start model: its accuracy is the start accuracy
    assert (by["drop"]["test_acc"] == by["drop"]["start_acc"]).all()
    # the trajectory follows the reference: round r+1 starts where its aggregate ended
    assert by["exact"]["start_acc"].iloc[1:].tolist() == by["exact"]["test_acc"].iloc[:-1].tolist()
    # the same as a federated run with the reference compressor
    run = run_federated(data, s, IdentityCompressor)
    assert by["exact"]["test_acc"].tolist() == [r["test_acc"] for r in run.rounds[1:]]
    # the made-up side bits count the object's calls: a fresh object per round bills every
    # round like the run's first (the run's own objects count up)
    assert by["exact"]["bits_coded"].tolist() == [run.rounds[1]["bits_coded"]] * 3
    assert run.rounds[2]["bits_coded"] != run.rounds[1]["bits_coded"]
    with pytest.raises(ValueError, match="reference"):
        one_round_study(
            data, s, {("exact", 32, 0): fresh(IdentityCompressor)}, reference=("none", 32, 0)
        )


class TinyBN1d(nn.Module):
    """Dense - BatchNorm1d - dense: one value per channel and image, like the cnn's head."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3 * 32 * 32, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.bn(self.fc1(torch.flatten(x, 1)))))


def test_minibatches_merge_a_last_single_image_into_the_batch_before():
    """Planted bug / old behaviour: ``perm.split(batch)`` left a last batch of one image."""
    from gradcomp.training import minibatches

    for n, sizes in [(33, [33]), (65, [32, 33]), (64, [32, 32]), (70, [32, 32, 6]), (1, [1])]:
        batches = list(minibatches(n, 32, torch.Generator().manual_seed(0)))
        assert [len(b) for b in batches] == sizes
        assert sorted(torch.cat(batches).tolist()) == list(range(n))  # every image once


def test_local_training_survives_a_last_batch_of_one_image(data, monkeypatch) -> None:
    """33 training images at batch 32 with a BatchNorm1d layer (the issue: 600 images, 2 users,
    25% validation give 225 = 7 x 32 + 1 per user).

    Planted bug / old behaviour: ValueError "Expected more than 1 value per channel when
    training" at the last batch."""
    from gradcomp.lossy.local_training import LocalTask, LocalTrainer, UserData

    monkeypatch.setitem(models.MODELS, "tinybn1d", TinyBN1d)
    trainer = LocalTrainer(data, "tinybn1d", local_epochs=2, batch_size=32, lr=1e-3)
    user = UserData(0, train_idx=torch.arange(33), val_idx=torch.arange(33, 40))
    state = models.build_model("tinybn1d", seed=0).state_dict()
    out = trainer(LocalTask(user, 1, 7, {k: v.clone() for k, v in state.items()}))
    assert math.isfinite(out.train_loss)
    steps = {float(v["step"]) for v in out.optimizer_state["state"].values()}
    assert steps == {2.0}  # one merged batch per epoch


class Recording:
    """Wraps a library compressor and keeps a copy of every update it is given."""

    def __init__(self, inner) -> None:
        self.inner, self.received = inner, []

    def compress(self, update):
        self.received.append({k: v.clone() for k, v in update.items()})
        return self.inner.compress(update)

    def decompress(self, payload, ctx):
        return self.inner.decompress(payload, ctx)

    def rate(self, payload, ctx):
        return self.inner.rate(payload, ctx)

    def kept_masks(self, payload, ctx):
        return self.inner.kept_masks(payload, ctx)


def test_kept_table_counts_the_global_top_k_per_tensor(data, tmp_path: Path) -> None:
    """kept.tsv holds, per round, user and update tensor, how many entries the global top-K
    sent: counts from a brute-force top-K over each recorded update (a stable sort of all
    |delta| of the update, the ceil(0.3 N) largest kept, zeros not sent), fractions =
    counts / entries.

    Planted bugs that fail it: one user's masks written under the other's rows, the
    fraction divided by the whole update's size instead of the tensor's, zeros counted as
    kept, the table's rows out of round order.
    """
    from gradcomp.compression import build_compressor
    from gradcomp.lossy.federated import KEPT_COLUMNS

    comps: list[Recording] = []

    def make(u):
        comps.append(Recording(build_compressor({"quantizer": "uniform", "rate": 2, "topk": 0.3})))
        return comps[-1]

    result = run_federated(data, settings(rounds=2, local_epochs=1, validate_users=False), make)
    rows = {(r["round"], r["user"], r["tensor"]): r for r in result.kept}
    names = list(comps[0].received[0])
    assert [(r["round"], r["user"], r["tensor"]) for r in result.kept] == [
        (t, u, n) for t in (1, 2) for u in (0, 1) for n in names
    ]
    for user, comp in enumerate(comps):
        for rnd, update in enumerate(comp.received, start=1):
            flat = np.concatenate([t.reshape(-1).abs().double().numpy() for t in update.values()])
            k = math.ceil(0.3 * flat.size)
            chosen = np.zeros(flat.size, dtype=bool)  # ties: earlier position first (stable)
            chosen[np.argsort(-flat, kind="stable")[:k]] = True
            start = 0
            for name, t in update.items():
                part = chosen[start : start + t.numel()] & (t.reshape(-1).numpy() != 0)
                start += t.numel()
                expect = int(part.sum())
                row = rows[(rnd, user, name)]
                assert (row["entries"], row["kept"]) == (t.numel(), expect), (rnd, user, name)
                assert row["fraction"] == pytest.approx(expect / t.numel(), rel=1e-12)
            assert sum(rows[(rnd, user, n)]["kept"] for n in update) == k
    ident = {"model": "m", "compressor": "c", "rate": 3, "M": 0, "warm_start": 1, "seed": 0}
    write_rounds(result, ident, tmp_path / "r.tsv", tmp_path / "u.tsv", tmp_path / "kept.tsv")
    lines = (tmp_path / "kept.tsv").read_text().splitlines()
    assert lines[0].split("\t") == [*RUN_IDENTITY, *KEPT_COLUMNS]
    assert list(KEPT_COLUMNS) == ["round", "user", "tensor", "entries", "kept", "fraction"]
    columns = [*RUN_IDENTITY, *KEPT_COLUMNS]
    back = [dict(zip(columns, line.split("\t"), strict=True)) for line in lines[1:]]
    assert [float(b["fraction"]) for b in back] == [r["fraction"] for r in result.kept]
