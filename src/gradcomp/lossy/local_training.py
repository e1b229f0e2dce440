"""The users' side of paper Y's federated learning: data splits and local Adam training.

Two switches reproduce the authors' semantics (FL_RD ``main.py``), which are the defaults:

- ``validation_split``: ``"per_round"`` (the authors': each round every user reshuffles its
  block and holds out a fresh 25% for validation) or ``"once"`` (split drawn once);
- ``optimizer_state``: ``"shared"`` (the authors' single compiled Keras Adam: its moments
  and step count carry over from user to user and round to round, while the weights are
  reset to the global model) or ``"fresh"`` (a new Adam for every user and round, which
  makes each local training a pure function of its task).

Adam uses Keras' defaults (beta1 0.9, beta2 0.999, epsilon 1e-7). Every random stream
(shuffles, splits, minibatch order, augmentation, dropout) is seeded from
``(seed, stream, round, user)`` through :func:`derive_seed`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import torch

from gradcomp.data import Cifar10
from gradcomp.models import build_model
from gradcomp.training import EVAL_BATCH_SIZE, evaluate, resolve_device, train_epoch

__all__ = [
    "OPTIMIZER_STATES",
    "VALIDATION_SPLITS",
    "Executor",
    "LocalOutcome",
    "LocalTask",
    "LocalTrainer",
    "SequentialExecutor",
    "UserData",
    "cpu_state",
    "derive_seed",
    "split_users",
    "train_round",
]

OPTIMIZER_STATES = ("shared", "fresh")
VALIDATION_SPLITS = ("per_round", "once")
ADAM_EPS = 1e-7  # Keras' default (torch's is 1e-8)

# Stream tags keep the seeds of different purposes apart.
STREAM_SPLIT = 0
STREAM_LOCAL = 1

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Maps a function over items, e.g. users over processes; results in item order."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]: ...


class SequentialExecutor:
    """Runs the items one after another in the calling process."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        return [fn(item) for item in items]


def derive_seed(*parts: int) -> int:
    """A 63-bit seed mixed from non-negative integers, e.g. (seed, stream, round, user)."""
    state = np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)
    return int(state[0] >> np.uint64(1))


@dataclass(frozen=True)
class UserData:
    """One user's share: int64 indices into the training set.

    ``train_idx`` (n_u,) trains, ``val_idx`` (m_u,) is held out for local validation; both
    are in the user's shuffled order.
    """

    user: int
    train_idx: torch.Tensor
    val_idx: torch.Tensor

    @property
    def n_train(self) -> int:
        """Number of training images ``n_u`` (the user's aggregation weight)."""
        return len(self.train_idx)


def split_users(
    n_train: int,
    n_users: int,
    *,
    validation_fraction: float = 0.25,
    seed: int,
    round: int | None = None,
) -> list[UserData]:
    """Split ``n_train`` training images among ``n_users`` users, as paper Y does.

    User ``u`` holds the contiguous block ``[u n / K, (u + 1) n / K)`` (floor division; IID
    because the cached data are in a class-mixed order), shuffles it with a generator seeded
    from ``(seed, round, u)`` (``round=None``: one split for the whole run) and holds out
    ``validation_fraction * block`` images (rounded half up), the first ones of the shuffled
    block; the rest train. With 50,000 images and 2 users: 18,750 train and 6,250
    validation images each.
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
        parts = (seed, STREAM_SPLIT, u) if round is None else (seed, STREAM_SPLIT, round, u)
        gen = torch.Generator().manual_seed(derive_seed(*parts))
        block = lo + torch.randperm(hi - lo, generator=gen)
        users.append(UserData(u, train_idx=block[n_val:], val_idx=block[:n_val]))
    return users


@dataclass(frozen=True)
class LocalTask:
    """Input of one user's local training: ``global_state`` is on the CPU;
    ``optimizer_state``: an Adam ``state_dict`` to continue from, or None for a fresh one."""

    user: UserData
    round: int
    seed: int
    global_state: dict[str, torch.Tensor]
    optimizer_state: dict[str, Any] | None = None


@dataclass(frozen=True)
class LocalOutcome:
    """Output of one user's local training.

    ``state``: the local model's full state dict on the CPU, standard layout;
    ``optimizer_state``: Adam's ``state_dict`` after training;
    ``train_loss``: mean cross-entropy over the last local epoch;
    ``val_acc``: accuracy on the user's validation images (NaN if not run).
    """

    user: int
    n_train: int
    state: dict[str, torch.Tensor]
    optimizer_state: dict[str, Any]
    train_loss: float
    val_acc: float


def cpu_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s state dict on the CPU in standard (contiguous) layout."""
    return {
        k: v.detach().to("cpu").clone(memory_format=torch.contiguous_format)
        for k, v in model.state_dict().items()
    }


