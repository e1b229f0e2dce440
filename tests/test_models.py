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


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parameter_counts(name: str) -> None:
    model = build_model(name, seed=0)
    trainable, total = EXPECTED[name]
    assert count_parameters(model) == trainable
    if total is not None:
        assert count_parameters(model, trainable=False) == total


@pytest.mark.parametrize("name", sorted(MODELS))
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


def test_seeded_builds_are_identical() -> None:
    a, b = build_model("resnet20", seed=7), build_model("resnet20", seed=7)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_unknown_model() -> None:
    with pytest.raises(KeyError, match="known models"):
        build_model("alexnet")
