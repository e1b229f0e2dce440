"""Per-epoch gradient dumps: one safetensors file per epoch.

A dump holds, for every dumped parameter ``name``, two float32 tensors with the
parameter's shape:

- ``epoch_avg/<name>``: the sum of the epoch's minibatch gradients divided by
  the number of minibatches (accumulated in float64, rounded once);
- ``last_batch/<name>``: the gradient of the epoch's last minibatch.

Each minibatch gradient is that of the loss the run stepped on (metadata
``loss_reduction``): with ``sum`` (the authors') the batch sum of the per-image
cross-entropies, ``batch_size`` times the mean-loss gradient, and ``last_batch_size``
times it for the last batch; with ``mean`` the batch mean.

Metadata (the model, run, seed, epoch, ``n_batches``, ``batch_size``,
``last_batch_size`` and ``loss_reduction``) is stored as one
JSON string under the key ``gradcomp``: safetensors writes metadata keys in
hash order, so a single key keeps the file bytes reproducible. ``n_batches``
lets the authors' slip (dividing by ``n_batches - 1``) be recomputed exactly as
``epoch_avg * n_batches / (n_batches - 1)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from gradcomp.artifacts import atomic_path

DUMP_KINDS = ("epoch_avg", "last_batch")


@dataclass(frozen=True)
class GradientDump:
    """One epoch's dump: ``tensors[kind][name]`` and the string ``metadata``."""

    tensors: dict[str, dict[str, torch.Tensor]]
    metadata: dict[str, str]

    @property
    def names(self) -> list[str]:
        """Dumped parameter names, in the model's order."""
        return list(self.tensors[DUMP_KINDS[0]])

    @property
    def epoch(self) -> int:
        return int(self.metadata["epoch"])


def write_dump(
    path: Path,
    tensors: dict[str, dict[str, torch.Tensor]],
    metadata: dict[str, object],
) -> None:
    """Write ``tensors[kind][name]`` atomically (temporary file, then rename)."""
    flat = {
        f"{kind}/{name}": t.detach().to("cpu", torch.float32, copy=True).contiguous()
        for kind in DUMP_KINDS
        for name, t in tensors[kind].items()
    }
    meta = {k: str(v) for k, v in metadata.items()}
    meta["order"] = ",".join(tensors[DUMP_KINDS[0]])
    header = {"gradcomp": json.dumps(meta, sort_keys=True)}
    with atomic_path(path) as tmp:
        save_file(flat, str(tmp), metadata=header)


def read_dump(path: str | Path) -> GradientDump:
    """Read a dump written by :func:`write_dump`."""
    with safe_open(str(path), framework="pt") as fh:
        header = fh.metadata() or {}
    if "gradcomp" not in header:
        raise ValueError(f"{path} is not a gradcomp gradient dump (no 'gradcomp' metadata)")
    metadata = json.loads(header["gradcomp"])
    flat = load_file(str(path))
    order = metadata.get("order", "").split(",")
    tensors = {kind: {name: flat[f"{kind}/{name}"] for name in order} for kind in DUMP_KINDS}
    return GradientDump(tensors, metadata)
