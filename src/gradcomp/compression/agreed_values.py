"""The facts that sender and receiver agree on outside the bytes (the run seed, the user, the
update's index, the update's layout): :class:`AgreedValueError`, the error of one given a value
it cannot take, and :func:`check_agreed_int`. Below the kinds, so that random-K's positions
(:meth:`~gradcomp.compression.random_k.RandomK.mask_seed`) and the wire's receivers
(:func:`gradcomp.wire.update.make_receiver`) check them alike.
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["AgreedValueError", "check_agreed_int"]


class AgreedValueError(TypeError, ValueError):
    """A fact that sender and receiver agree on outside the bytes was given a value it
    cannot take: ``fact`` names the argument (``"seed"``, ``"user"``, ``"rnd"``,
    ``"layout"``)."""

    def __init__(self, fact: str, message: str):
        self.fact = fact
        super().__init__(f"agreed fact {fact!r}: {message}")


def check_agreed_int(fact: str, value: Any) -> int:
    """``value`` as an int when it is an integer >= 0, else :class:`AgreedValueError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise AgreedValueError(fact, f"must be an integer >= 0, got {value!r}")
    return int(value)
