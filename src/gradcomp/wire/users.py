"""Every user's compressor of a run, from one spec and the run's seed: the sender's objects
(one per user, seeded apart) and the server's receivers of their bytes. The federated
study, the one-round study and the DDP hook all build their compressors here.

>>> users = compressor_factory({"quantizer": "uniform", "rate": 2}, seed=3)
>>> users(0).wire_spec["seed"], users(1).wire_spec["seed"]
(3000, 3001)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gradcomp.compression.build import build_compressor
from gradcomp.compression.protocol import Compressor
from gradcomp.compression.specs import CheckedSpec, check_spec, user_seed
from gradcomp.wire.records import UpdateLayout
from gradcomp.wire.update import Receiver, make_receiver

__all__ = ["UserCompressors", "compressor_factory"]


class UserCompressors:
    """``user -> compressor`` of a checked spec in a run seeded ``seed`` (called), and the
    server's :meth:`receiver` of each user's updates. User ``u``'s object is seeded
    :func:`~gradcomp.compression.specs.user_seed` ``(seed + 1000 rnd, u)`` = ``1000 seed +
    10^6 rnd + u`` (``rnd``: an object built for that round alone, as the one-round study
    does; 0 otherwise)."""

    def __init__(self, spec: CheckedSpec, seed: int, rnd: int = 0):
        self.spec, self.seed = spec, int(seed) + 1000 * int(rnd)

    def __call__(self, user: int) -> Compressor:
        return build_compressor(self.spec.with_seed(user_seed(self.seed, user)))

    def receiver(self, user: int, step: int) -> Callable[[UpdateLayout], Receiver]:
        """layout -> the receiver of update number ``step`` (0 first) of user ``user``'s
        compressor, built from what the server knows
        (:func:`~gradcomp.wire.update.make_receiver`)."""
        return lambda layout: make_receiver(
            self.spec, layout, seed=self.seed, user=int(user), rnd=int(step)
        )


def compressor_factory(spec: Mapping[str, Any], seed: int, *, rnd: int = 0) -> UserCompressors:
    """``user -> compressor`` for a compressor spec in a run seeded ``seed``
    (:class:`UserCompressors`): user ``u`` gets its own object (error-feedback memory, noise
    streams) seeded ``1000 seed + u`` (plus ``10^6 rnd`` for an object built for round
    ``rnd`` alone), the same for every compressor of the run (common random numbers).
    ``spec`` is checked here unless it is a
    :class:`~gradcomp.compression.specs.CheckedSpec` already."""
    checked = spec if isinstance(spec, CheckedSpec) else check_spec(spec)
    return UserCompressors(checked, seed, rnd)
