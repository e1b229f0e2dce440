"""Paper Y's federated learning with compressed uplink updates.

``K`` users each hold a contiguous block of the training set
(:func:`split_users`). Every round ``r = 1 .. R``:

1. each user starts from the global state ``w_c``, trains ``E`` local epochs
   with Adam (:class:`LocalTrainer`), and forms the update
   ``delta_u = w_u - w_c`` over every floating-point entry of the state dict
   (trainable parameters *and* BatchNorm running statistics, so that the
   server model stays consistent); integer buffers (``num_batches_tracked``)
   are not sent and stay as in the global model;
2. the user's compressor (one per user, since error-feedback memory is per
   user) compresses ``delta_u`` and is charged its uplink bits;
3. the server decompresses and aggregates
   ``w <- w_c + sum_u (n_u / n) delta_hat_u`` with ``n_u`` the number of
   training images of user ``u`` and ``n = sum_u n_u``;
4. the global model is evaluated on the test set.

Local training is a pure function of (global state, user data, round seed),
mapped over users by an :class:`Executor` (sequential by default), so that
users could run in separate processes later. The compressors stay in the
driving process because they carry per-user memory across rounds.

Determinism: every random stream (the users' shuffles and validation split,
minibatch order, augmentation, dropout) is seeded from ``(seed, round, user)``
through :func:`derive_seed`, so the same settings give bitwise identical
results (on one device and thread count).

Units: accuracies are fractions in [0, 1], losses mean cross-entropy in nats,
rates bits, times wall-clock seconds.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from gradcomp.augment import random_affine
from gradcomp.compression.rates import RATE_FIELDS, RateBreakdown
from gradcomp.data import Cifar10
from gradcomp.models import build_model
from gradcomp.training import evaluate, minibatches, resolve_device, to_float_batch

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: Columns of :attr:`FederatedResult.uplink` (one row per user and round).
UPLINK_COLUMNS = ("round", "user", "n_train", *RATE_FIELDS, "bits_coded", "bits_fixed")
#: Columns of :attr:`FederatedResult.rounds` (one row per round, round 0 first).
ROUND_COLUMNS = (
    "round", "test_acc", "test_loss", "val_acc", "train_loss", "bits_coded", "bits_fixed",
    "cumulative_bits_coded", "cumulative_bits_fixed", "seconds",
)  # fmt: skip

# Stream tags keep the seeds of different purposes apart.
_STREAM_SPLIT = 0
_STREAM_LOCAL = 1

T = TypeVar("T")
R = TypeVar("R")


# --------------------------------------------------------------------------
# interfaces


class Compressor(Protocol):
    """One user's uplink compressor; may keep state (error feedback) across rounds."""

    def compress(self, update: dict[str, torch.Tensor]) -> tuple[Any, Any]:
        """Update (name -> tensor) -> (payload, ctx)."""
        ...

    def decompress(self, payload: Any, ctx: Any) -> dict[str, torch.Tensor]:
        """The server's reconstruction of the update, with the same names and shapes."""
        ...

    def rate(self, payload: Any, ctx: Any) -> RateBreakdown:
        """Uplink bits of ``payload`` by part."""
        ...


class Executor(Protocol):
    """Maps a function over items, e.g. users over processes; results in item order."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]: ...


class SequentialExecutor:
    """Runs the items one after another in the calling process."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        return [fn(item) for item in items]


# --------------------------------------------------------------------------
# settings, seeds, users


@dataclass(frozen=True)
class FederatedSettings:
    """Everything that decides a federated run's numbers.

    ``lr``: Adam's learning rate; ``batch_size``: local minibatch size;
    ``local_epochs``: passes over the user's training images per round;
    ``validation_fraction``: share of each user's block held out for local
    validation; ``validate_users``: evaluate every local model on its user's
    validation images after local training (``val_acc``); ``augment``:
    :func:`gradcomp.augment.random_affine` on local batches.
    """

    model: str
    seed: int
    n_users: int = 2
    rounds: int = 10
    local_epochs: int = 3
    batch_size: int = 32
    lr: float = 1e-4
    validation_fraction: float = 0.25
    augment: bool = False
    threads: int = 1
    device: str = "cpu"
    eval_batch_size: int = 1000
    validate_users: bool = True


def derive_seed(*parts: int) -> int:
    """A 63-bit seed mixed from non-negative integers, e.g. (seed, stream, round, user)."""
    state = np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)
    return int(state[0] >> np.uint64(1))


@dataclass(frozen=True)
class UserData:
    """One user's share: int64 indices into the training set.

    ``train_idx`` (n_u,) trains, ``val_idx`` (m_u,) is held out for local
    validation; both are in the user's shuffled order.
    """

    user: int
    train_idx: torch.Tensor
    val_idx: torch.Tensor

    @property
    def n_train(self) -> int:
        """Number of training images ``n_u`` (the user's aggregation weight)."""
        return len(self.train_idx)


