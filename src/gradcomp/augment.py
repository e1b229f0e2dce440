"""Paper L's data augmentation, done on whole batches of tensors.

Keras' ``ImageDataGenerator(rotation_range=10, width_shift_range=0.2,
height_shift_range=0.2, horizontal_flip=True)`` becomes one affine warp per
image: a rotation angle uniform in [-10, 10] degrees, shifts uniform in
[-0.2, 0.2] of the width and height, a flip with probability 1/2, bilinear
interpolation and nearest-edge fill (Keras' default ``fill_mode``). All random
numbers come from the ``torch.Generator`` passed in, so a run is reproducible
and resumable.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def random_affine(
    images: torch.Tensor,
    generator: torch.Generator,
    *,
    rotation_deg: float = 10.0,
    shift: float = 0.2,
    flip: bool = True,
) -> torch.Tensor:
    """Warp a float batch (N, C, H, W) with a random rotation, shift and flip per image.

    The random parameters are drawn on the CPU from ``generator`` and the warp
    runs on the images' device. Returns a new batch of the same shape, dtype
    and device.
    """
    n = images.shape[0]
    draws = torch.rand(n, 4, generator=generator, dtype=torch.float64)
    angle = (2 * draws[:, 0] - 1) * math.radians(rotation_deg)
    # affine_grid works in normalised coordinates spanning 2 units per axis,
    # so a shift of a fraction f of the image is 2 f there.
    tx = (2 * draws[:, 1] - 1) * shift * 2
    ty = (2 * draws[:, 2] - 1) * shift * 2
    mirror = (
        torch.where(draws[:, 3] < 0.5, -1.0, 1.0) if flip else torch.ones(n, dtype=torch.float64)
    )
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.stack(
        [
            torch.stack([cos * mirror, -sin, tx], dim=1),
            torch.stack([sin * mirror, cos, ty], dim=1),
        ],
        dim=1,
    ).to(device=images.device, dtype=images.dtype)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)
