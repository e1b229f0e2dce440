"""The one-round paired study (figure Y6, table T4): every compressor on the same updates.

Full federated runs (:func:`gradcomp.lossy.federated.run_federated`) let each compressor
drive its own trajectory, so after a few rounds two compressors train different models and
their accuracy difference carries the noise of two trajectories. Here a single reference
trajectory is trained (its updates sent through the ``reference`` compressor, top-K float32
by default) and, at every round, every compressor compresses the *same* user updates; the
server aggregates each compressor's reconstruction, and the resulting models are evaluated
on the same test images. Per round and compressor the study records

- ``bits_coded`` / ``bits_fixed`` / ``bits_accounted``: uplink bits of all users in that round
  (8 x the bytes the server decoded; the fixed-width and the entropy-coded accounting,
  :mod:`gradcomp.lossy.uplink`), and ``bits_source``, where ``bits_coded`` comes from
  (``bytes``, or ``ideal`` / ``self-reported``: not bytes, not comparable with codes at
  matched bits);
- ``test_acc`` / ``test_loss`` of the aggregate, and of the round's start model
  (``start_acc`` / ``start_loss``) and of the uncompressed aggregate (``exact_acc`` /
  ``exact_loss``: the plain average of the users' updates).

plus ``entries``, the number of update entries all users send (so ``bits_coded / entries``
is the measured bits per entry).

Differences between compressors are then paired by (trajectory, round): the same starting
model, the same local updates, the same test images, so the only difference is the
compressor. A trajectory is a (warm start, seed): :func:`one_round_stage` runs the seeds
nested in one warm start, each with its own draw of test images, and the intervals are over
the warm starts (:mod:`gradcomp.statistics.nested`, :mod:`gradcomp.statistics.paired`).

One round means one round: every compressor starts every round from its initial state (a
fresh object per user and round, seeded from seed, round and user), so error-feedback memory
and PowerSGD's warm start never carry what the reference trajectory's updates left in them
into a model that never held that error back. Error feedback is judged in full runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import pandas as pd

from gradcomp.compression.protocol import Compressor
from gradcomp.data import Cifar10
from gradcomp.lossy.federated import SUMMED_BITS, FederatedSettings, Federation
from gradcomp.lossy.uplink import aggregate, model_update, send
from gradcomp.wire.users import compressor_factory

log = logging.getLogger(__name__)

__all__ = [
    "ONE_ROUND_COLUMNS", "RoundCompressors", "one_round_stage", "one_round_study",
    "trajectory_seed",
]  # fmt: skip

ONE_ROUND_COLUMNS = (
    "model", "warm_start", "seed", "round", "compressor", "rate", "M", "bits_coded",
    "bits_fixed", "test_acc", "test_loss", "start_acc", "start_loss", "exact_acc", "exact_loss",
    "entries", "bits_accounted", "bits_source",
)  # fmt: skip
#: A compressor variant's identity in the rows: (compressor name, rate, M).
VariantKey = tuple[str, int, int]


def one_round_study(
    data: Cifar10,
    settings: FederatedSettings,
    make_compressors: Mapping[VariantKey, Callable[[int, int], Compressor]],
    *,
    reference: VariantKey,
    initial_state: dict | None = None,
    warm_start: int | None = -1,
    seed: int | None = None,
) -> pd.DataFrame:
    """Rows :data:`ONE_ROUND_COLUMNS`, one per round and compressor (see the module doc).

    ``make_compressors``: (compressor, rate, M) -> factory ``(user, round) -> compressor``,
    called anew for every user and round (the key fills the rows' ``compressor``, ``rate``
    and ``M``); a factory with ``receiver(user, round)`` (:class:`RoundCompressors`) has the
    server decode each update from its bytes; ``reference``: the key whose aggregate the
    trajectory follows;
    ``initial_state``: the warm start's weights (default: the seeded random init);
    ``warm_start`` and ``seed``: the trajectory's names in the rows (the warm start's seed, -1
    without one; the seed nested in it, default ``settings.seed``).
    """
    if reference not in make_compressors:
        raise ValueError(
            f"the reference compressor {reference!r} is not among {sorted(make_compressors)}"
        )
    fed = Federation(data, settings, initial_state=initial_state)
    state = fed.initial_state
    start_loss, start_acc = fed.evaluate(state)
    rows: list[dict[str, Any]] = []
    log.info(
        "one-round study %s (seed %d): %d compressors along the %s trajectory, %d rounds, "
        "%d test images", settings.model, settings.seed, len(make_compressors), reference,
        settings.rounds, len(fed.test_labels),
    )  # fmt: skip
    for rnd in range(1, settings.rounds + 1):
        t0 = time.perf_counter()
        outcomes = fed.train(rnd, state)
        updates = [model_update(o.state, state) for o in outcomes]
        n_train = [o.n_train for o in outcomes]
        exact_loss, exact_acc = fed.evaluate(aggregate(state, updates, n_train))
        head = {
            "model": settings.model, "warm_start": warm_start,
            "seed": settings.seed if seed is None else seed,
            "round": rnd, "start_acc": start_acc,
            "start_loss": start_loss, "exact_acc": exact_acc, "exact_loss": exact_loss,
            "entries": sum(t.numel() for u in updates for t in u.values()),
        }  # fmt: skip
        following: tuple[dict[str, Any], float, float] | None = None
        for key, make in make_compressors.items():
            row, new_state = _compressed_round(fed, state, key, make, rnd, updates, outcomes)
            rows.append({**head, **row})
            if key == reference:
                following = (new_state, row["test_loss"], row["test_acc"])
        if following is None:  # unreachable: the reference is among make_compressors (checked)
            raise AssertionError(f"no compressor {reference!r} to follow")
        state, start_loss, start_acc = following
        log.info(
            "round %d/%d: uncompressed aggregate acc %.4f, %s acc %.4f, %d compressors, %.1f s",
            rnd, settings.rounds, exact_acc, reference, start_acc, len(make_compressors),
            time.perf_counter() - t0,
        )  # fmt: skip
    return pd.DataFrame(rows, columns=list(ONE_ROUND_COLUMNS))


def _compressed_round(fed: Federation, state: dict[str, Any], key: VariantKey,
                      make: Callable[[int, int], Compressor], rnd: int, updates: list,
                      outcomes: list) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Round ``rnd``'s user ``updates`` from ``state`` through the compressors of ``make``
    (a fresh one per user) and aggregated: the row's compressor, bits and test columns, and
    the aggregated state."""
    receivers = getattr(make, "receiver", None)
    sent = [
        send(
            make(o.user, rnd), u, rnd=rnd, user=o.user, n_train=o.n_train,
            receiver=receivers(o.user, rnd) if receivers is not None else None,
        )
        for u, o in zip(updates, outcomes, strict=True)
    ]  # fmt: skip
    new_state = aggregate(state, [s.recon for s in sent], [o.n_train for o in outcomes])
    loss, acc = fed.evaluate(new_state)
    row: dict[str, Any] = {
        **dict(zip(("compressor", "rate", "M"), key, strict=True)),
        **{b: sum(s.row[b] for s in sent) for b in SUMMED_BITS},
        "bits_source": "+".join(sorted({cast(str, s.row["bits_source"]) for s in sent})),
        "test_acc": acc,
        "test_loss": loss,
    }
    return row, new_state