def split_users(
    n_train: int, n_users: int, *, validation_fraction: float = 0.25, seed: int
) -> list[UserData]:
    """Split ``n_train`` training images among ``n_users`` users, as paper Y does.

    User ``u`` holds the contiguous block ``[u n / K, (u + 1) n / K)`` (floor
    division; IID because the cached data are in a class-mixed order),
    shuffles it with a generator seeded from ``(seed, u)`` and holds out
    ``validation_fraction * block`` images (rounded half up) for validation, the first
    ones of the shuffled block; the rest train. With 50,000 images and 2
    users: 18,750 train and 6,250 validation images each.
    """
    if n_users < 1:
        raise ValueError(f"n_users must be at least 1, got {n_users}")
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    users = []
    for u in range(n_users):
        lo, hi = u * n_train // n_users, (u + 1) * n_train // n_users
        n_val = math.floor(validation_fraction * (hi - lo) + 0.5)
        if hi - lo - n_val < 1:
            raise ValueError(
                f"user {u} gets {hi - lo} images and {n_val} of them for validation: "
                "no training images left; use fewer users or more data"
            )
        gen = torch.Generator().manual_seed(derive_seed(seed, _STREAM_SPLIT, u))
        block = lo + torch.randperm(hi - lo, generator=gen)
        users.append(UserData(u, train_idx=block[n_val:], val_idx=block[:n_val]))
    return users


# --------------------------------------------------------------------------
# local training


@dataclass(frozen=True)
class LocalTask:
    """Input of one user's local training: ``global_state`` is on the CPU."""

    user: UserData
    round: int
    seed: int
    global_state: dict[str, torch.Tensor]


@dataclass(frozen=True)
class LocalOutcome:
    """Output of one user's local training.

    ``state``: the local model's full state dict on the CPU, standard layout;
    ``train_loss``: mean cross-entropy over the last local epoch;
    ``val_acc``: accuracy on the user's validation images (NaN if not run).
    """

    user: int
    n_train: int
    state: dict[str, torch.Tensor]
    train_loss: float
    val_acc: float


@dataclass(frozen=True)
class LocalTrainer:
    """Local training as a pure function of a :class:`LocalTask`.

    Every call starts a fresh model from ``task.global_state`` and a fresh
    Adam state. A fresh optimizer per round (rather than moments kept by
    each user across rounds) keeps the user stateless, so a call depends on
    nothing but its task and can run in any process; the moments of the
    previous round were taken at other weights anyway. The global RNG is
    seeded from ``task.seed`` for dropout inside ``torch.random.fork_rng``,
    so the caller's RNG state is left untouched.
    """

    data: Cifar10
    model: str
    local_epochs: int
    batch_size: int
    lr: float
    augment: bool = False
    validate: bool = True
    eval_batch_size: int = 1000
    device: str = "cpu"

    @classmethod
    def from_settings(cls, data: Cifar10, settings: FederatedSettings) -> LocalTrainer:
        return cls(
            data=data,
            model=settings.model,
            local_epochs=settings.local_epochs,
            batch_size=settings.batch_size,
            lr=settings.lr,
            augment=settings.augment,
            validate=settings.validate_users,
            eval_batch_size=settings.eval_batch_size,
            device=settings.device,
        )

    def __call__(self, task: LocalTask) -> LocalOutcome:
        device = resolve_device(self.device)
        if device.type == "cuda":
            index = device.index if device.index is not None else torch.cuda.current_device()
            fork = torch.random.fork_rng(devices=[index], device_type="cuda")
        else:
            fork = torch.random.fork_rng(devices=[])
        with fork:
            torch.manual_seed(task.seed)
            generator = torch.Generator().manual_seed(task.seed)
            model = build_model(self.model).to(device)
            model.load_state_dict(task.global_state)
            optimizer = torch.optim.Adam(model.parameters(), lr=self.lr)
            images, labels = self.data.train_images, self.data.train_labels
            idx_all = task.user.train_idx
            train_loss = float("nan")
            for _ in range(self.local_epochs):
                model.train()
                loss_sum = torch.zeros((), dtype=torch.float64, device=device)
                for pos in minibatches(len(idx_all), self.batch_size, generator):
                    idx = idx_all[pos]
                    x = to_float_batch(images[idx], device)
                    if self.augment:
                        x = random_affine(x, generator).contiguous(
                            memory_format=torch.channels_last
                        )
                    loss = F.cross_entropy(model(x), labels[idx].to(device))
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    loss_sum += loss.detach() * len(idx)
                train_loss = loss_sum.item() / len(idx_all)
            val_acc = float("nan")
            if self.validate and len(task.user.val_idx):
                val = task.user.val_idx
                _, val_acc = evaluate(
                    model,
                    images[val],
                    labels[val],
                    batch_size=self.eval_batch_size,
                    device=device,
                )
        state = cpu_state(model)
        return LocalOutcome(task.user.user, task.user.n_train, state, train_loss, val_acc)


