from __future__ import annotations

import math

import pytest
import torch

from gradcomp.models import MODELS, build_model, count_parameters

# Trainable parameters; "total" adds BatchNorm running statistics (Keras' count_params()).
EXPECTED = {
    "cnn": (551_722, None),
    "resnet50v2": (23_539_850, 23_585_290),
    "densenet121": (6_964_106, 7_047_754),
    "vgg16": (33_638_218, 33_638_218),
    "resnet20": (269_722, None),
}

# M22's Table V (``model details.png`` in the authors' FL_RD repository): trainable
# parameters per row, BatchNorm counted as gamma and beta.
M22_RESNET18_ROWS = {
    "stem": [9408, 128],  # conv2d_1, BN_1
    "layer1.0": [36864, 128, 36864, 128],  # conv2d_2, BN_2, con2d_3, BN_3
    "layer1.1": [73984],  # basic_block_2 ...
    "layer2.0": [230144],
    "layer2.1": [295424],
    "layer3.0": [919040],
    "layer3.1": [1180672],
    "layer4.0": [3673088],
    "layer4.1": [4720640],  # ... basic_block_8
    "fc": [5130],  # dense_1
}
M22_VGG16_ROWS = [  # conv2d_1 .. conv2d_13, dense_1 .. dense_3
    1792, 36928, 73856, 147584, 295168, 590080, 590080, 1180160, 2359808, 2359808,
    2359808, 2359808, 2359808, 2101248, 16781312, 40970,
]  # fmt: skip

# the paper-scale networks take a second or more to build on a CPU: the slow tier
HEAVY = ("densenet121", "resnet18", "resnet50v2", "vgg16")


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in sorted(EXPECTED)],
)
def test_parameter_counts(name: str) -> None:
    model = build_model(name, seed=0)
    trainable, total = EXPECTED[name]
    assert count_parameters(model) == trainable
    if total is not None:
        assert count_parameters(model, trainable=False) == total


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in sorted(MODELS)]
)
def test_forward_shape(name: str) -> None:
    model = build_model(name, seed=0).eval()
    x = torch.rand(2, 3, 32, 32).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        assert model(x).shape == (2, 10)


def test_cnn_layout_matches_paper_y() -> None:
    model = build_model("cnn", seed=0)
    names = [n for n, _ in model.named_parameters()]
    for layer in ("conv2.weight", "conv5.weight", "dense128.weight", "dense10.weight"):
        assert layer in names
    assert model.dense128.in_features == 2048
    assert [d.p for d in model.drops] + [model.drop_dense.p] == [0.2, 0.3, 0.4, 0.5]
    # He-uniform: every hidden kernel within sqrt(6 / fan_in), biases zero
    for i in range(1, 7):
        w = getattr(model, f"conv{i}").weight
        assert w.abs().max() <= math.sqrt(6 / w[0].numel()) + 1e-7
        assert torch.all(getattr(model, f"conv{i}").bias == 0)


def test_cnn_relu_comes_before_batchnorm() -> None:
    model = build_model("cnn", seed=0).train()
    seen = []
    model.bn1.register_forward_hook(lambda m, inp, out: seen.append(inp[0].min().item()))
    model(torch.randn(4, 3, 32, 32).contiguous(memory_format=torch.channels_last))
    assert seen[0] >= 0.0  # BN's input is a ReLU output


def test_seeded_builds_are_identical_and_another_seed_differs() -> None:
    """Planted bugs that fail it: the seed ignored (every build alike, or two builds with
    the same seed apart)."""
    a, b = build_model("resnet20", seed=7), build_model("resnet20", seed=7)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    c = build_model("resnet20", seed=8)
    kernels = [
        (pa, pc) for pa, pc in zip(a.parameters(), c.parameters(), strict=True) if pa.dim() > 1
    ]
    assert kernels and all(not torch.equal(pa, pc) for pa, pc in kernels)


def test_unknown_model() -> None:
    with pytest.raises(KeyError, match="known models"):
        build_model("alexnet")


