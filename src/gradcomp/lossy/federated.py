"""Paper Y's federated learning with compressed uplink updates.

``K`` users each hold a contiguous block of the training set. Every round ``r = 1 .. R``:

1. each user starts from the global state ``w_c``, trains ``E`` local epochs with Adam
   (:mod:`gradcomp.lossy.local_training`) and forms ``delta_u = w_u - w_c``;
2. the user's compressor (one per user, since error-feedback memory is per user)
   compresses ``delta_u`` to bytes and is charged their bits (:mod:`gradcomp.lossy.uplink`);
3. the server decodes each user's bytes (a receiver built from the spec, the layout, the
   seeds and the round, when ``make_compressor`` has a ``receiver``, as
   :func:`~gradcomp.wire.users.compressor_factory`'s does) and aggregates
   ``w <- w_c + sum_u (n_u / n) delta_hat_u``;
4. the global model is evaluated on the test set.

:class:`Federation` holds what every round needs (users, local training with the shared or
fresh optimizer state, evaluation); :func:`run_federated` drives it with one compressor per
user, and :mod:`gradcomp.lossy.one_round` drives it along a reference trajectory; the
``federated`` rule runs it through :func:`gradcomp.lossy.federated_stage.federated_stage`.

Determinism: every random stream is seeded from ``(seed, round, user)``, so the same
settings give bitwise identical results (on one device and thread count); compressors of
the same seed share init, data order, splits and noise streams (common random numbers).

Units: accuracies are fractions in [0, 1], losses mean cross-entropy in nats, rates bits,
times wall-clock seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch

from gradcomp.data import Cifar10, test_draw
from gradcomp.lossy.local_training import (
    OPTIMIZER_STATES,
    VALIDATION_SPLITS,
    Executor,
    LocalOutcome,
    LocalTrainer,
    UserData,
    cpu_state,
    split_users,
    train_round,
)
from gradcomp.lossy.uplink import (
    KEPT_COLUMNS,
    UPLINK_COLUMNS,
    Compressor,
    aggregate,
    kept_masks,
    kept_rows,
    model_update,
    send,
    update_snapshot,
)
from gradcomp.models import build_model
from gradcomp.training import EVAL_BATCH_SIZE, evaluate, resolve_device

log = logging.getLogger(__name__)

__all__ = [
    "KEPT_COLUMNS",
    "ROUND_COLUMNS",
    "UPLINK_COLUMNS",
    "Federation",
    "FederatedResult",
    "FederatedSettings",
    "run_federated",
]

#: Columns of :attr:`FederatedResult.rounds` (one row per round, round 0 first).
ROUND_COLUMNS = (
    "round", "test_acc", "test_loss", "val_acc", "train_loss", "bits_coded", "bits_fixed",
    "cumulative_bits_coded", "cumulative_bits_fixed", "seconds", "bits_accounted",
    "cumulative_bits_accounted", "bits_source",
)  # fmt: skip
#: The bit counts a round row sums over its users (:data:`UPLINK_COLUMNS`).
SUMMED_BITS = ("bits_coded", "bits_fixed", "bits_accounted")


@dataclass(frozen=True)
class FederatedSettings:
    """Everything that decides a federated run's numbers.

    ``lr``: Adam's learning rate; ``batch_size``: local minibatch size; ``local_epochs``:
    passes over the user's training images per round; ``validation_fraction``: share of
    each user's block held out for local validation; ``validation_split`` and
    ``optimizer_state``: see :mod:`gradcomp.lossy.local_training`; ``validate_users``:
    evaluate every local model on its user's validation images (``val_acc``);
    ``augment``: :func:`gradcomp.augment.random_affine` on local batches;
    ``test_images``: evaluate on a random draw of that many test images, drawn from the seed
    (None: every test image), so that the test images vary with the seed like everything else
    a rerun would vary. ``threads`` and ``device`` say where the run executes.
    """

    model: str
    seed: int
    n_users: int = 2
    rounds: int = 10
    local_epochs: int = 3
    batch_size: int = 32
    lr: float = 1e-4
    validation_fraction: float = 0.25
    validation_split: str = "per_round"
    optimizer_state: str = "shared"
    augment: bool = False
    threads: int = 1
    device: str = "cpu"
    eval_batch_size: int = EVAL_BATCH_SIZE
    validate_users: bool = True
    test_images: int | None = None
    #: a user's model class, ``package.module:Class`` (config ``user_models``; None: built-in)
    model_class: str | None = None

    def __post_init__(self) -> None:
        if self.test_images is not None and self.test_images < 1:
            raise ValueError(f"test_images must be None or at least 1, got {self.test_images}")
        if self.optimizer_state not in OPTIMIZER_STATES:
            raise ValueError(f"optimizer_state must be one of {OPTIMIZER_STATES}")
        if self.validation_split not in VALIDATION_SPLITS:
            raise ValueError(f"validation_split must be one of {VALIDATION_SPLITS}")


class Federation:
    """Users, local training and evaluation of one federated study (one seed).

    :meth:`train` runs round ``rnd``'s local training from a global state and keeps the
    shared optimizer state between calls (call it once per round, in order);
    :meth:`evaluate` gives the test loss and accuracy of a state.
    """

    def __init__(
        self,
        data: Cifar10,
        settings: FederatedSettings,
        executor: Executor | None = None,
        *,
        initial_state: dict[str, torch.Tensor] | None = None,
    ):
        torch.set_num_threads(settings.threads)
        self.data, self.settings, self.executor = data, settings, executor
        self.device = resolve_device(settings.device)
        self.trainer = LocalTrainer(
            data=data,
            model=settings.model,
            model_class=settings.model_class,
            local_epochs=settings.local_epochs,
            batch_size=settings.batch_size,
            lr=settings.lr,
            augment=settings.augment,
            validate=settings.validate_users,
            eval_batch_size=settings.eval_batch_size,
            device=settings.device,
        )
        self._optimizer_state: dict[str, Any] | None = None
        with torch.random.fork_rng(devices=[]):  # leave the caller's RNG state alone
            self._model = build_model(
                settings.model, seed=settings.seed, model_class=settings.model_class
            ).to(self.device)
        if initial_state is not None:  # a warm start (gradcomp.lossy.warm_start)
            self._model.load_state_dict(initial_state)
        self.initial_state = cpu_state(self._model)
        self.test_images, self.test_labels = test_draw(data, settings.test_images, settings.seed)

    def users(self, rnd: int) -> list[UserData]:
        """The users' train / validation split of round ``rnd`` (the same every round with
        ``validation_split = "once"``)."""
        s = self.settings
        return split_users(
            len(self.data.train_labels),
            s.n_users,
            validation_fraction=s.validation_fraction,
            seed=s.seed,
            round=rnd if s.validation_split == "per_round" else None,
        )

    def train(self, rnd: int, global_state: dict[str, torch.Tensor]) -> list[LocalOutcome]:
        """Every user's local training of round ``rnd`` from ``global_state``."""
        outcomes, self._optimizer_state = train_round(
            self.trainer,
            self.users(rnd),
            rnd,
            self.settings.seed,
            global_state,
            self._optimizer_state,
            shared_optimizer=self.settings.optimizer_state == "shared",
            executor=self.executor,
        )
        return outcomes

    def evaluate(self, state: dict[str, torch.Tensor]) -> tuple[float, float]:
        """(mean test cross-entropy, test accuracy) of the model with ``state``."""
        self._model.load_state_dict(state)
        return evaluate(
            self._model,
            self.test_images,
            self.test_labels,
            batch_size=self.settings.eval_batch_size,
            device=self.device,
        )