# --------------------------------------------------------------------------
# server side


def cpu_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s state dict on the CPU in standard (contiguous) layout."""
    return {
        k: v.detach().to("cpu").clone(memory_format=torch.contiguous_format)
        for k, v in model.state_dict().items()
    }


def model_update(
    local: Mapping[str, torch.Tensor], global_state: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``local - global`` for every floating-point state entry, in state-dict order.

    Tensors are float32 (or the entry's dtype) on the CPU in standard
    (contiguous) layout with the entry's shape; integer entries are left out.
    """
    return {
        name: (local[name] - g).contiguous()
        for name, g in global_state.items()
        if g.is_floating_point()
    }


def aggregate(
    global_state: Mapping[str, torch.Tensor],
    updates: Sequence[Mapping[str, torch.Tensor]],
    n_train: Sequence[int],
) -> dict[str, torch.Tensor]:
    """FedAvg: ``w_c + sum_u (n_u / n) delta_hat_u`` per floating-point entry.

    The weighted sum is accumulated in float64 and rounded once to the
    entry's dtype; entries absent from the updates (integer buffers) are
    copied from ``global_state``.
    """
    total = sum(n_train)
    out: dict[str, torch.Tensor] = {}
    for name, g in global_state.items():
        if name not in updates[0]:
            out[name] = g.clone()
            continue
        acc = g.to(torch.float64)
        for update, n_u in zip(updates, n_train, strict=True):
            acc = acc + (n_u / total) * update[name].to(torch.float64)
        out[name] = acc.to(g.dtype)
    return out