class RoundCompressors:
    """``(user, round) -> compressor`` of a checked spec in a trajectory seeded ``seed``: a
    fresh object for that round alone (:func:`~gradcomp.wire.users.compressor_factory` with
    ``rnd``), and :meth:`receiver`, the server's decoder of its one update."""

    def __init__(self, spec, seed: int):
        self.spec, self.seed = spec, int(seed)

    def __call__(self, user: int, rnd: int) -> Compressor:
        return compressor_factory(self.spec, self.seed, rnd=rnd)(user)

    def receiver(self, user: int, rnd: int):
        return compressor_factory(self.spec, self.seed, rnd=rnd).receiver(user, 0)


def trajectory_seed(warm_start: int | None, seed: int) -> int:
    """The random seed of trajectory (warm start, seed): ``seed`` itself without a warm
    start, else one mixed from both (31 bits, so that the per-user and per-round offsets the
    compressors add stay within torch's seed range), so that seeds nested in different warm
    starts draw different data orders, splits, noise and test images."""
    from gradcomp.lossy.local_training import derive_seed

    if warm_start is None:
        return int(seed)
    return derive_seed(int(warm_start), int(seed)) % 2**31


def one_round_stage(
    data_path,
    settings: dict[str, Any],
    variants: Sequence[Mapping[str, Any]],
    *,
    reference: Sequence,
    out_tsv,
    seeds,
    warm_start=None,
    warm_start_seed: int | None = None,
    threads: int = 1,
    device: str = "cpu",
) -> pd.DataFrame:
    """The ``one_round_study`` stage: :func:`one_round_study` of every compressor variant
    (``{"compressor", "rate", "M", "spec"}``, the spec checked here unless it is a
    :class:`~gradcomp.compression.specs.CheckedSpec`) for each of ``seeds`` nested in one warm
    start, written to ``out_tsv``; ``reference``: the (compressor, rate, M) followed.

    ``settings`` are :class:`FederatedSettings` keywords other than ``seed``, ``threads``
    and ``device`` (the seed is each trajectory's, :func:`trajectory_seed`; threads and
    device say where the job runs); ``warm_start``: a
    :func:`gradcomp.lossy.warm_start.warm_start_stage` file to start from, pre-trained with
    ``warm_start_seed``.
    """
    from pathlib import Path

    from gradcomp.artifacts import write_tsv
    from gradcomp.compression.specs import CheckedSpec, check_spec
    from gradcomp.data import load_cifar10
    from gradcomp.lossy.warm_start import load_warm_start

    specs = {
        (v["compressor"], int(v["rate"]), int(v["M"])): (
            v["spec"] if isinstance(v["spec"], CheckedSpec) else check_spec(v["spec"])
        )
        for v in variants
    }

    data = load_cifar10(Path(data_path))
    initial = load_warm_start(warm_start) if warm_start else None
    tables = []
    for seed in seeds:
        full = FederatedSettings(
            **settings,
            seed=trajectory_seed(warm_start_seed if warm_start else None, seed),
            threads=int(threads),
            device=device,
        )

        tables.append(
            one_round_study(
                data,
                full,
                {key: RoundCompressors(spec, full.seed) for key, spec in specs.items()},
                reference=(reference[0], int(reference[1]), int(reference[2])),
                initial_state=initial,
                warm_start=warm_start_seed if warm_start else -1,
                seed=int(seed),
            )
        )
    table = pd.concat(tables, ignore_index=True)
    write_tsv(out_tsv, table, ONE_ROUND_COLUMNS)
    return table