@dataclass
class FederatedResult:
    """Outcome of :func:`run_federated`.

    ``rounds``: one dict per round (``ROUND_COLUMNS``), round 0 being the initial model;
    ``uplink``: one dict per user and round (``UPLINK_COLUMNS``); ``snapshot``: user 0's
    update at the last round, ``{"before": {name: float32}, "after": {name: float32},
    "kept": {name: bool}}`` for every floating-point state entry (``kept`` marks the
    entries the compressor selected); ``final_state``: the global state after the last
    round (CPU); ``kept``: one dict per round, user and update tensor (``KEPT_COLUMNS``),
    the share of the tensor's entries that were sent.
    """

    rounds: list[dict[str, Any]]
    uplink: list[dict[str, int | str]]
    snapshot: dict[str, dict[str, torch.Tensor]]
    final_state: dict[str, torch.Tensor] = field(repr=False)
    kept: list[dict[str, Any]] = field(default_factory=list, repr=False)


def run_federated(
    data: Cifar10,
    settings: FederatedSettings,
    make_compressor: Callable[[int], Compressor],
    *,
    executor: Executor | None = None,
    initial_state: dict[str, torch.Tensor] | None = None,
    log: logging.Logger = log,
) -> FederatedResult:
    """Run paper Y's federated training with compressed updates.

    ``make_compressor(u)`` is called once per user ``u`` before the first round; that
    object compresses all of the user's updates. With a ``make_compressor.receiver(u,
    step)`` (:class:`~gradcomp.wire.users.UserCompressors`) the server decodes round r's
    update from its bytes (step r - 1); without, the bits are the compressor's own.
    ``executor`` maps the local training over users when the optimizer state is fresh
    (default: sequential); ``initial_state``: the warm start's weights (default: the model's
    seeded random init).
    """
    fed = Federation(data, settings, executor, initial_state=initial_state)
    compressors = [make_compressor(u) for u in range(settings.n_users)]
    receivers = getattr(make_compressor, "receiver", None)
    global_state = fed.initial_state
    log.info(
        "federated %s (seed %d) on %s: %d users, %d rounds of %d local epochs, "
        "%s optimizer state, validation split %s, %d test images",
        settings.model, settings.seed, fed.device, settings.n_users, settings.rounds,
        settings.local_epochs, settings.optimizer_state, settings.validation_split,
        len(fed.test_labels),
    )  # fmt: skip
    t0 = time.perf_counter()
    test_loss, test_acc = fed.evaluate(global_state)
    rounds: list[dict[str, Any]] = [
        {
            "round": 0, "test_acc": test_acc, "test_loss": test_loss, "val_acc": float("nan"),
            "train_loss": float("nan"), **dict.fromkeys(SUMMED_BITS, 0),
            **{f"cumulative_{b}": 0 for b in SUMMED_BITS}, "bits_source": "",
            "seconds": time.perf_counter() - t0,
        }
    ]  # fmt: skip
    log.info("round 0/%d  test acc %.4f  loss %.4f", settings.rounds, test_acc, test_loss)
    uplink: list[dict[str, int | str]] = []
    kept: list[dict[str, Any]] = []
    snapshot: dict[str, dict[str, torch.Tensor]] = {"before": {}, "after": {}, "kept": {}}
    cumulative = dict.fromkeys(SUMMED_BITS, 0)
    for rnd in range(1, settings.rounds + 1):
        t0 = time.perf_counter()
        outcomes = fed.train(rnd, global_state)
        sent = _send_round(rnd, outcomes, compressors, receivers, global_state, uplink, kept,
                           snapshot_user=0 if rnd == settings.rounds else None)  # fmt: skip
        if sent.snapshot is not None:
            snapshot = sent.snapshot
        global_state = aggregate(global_state, sent.recons, [o.n_train for o in outcomes])
        test_loss, test_acc = fed.evaluate(global_state)
        for b in SUMMED_BITS:
            cumulative[b] += sent.bits[b]
        row = {
            "round": rnd,
            "test_acc": test_acc,
            "test_loss": test_loss,
            "val_acc": float(np.mean([o.val_acc for o in outcomes])),
            "train_loss": float(np.mean([o.train_loss for o in outcomes])),
            **sent.bits,
            **{f"cumulative_{b}": cumulative[b] for b in SUMMED_BITS},
            "bits_source": "+".join(sorted(sent.sources)),
            "seconds": time.perf_counter() - t0,
        }
        rounds.append(row)
        log.info(
            "round %d/%d  test acc %.4f  loss %.4f  val acc %.4f  uplink %.4g bits coded "
            "(%.4g fixed) so far  %.1f s", rnd, settings.rounds, test_acc, test_loss,
            row["val_acc"], cumulative["bits_coded"], cumulative["bits_fixed"], row["seconds"],
        )  # fmt: skip
    return FederatedResult(rounds, uplink, snapshot, global_state, kept=kept)


