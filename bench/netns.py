"""A rate-limited loopback for measuring distributed training on a slow link, on one machine.

:func:`limited_command` wraps a command so that it runs in a network namespace of its own
(``unshare -n``) whose loopback is up, with Ethernet's frame size, and carries a token-bucket
filter::

    ip link set lo mtu 1500 up
    tc qdisc add dev lo root tbf rate <R>mbit burst <B> latency <L>ms

Processes of the command talk over 127.0.0.1 (set ``GLOO_SOCKET_IFNAME=lo``, and a
``MASTER_ADDR`` of 127.0.0.1, for torch.distributed), and every byte between them, both
directions, passes the one filter at ``R`` Mbit/s. The filter adds no propagation delay
(no netem): ``latency`` only caps how long a packet may queue (tbf's limit), and ``burst`` is
what may pass at once after an idle spell (:func:`default_burst`: 4 ms at the rate, at least
two frames), so a transfer is at most 4 ms faster than on a serial link of that rate. (With
the loopback's own 64 KiB frames the burst would have to hold a frame, 128 KiB at least,
which at 10 Mbit/s lets 100 ms of traffic through at once after every idle spell: the
compressed payloads of a training step would pass free.) Measured here, one 0.5 s transfer:
9.3 Mbit/s at 10, 94 at 100, 830 at 1000 (CPU-bound on a loaded 2-core machine). The
namespace and its
filter belong to the command's processes and vanish when the last of them exits: nothing is
left on the host (no named namespace, no qdisc on the host's ``lo``).

It needs root (or an unprivileged user namespace, not tried here), ``unshare`` (util-linux)
and ``ip`` / ``tc`` (iproute2): :func:`link_limit_available` says whether they are there and
work, and why not; callers then run unlimited and say so.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Sequence

__all__ = [
    "MIN_BURST",
    "MTU",
    "default_burst",
    "limited_command",
    "link_limit_available",
    "netns_inode",
]

#: The loopback's frame size in the namespace, bytes (Ethernet's).
MTU = 1500
#: Least tbf burst, bytes: two frames with their 14-byte Ethernet headers.
MIN_BURST = 2 * (MTU + 14)
#: Time at the rate that the burst holds, seconds.
BURST_S = 0.004
#: Longest a packet may wait in the filter's queue, ms (tbf ``latency``).
LATENCY_MS = 50


def default_burst(rate_mbit: float) -> int:
    """Bytes the filter may pass at once: :data:`BURST_S` at ``rate_mbit``, at least
    :data:`MIN_BURST`."""
    return max(MIN_BURST, math.ceil(rate_mbit * 1e6 / 8 * BURST_S))


def link_limit_available() -> tuple[bool, str]:
    """(True, "") when this process can make a rate-limited namespace, else (False, why)."""
    if os.name != "posix" or os.geteuid() != 0:
        return False, "not root: unshare -n and tc need root"
    missing = [t for t in ("unshare", "ip", "tc") if shutil.which(t) is None]
    if missing:
        return False, f"{', '.join(missing)} not found (util-linux, iproute2)"
    probe = limited_command(["true"], rate_mbit=100)
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"a limited namespace failed to start: {err}"
    if done.returncode != 0:
        return False, f"a limited namespace failed: {done.stderr.strip()[:300]}"
    return True, ""


def limited_command(
    command: Sequence[str],
    *,
    rate_mbit: float,
    burst_bytes: int | None = None,
    latency_ms: float = LATENCY_MS,
) -> list[str]:
    """``command`` run in a new network namespace whose loopback is limited to ``rate_mbit``
    (module doc); the argv to give :mod:`subprocess`."""
    if not (rate_mbit > 0 and math.isfinite(rate_mbit)):
        raise ValueError(f"rate_mbit must be a positive number, got {rate_mbit!r}")
    if not latency_ms > 0:
        raise ValueError(f"latency_ms must be > 0, got {latency_ms!r}")
    burst = default_burst(rate_mbit) if burst_bytes is None else int(burst_bytes)
    if burst < 1:
        raise ValueError(f"burst_bytes must be >= 1, got {burst_bytes!r}")
    setup = (
        f"set -e; ip link set lo mtu {MTU} up; "
        f"tc qdisc add dev lo root tbf rate {rate_mbit:g}mbit burst {burst} "
        f"latency {latency_ms:g}ms; "
        'exec "$@"'
    )
    return ["unshare", "--net", "--", "sh", "-c", setup, "sh", *map(str, command)]


def netns_inode(pid: int | str = "self") -> int:
    """The network namespace of process ``pid`` (its ``/proc/<pid>/ns/net`` inode)."""
    return os.stat(f"/proc/{pid}/ns/net").st_ino
