"""One round means one round (issue 15 item 5): in the one-round study an error-feedback
compressor starts every round from a fresh state, so its row is its first-round behaviour."""

from __future__ import annotations

import pytest
import torch

from conftest import make_tiny_cifar
from gradcomp.lossy.federated import FederatedSettings
from gradcomp.lossy.one_round import one_round_study
from gradcomp.wire.users import compressor_factory

EF = {"quantizer": "scaled_sign", "sparsifier": "none", "error_feedback": True}
PLAIN = {**EF, "error_feedback": False}
SEED, USERS = 3, 2
# the mlp's floating entries: fc1 32 x 3072 + 32, fc2 10 x 32 + 10
MLP_ENTRIES = 32 * 3072 + 32 + 10 * 32 + 10


class Recording:
    """Wraps a compressor and keeps a copy of every update it is given."""

    def __init__(self, inner, log: list) -> None:
        self.inner, self.log = inner, log

    def compress(self, update):
        self.log.append({k: v.clone() for k, v in update.items()})
        return self.inner.compress(update)

    def decompress(self, payload, ctx):
        return self.inner.decompress(payload, ctx)

    def rate(self, payload, ctx):
        return self.inner.rate(payload, ctx)


def per_round(spec):
    """The factory the workflow's one_round_stage gives the study."""
    return lambda user, rnd: compressor_factory(spec, SEED, rnd=rnd)(user)


@pytest.fixture(scope="module")
def study():
    torch.set_num_threads(1)

    updates: dict[tuple[int, int], list] = {}

    def recording(user, rnd):
        return Recording(per_round(PLAIN)(user, rnd), updates.setdefault((rnd, user), []))

    settings = FederatedSettings(
        model="mlp", seed=SEED, n_users=USERS, rounds=2, local_epochs=1, batch_size=16,
        lr=1e-3, eval_batch_size=64,
    )  # fmt: skip
    table = one_round_study(
        make_tiny_cifar(),
        settings,
        {
            ("none", 32, 0): per_round({"quantizer": "none", "sparsifier": "none"}),
            ("ef", 1, 0): per_round(EF),
            ("plain", 1, 0): recording,
        },  # fmt: skip
        reference=("none", 32, 0),
    )
    return table, updates


def test_an_ef_row_is_the_compressor_without_memory_on_that_round(study):
    """A fresh EF compressor's first compress adds zero memory, so in every round its row
    equals that of the same scaled sign without error feedback, and the updates reach it as
    they are. As a check that this is not vacuous, an EF compressor that carried its memory
    from round 1 would send something else in round 2. Planted bug: the study keeping one
    compressor per user across rounds (the old design: round 2 sends C(u_2 + e_1))."""
    table, updates = study
    by = {c: g.set_index("round") for c, g in table.groupby("compressor")}
    cols = ["test_loss", "test_acc", "bits_coded", "bits_fixed"]
    assert by["ef"].loc[[1, 2], cols].equals(by["plain"].loc[[1, 2], cols])
    assert len(table) == 6
    for user in range(USERS):
        (u1,), (u2,) = updates[(1, user)], updates[(2, user)]
        carried = compressor_factory(EF, SEED)(user)
        carried.decompress(*carried.compress(u1))
        fresh = compressor_factory(EF, SEED, rnd=2)(user)
        once = fresh.decompress(*fresh.compress(u2))
        twice = carried.decompress(*carried.compress(u2))
        assert any(not torch.equal(once[k], twice[k]) for k in u2)
        # a fresh EF compressor on round 2's update = scaled sign of that update, by hand:
        # sign (sign(0) = +1) times the mean magnitude, per tensor of >= 1000 entries
        w = u2["fc1.weight"].double()
        by_hand = torch.where(w >= 0, 1.0, -1.0).double() * w.abs().mean().float().double()
        assert torch.allclose(once["fc1.weight"].double(), by_hand, rtol=1e-6, atol=0)


def test_entries_counts_every_floating_entry_of_every_user(study):
    """Planted bug: entries of one user only, or of the trainable tensors of one layer."""
    table, updates = study
    assert (table["entries"] == USERS * MLP_ENTRIES).all()
    assert sum(t.numel() for t in updates[(1, 0)][0].values()) == MLP_ENTRIES