@dataclass
class _RoundSent:
    """A round's updates as the server got them: each user's reconstruction, the bits
    summed over users (:data:`SUMMED_BITS`), where they came from, and the snapshot user's
    update (:func:`~gradcomp.lossy.uplink.update_snapshot`; None when not asked)."""

    recons: list[dict[str, torch.Tensor]]
    bits: dict[str, int]
    sources: set[str]
    snapshot: dict[str, dict[str, torch.Tensor]] | None


def _send_round(
    rnd: int,
    outcomes: list[LocalOutcome],
    compressors: list[Compressor],
    receivers: Callable[[int, int], Any] | None,
    global_state: dict[str, torch.Tensor],
    uplink: list[dict[str, int | str]],
    kept: list[dict[str, Any]],
    *,
    snapshot_user: int | None,
) -> _RoundSent:
    """Every user's update of round ``rnd`` through its compressor (and the server's
    receiver, when ``receivers``); its uplink and kept rows appended to ``uplink``, ``kept``."""
    out = _RoundSent([], dict.fromkeys(SUMMED_BITS, 0), set(), None)
    for outcome, compressor in zip(outcomes, compressors, strict=True):
        update = model_update(outcome.state, global_state)
        receiver = receivers(outcome.user, rnd - 1) if receivers is not None else None
        sent = send(
            compressor, update, rnd=rnd, user=outcome.user, n_train=outcome.n_train,
            receiver=receiver,
        )  # fmt: skip
        uplink.append(sent.row)
        kept += kept_rows(rnd, outcome.user, kept_masks(sent.recon, sent.kept))
        for b in SUMMED_BITS:
            out.bits[b] += cast(int, sent.row[b])
        out.sources.add(cast(str, sent.row["bits_source"]))  # the row's one str column
        out.recons.append(sent.recon)
        if outcome.user == snapshot_user:
            out.snapshot = update_snapshot(update, sent.recon, sent.kept)
    return out
