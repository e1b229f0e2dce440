from __future__ import annotations

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