@dataclass(frozen=True)
class LocalTrainer:
    """Local training as a function of a :class:`LocalTask` alone.

    Every call starts a model from ``task.global_state`` and Adam from
    ``task.optimizer_state`` (fresh when None). The global RNG is seeded from ``task.seed``
    for dropout inside ``torch.random.fork_rng``, so the caller's RNG state is untouched.
    """

    data: Cifar10
    model: str
    local_epochs: int
    batch_size: int
    lr: float
    augment: bool = False
    validate: bool = True
    eval_batch_size: int = EVAL_BATCH_SIZE
    device: str = "cpu"
    model_class: str | None = None

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
            model = build_model(self.model, model_class=self.model_class).to(device)
            model.load_state_dict(task.global_state)
            optimizer = torch.optim.Adam(model.parameters(), lr=self.lr, eps=ADAM_EPS)
            if task.optimizer_state is not None:
                # a copy: Adam updates its state tensors in place, the task stays as given
                optimizer.load_state_dict(copy.deepcopy(task.optimizer_state))
            images, labels = self.data.train_images, self.data.train_labels
            train_loss = float("nan")
            for _ in range(self.local_epochs):
                train_loss = train_epoch(
                    model,
                    optimizer,
                    images,
                    labels,
                    indices=task.user.train_idx,
                    batch_size=self.batch_size,
                    generator=generator,
                    device=device,
                    augment=self.augment,
                ).mean_loss
                if not math.isfinite(train_loss):
                    raise FloatingPointError(
                        f"{self.model}: user {task.user.user}'s local loss is {train_loss} "
                        f"in round {task.round}"
                    )
            val_acc = float("nan")
            if self.validate and len(task.user.val_idx):
                val = task.user.val_idx
                _, val_acc = evaluate(
                    model, images[val], labels[val], batch_size=self.eval_batch_size, device=device
                )
        return LocalOutcome(
            task.user.user,
            task.user.n_train,
            cpu_state(model),
            optimizer.state_dict(),
            train_loss,
            val_acc,
        )


def train_round(
    trainer: LocalTrainer,
    users: Sequence[UserData],
    rnd: int,
    seed: int,
    global_state: dict[str, torch.Tensor],
    optimizer_state: dict[str, Any] | None,
    *,
    shared_optimizer: bool,
    executor: Executor | None = None,
) -> tuple[list[LocalOutcome], dict[str, Any] | None]:
    """Every user's local training of round ``rnd``; returns the outcomes (user order) and
    the optimizer state to carry into the next round (None unless ``shared_optimizer``).

    Shared: the users train one after another, each continuing the previous one's Adam
    state (``optimizer_state`` enters with user 0). Fresh: independent tasks mapped by
    ``executor`` (default :class:`SequentialExecutor`).
    """

    def task(user: UserData, state: dict[str, Any] | None) -> LocalTask:
        return LocalTask(
            user, rnd, derive_seed(seed, STREAM_LOCAL, rnd, user.user), global_state, state
        )

    if not shared_optimizer:
        executor = executor or SequentialExecutor()
        return executor.map(trainer, [task(u, None) for u in users]), None
    outcomes = []
    for user in users:
        outcome = trainer(task(user, optimizer_state))
        optimizer_state = outcome.optimizer_state
        outcomes.append(outcome)
    return outcomes, optimizer_state
