from __future__ import annotations

import numpy as np
import pytest
import torch

from gradcomp.augment import random_affine


def test_shape_and_determinism() -> None:
    x = torch.rand(8, 3, 32, 32)
    a = random_affine(x, torch.Generator().manual_seed(1))
    b = random_affine(x, torch.Generator().manual_seed(1))
    c = random_affine(x, torch.Generator().manual_seed(2))
    assert a.shape == x.shape and a.dtype == x.dtype
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_zero_ranges_are_identity() -> None:
    x = torch.rand(4, 3, 32, 32)
    y = random_affine(x, torch.Generator().manual_seed(0), rotation_deg=0, shift=0, flip=False)
    torch.testing.assert_close(y, x, atol=1e-5, rtol=0)


def test_flip_only_mirrors_some_images() -> None:
    x = torch.rand(64, 3, 32, 32)
    y = random_affine(x, torch.Generator().manual_seed(0), rotation_deg=0, shift=0, flip=True)
    flipped = [torch.allclose(y[i], x[i].flip(-1), atol=1e-5) for i in range(64)]
    same = [torch.allclose(y[i], x[i], atol=1e-5) for i in range(64)]
    assert all(f or s for f, s in zip(flipped, same, strict=True))
    assert 10 < sum(flipped) < 54


def test_shift_moves_content_within_range() -> None:
    # a bright column in the middle moves by at most 0.2 * 32 = 6.4 pixels
    x = torch.zeros(32, 1, 32, 32)
    x[..., 16] = 1.0
    y = random_affine(x, torch.Generator().manual_seed(0), rotation_deg=0, shift=0.2, flip=False)
    cols = y[:, 0, 16].argmax(-1).float()
    assert (cols - 16).abs().max() <= 7
    assert (cols - 16).abs().max() >= 2


@pytest.mark.slow
def test_default_rotation_is_uniform_within_10_degrees() -> None:
    """With shifts and flips off, each image of the default augmentation is torchvision's
    bilinear ``rotate`` of the input (counter-clockwise angle) on the interior pixels, the
    border fill aside. The angle of every image is recovered by a search against
    torchvision: all lie within +-10 degrees and spread uniformly over it (Kolmogorov-Smirnov
    against U(-10, 10)). Planted bugs: a default range other than 10 degrees, degrees taken
    as radians, or the rotation turned the other way."""
    from scipy import optimize, stats
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as TF

    images = torch.rand(32, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    out = random_affine(images, torch.Generator().manual_seed(5), shift=0.0, flip=False)
    inner = (..., slice(8, 24), slice(8, 24))  # pixels a 10-degree turn keeps inside

    def mismatch(i: int, angle: float) -> float:
        ref = TF.rotate(images[i : i + 1], angle, interpolation=InterpolationMode.BILINEAR)
        return float(((out[i : i + 1] - ref)[inner] ** 2).mean())

    angles = []
    for i in range(len(images)):
        start = min(np.arange(-24.0, 24.5, 2.0), key=lambda a, i=i: mismatch(i, a))
        res = optimize.minimize_scalar(
            lambda a, i=i: mismatch(i, a), bounds=(start - 1, start + 1), method="bounded",
            options={"xatol": 1e-4},
        )  # fmt: skip
        assert res.fun < 1e-10, (i, res.x, res.fun)  # the same warp, not just a similar one
        angles.append(res.x)
    angles = np.array(angles)
    assert np.all(np.abs(angles) <= 10.0 + 1e-3)
    assert stats.kstest(angles, stats.uniform(-10, 20).cdf).pvalue > 0.01
