"""Training pieces shared by both papers: device choice, uint8 batches to float, shuffled
minibatches and evaluation (mean cross-entropy in nats, accuracy as a fraction)."""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["evaluate", "minibatches", "resolve_device", "to_float_batch"]


def resolve_device(spec: str) -> torch.device:
    """``"auto"`` picks CUDA when available, else the CPU; anything else is passed to torch."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(spec)


def to_float_batch(images: torch.Tensor, device: torch.device) -> torch.Tensor:
    """uint8 (N, 3, H, W) -> float32 in [0, 1], channels_last, on ``device``."""
    x = images.to(device, non_blocking=True).float().div_(255.0)
    return x.contiguous(memory_format=torch.channels_last)


def minibatches(n: int, batch_size: int, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Index tensors of one shuffled epoch; the last batch may be smaller.

    A last batch of a single image is merged into the batch before it (``batch_size + 1``
    images): BatchNorm cannot normalise one value per channel in training ("Expected more
    than 1 value per channel"), and merging, unlike dropping, keeps every image in the epoch.
    """
    batches = list(torch.randperm(n, generator=generator).split(batch_size))
    if len(batches) > 1 and len(batches[-1]) == 1:
        batches[-2:] = [torch.cat(batches[-2:])]
    yield from batches


@torch.inference_mode()
def evaluate(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    batch_size: int,
    device: torch.device,
) -> tuple[float, float]:
    """Mean cross-entropy and accuracy (fraction) of ``model`` on uint8 images."""
    model.eval()
    loss_sum, correct = 0.0, 0
    for start in range(0, len(labels), batch_size):
        x = to_float_batch(images[start : start + batch_size], device)
        y = labels[start : start + batch_size].to(device)
        logits = model(x)
        loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(1) == y).sum().item()
    return loss_sum / len(labels), correct / len(labels)