@pytest.mark.slow
def test_resnet50v2_kernels_are_glorot_uniform_and_biases_zero() -> None:
    # Keras' glorot_uniform: U(-b, b) with b = sqrt(6 / (fan_in + fan_out)), where the fans
    # multiply the channels by the kernel's spatial size; Keras biases start at zero.
    model = build_model("resnet50v2", seed=0)
    kernels = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d | torch.nn.Linear)]
    assert len(kernels) == 1 + 16 * 3 + 4 + 1  # stem, 3 per block, 4 projections, dense
    for module in kernels:
        w = module.weight.detach()
        spatial = w[0, 0].numel()
        bound = math.sqrt(6.0 / ((w.shape[0] + w.shape[1]) * spatial))
        assert w.abs().max() <= bound
        assert w.abs().max() > 0.99 * bound  # PyTorch's default would stop at ~1/sqrt(fan_in)
        assert w.std().item() == pytest.approx(bound / math.sqrt(3.0), rel=0.05)
        if module.bias is not None:
            assert torch.all(module.bias == 0)


@pytest.mark.slow
def test_resnet50v2_max_pool_pads_with_zeros() -> None:
    # Keras: ZeroPadding2D(1) then MaxPooling2D(3, 2). With a stem output of -1 everywhere
    # (16x16), the windows that touch the padding (first row and column of the 8x8 output)
    # give 0, every other window -1.
    model = build_model("resnet50v2", seed=0).eval()
    with torch.no_grad():
        model.stem.weight.zero_()
        model.stem.bias.fill_(-1.0)
    seen = []
    model.blocks[0].register_forward_hook(lambda m, inp, out: seen.append(inp[0]))
    with torch.no_grad():
        model(torch.rand(1, 3, 32, 32).contiguous(memory_format=torch.channels_last))
    expected = -torch.ones(1, 64, 8, 8)
    expected[:, :, 0, :] = 0.0
    expected[:, :, :, 0] = 0.0
    torch.testing.assert_close(seen[0], expected, rtol=0, atol=0)


def _params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_resnet18_matches_m22_table_v() -> None:
    """Per block and in total, resnet18's parameters are the rows of M22's Table V (its
    total, 11,181,642, is not the 3x3-stem CIFAR ResNet-18's 11,173,962), and the feature
    maps have the table's output shapes on a 32x32 input.

    Planted bugs that fail it: the CIFAR variant (3x3 stem, no max-pool: other stem count
    and 32x32 maps), a shortcut without BatchNorm (layer2.0 256 short), a 1000-class head.
    """
    model = build_model("resnet18", seed=0).eval()
    assert count_parameters(model) == sum(sum(r) for r in M22_RESNET18_ROWS.values())
    assert count_parameters(model) == 11_181_642
    assert _params(model.conv1) + _params(model.bn1) == sum(M22_RESNET18_ROWS["stem"])
    for block, rows in M22_RESNET18_ROWS.items():
        if block.startswith("layer"):
            stage, index = block.split(".")
            assert _params(getattr(model, stage)[int(index)]) == sum(rows), block
    assert _params(model.fc) == M22_RESNET18_ROWS["fc"][0]
    shapes = {}
    for name in ("maxpool", "layer1", "layer2", "layer3", "layer4"):
        getattr(model, name).register_forward_hook(
            lambda _m, _i, out, name=name: shapes.__setitem__(name, tuple(out.shape[1:]))
        )
    with torch.no_grad():
        model(torch.rand(1, 3, 32, 32))
    assert shapes == {
        "maxpool": (64, 8, 8),
        "layer1": (64, 8, 8),
        "layer2": (128, 4, 4),
        "layer3": (256, 2, 2),
        "layer4": (512, 1, 1),
    }


@pytest.mark.slow
def test_vgg16_matches_m22_table_v() -> None:
    """vgg16's convolutions and dense layers have the parameters of M22's Table V, in order.

    Planted bug that fails it: torchvision's 7x7 pooling kept (dense_1 25088 inputs).
    """
    model = build_model("vgg16", seed=0)
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d | torch.nn.Linear)]
    assert [_params(m) for m in layers] == M22_VGG16_ROWS
