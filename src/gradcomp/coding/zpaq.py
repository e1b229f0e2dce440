"""zpaq -m5 (the Debian ``zpaq`` program, a context-mixing archiver) on the FP8 bytes: the
strongest general-purpose reference. A size only: the archive's bytes less those of the
archive of an empty file (about 1,000 bytes: the -m5 model's description in the block
header, the file's name and date), so that the reference is the data's own cost, what
zpaq's model would need inside a container that already knows it.

Where the program is missing the bound is NaN and a warning says why (install it with
``apt-get install zpaq``)."""

from __future__ import annotations

import logging
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

from gradcomp.coding.base import Bound, TensorSymbols
from gradcomp.coding.byte_coders import fp8_bytes

log = logging.getLogger(__name__)

__all__ = ["ZPAQ_METHOD", "ZpaqSize", "zpaq_bits"]

ZPAQ_METHOD = "-m5"
_warned: list[str] = []
_empty: list[float] = []  # the empty file's archive, bits


def zpaq_bits(data: bytes, *, net: bool = True) -> float:
    """Size in bits of the zpaq archive (method :data:`ZPAQ_METHOD`) of one file holding
    ``data``, less that of an empty file's archive if ``net``; NaN (with one warning) if
    the ``zpaq`` program is not on the PATH."""
    exe = shutil.which("zpaq")
    if exe is None:
        if not _warned:
            _warned.append("zpaq")
            log.warning("zpaq not found on the PATH (Debian: apt-get install zpaq): NaN sizes")
        return math.nan
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "x").write_bytes(bytes(data))
        subprocess.run(
            [exe, "a", "a.zpaq", "x", ZPAQ_METHOD], cwd=tmp, check=True, capture_output=True
        )
        size = 8.0 * Path(tmp, "a.zpaq").stat().st_size
    if net:
        if not _empty:
            _empty.append(zpaq_bits(b"", net=False))
        size -= _empty[0]
    return size


class ZpaqSize(Bound):
    """zpaq -m5 archive of the tensor's FP8 bytes; see the module docstring."""

    name = "zpaq"

    @classmethod
    def unavailable(cls) -> str | None:
        if shutil.which("zpaq") is None:
            return "zpaq is not installed (Debian: apt-get install zpaq)"
        return None

    def bits(self, x: TensorSymbols) -> float:
        return zpaq_bits(fp8_bytes(x.grid.decode(x.symbols), x.grid))