def _check_reconstruction(
    user: int, update: Mapping[str, torch.Tensor], recon: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    missing = [n for n in update if n not in recon]
    if missing:
        raise KeyError(f"user {user}'s decompressed update lacks {', '.join(missing[:5])}")
    out = {}
    for name, t in update.items():
        r = recon[name]
        if r.shape != t.shape:
            raise ValueError(
                f"user {user}: decompressed {name} has shape {tuple(r.shape)}, "
                f"expected {tuple(t.shape)}"
            )
        out[name] = r.detach().to("cpu")
    return out


def _rate_row(rnd: int, user: int, n_train: int, rate: RateBreakdown) -> dict[str, int]:
    row = {"round": rnd, "user": user, "n_train": n_train}
    row.update({f: int(getattr(rate, f)) for f in RATE_FIELDS})
    row["bits_coded"] = int(rate.total(True))
    row["bits_fixed"] = int(rate.total(False))
    return row


def sent_masks(compressor: Compressor, payload: Any, ctx: Any) -> dict[str, torch.Tensor] | None:
    """Name -> boolean mask of the entries ``compressor`` selected, if it can say
    (``compressor.kept_masks(payload, ctx)``); None otherwise."""
    kept = getattr(compressor, "kept_masks", None)
    return kept(payload, ctx) if kept is not None else None


def update_snapshot(
    update: Mapping[str, torch.Tensor],
    recon: Mapping[str, torch.Tensor],
    kept: Mapping[str, torch.Tensor] | None,
) -> dict[str, dict[str, torch.Tensor]]:
    """``{"before", "after", "kept"}`` of one update (float32, float32, bool; CPU, the
    entries' shapes). Without masks from the compressor, an entry counts as kept when its
    reconstruction is non-zero."""
    return {
        "before": {n: t.detach().to("cpu", torch.float32).clone() for n, t in update.items()},
        "after": {n: recon[n].detach().to("cpu", torch.float32).clone() for n in update},
        "kept": {
            n: (kept[n] if kept is not None else recon[n] != 0).detach().to("cpu").bool().clone()
            for n in update
        },
    }


# --------------------------------------------------------------------------
# main loop


@dataclass
class FederatedResult:
    """Outcome of :func:`run_federated`.

    ``rounds``: one dict per round (``ROUND_COLUMNS``), round 0 being the
    initial model; ``uplink``: one dict per user and round
    (``UPLINK_COLUMNS``); ``snapshot``: user 0's update at the last round,
    ``{"before": {name: float32}, "after": {name: float32}, "kept": {name: bool}}``
    for every floating-point state entry (the entry's shape; ``kept`` marks the
    entries the compressor selected to send); ``final_state``: the global model's
    state dict after the last round (CPU).
    """

    rounds: list[dict[str, Any]]
    uplink: list[dict[str, int]]
    snapshot: dict[str, dict[str, torch.Tensor]]
    final_state: dict[str, torch.Tensor] = field(repr=False)


def run_federated(
    data: Cifar10,
    settings: FederatedSettings,
    make_compressor: Callable[[int], Compressor],
    *,
    executor: Executor | None = None,
    log: logging.Logger = log,
) -> FederatedResult:
    """Run paper Y's federated training with compressed updates.

    ``make_compressor(u)`` is called once per user ``u`` before the first
    round; that object compresses all of the user's updates. ``executor``
    maps the local training over users (default :class:`SequentialExecutor`).
    """
    torch.set_num_threads(settings.threads)
    device = resolve_device(settings.device)
    executor = executor or SequentialExecutor()
    users = split_users(
        len(data.train_labels),
        settings.n_users,
        validation_fraction=settings.validation_fraction,
        seed=settings.seed,
    )
    n_train = [u.n_train for u in users]
    compressors = [make_compressor(u.user) for u in users]
    trainer = LocalTrainer.from_settings(data, settings)

    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG state alone
        model = build_model(settings.model, seed=settings.seed).to(device)
    # A copy: the model is reloaded with later states for evaluation.
    global_state = cpu_state(model)
    log.info(
        "federated %s (seed %d) on %s: %d users with %s training images, %d rounds of %d "
        "local epochs",
        settings.model,
        settings.seed,
        device,
        settings.n_users,
        "/".join(map(str, n_train)),
        settings.rounds,
        settings.local_epochs,
    )

    def test_eval() -> tuple[float, float]:
        model.load_state_dict(global_state)
        return evaluate(
            model,
            data.test_images,
            data.test_labels,
            batch_size=settings.eval_batch_size,
            device=device,
        )

    t0 = time.perf_counter()
    test_loss, test_acc = test_eval()
    rounds: list[dict[str, Any]] = [
        {
            "round": 0,
            "test_acc": test_acc,
            "test_loss": test_loss,
            "val_acc": float("nan"),
            "train_loss": float("nan"),
            "bits_coded": 0,
            "bits_fixed": 0,
            "cumulative_bits_coded": 0,
            "cumulative_bits_fixed": 0,
            "seconds": time.perf_counter() - t0,
        }
    ]
    log.info("round 0/%d  test acc %.4f  loss %.4f", settings.rounds, test_acc, test_loss)
    uplink: list[dict[str, int]] = []
    snapshot: dict[str, dict[str, torch.Tensor]] = {"before": {}, "after": {}, "kept": {}}
    cum_coded = cum_fixed = 0

    for rnd in range(1, settings.rounds + 1):
        t0 = time.perf_counter()
        tasks = [
            LocalTask(u, rnd, derive_seed(settings.seed, _STREAM_LOCAL, rnd, u.user), global_state)
            for u in users
        ]
        outcomes = executor.map(trainer, tasks)
        recons = []
        bits_coded = bits_fixed = 0
        for user, outcome, compressor in zip(users, outcomes, compressors, strict=True):
            update = model_update(outcome.state, global_state)
            payload, ctx = compressor.compress(update)
            recon = _check_reconstruction(user.user, update, compressor.decompress(payload, ctx))
            row = _rate_row(rnd, user.user, user.n_train, compressor.rate(payload, ctx))
            uplink.append(row)
            bits_coded += row["bits_coded"]
            bits_fixed += row["bits_fixed"]
            recons.append(recon)
            if rnd == settings.rounds and user.user == 0:
                snapshot = update_snapshot(update, recon, sent_masks(compressor, payload, ctx))
        global_state = aggregate(global_state, recons, n_train)
        test_loss, test_acc = test_eval()
        cum_coded += bits_coded
        cum_fixed += bits_fixed
        val_accs = [o.val_acc for o in outcomes]
        row = {
            "round": rnd,
            "test_acc": test_acc,
            "test_loss": test_loss,
            "val_acc": float(np.mean(val_accs)),
            "train_loss": float(np.mean([o.train_loss for o in outcomes])),
            "bits_coded": bits_coded,
            "bits_fixed": bits_fixed,
            "cumulative_bits_coded": cum_coded,
            "cumulative_bits_fixed": cum_fixed,
            "seconds": time.perf_counter() - t0,
        }
        rounds.append(row)
        log.info(
            "round %d/%d  test acc %.4f  loss %.4f  val acc %.4f  uplink %.4g bits coded "
            "(%.4g fixed) so far  %.1f s",
            rnd,
            settings.rounds,
            test_acc,
            test_loss,
            row["val_acc"],
            cum_coded,
            cum_fixed,
            row["seconds"],
        )
    return FederatedResult(rounds, uplink, snapshot, global_state)
