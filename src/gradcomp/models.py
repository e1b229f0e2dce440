"""Model registry: the networks of both papers plus small CPU-friendly ones.

Every model takes a float batch of shape (N, 3, 32, 32) with pixels in [0, 1]
and returns logits of shape (N, 10). Build one with :func:`build_model`.

Names and where they come from:

- ``cnn``: paper Y's VGG-style CNN (551,722 trainable parameters).
- ``resnet50v2``: paper L's Keras ``ResNet50V2`` (pre-activation ResNet-50),
  rebuilt layer for layer for a 32x32 input.
- ``densenet121``, ``vgg16``: torchvision's networks adapted to 10 classes and
  a 32x32 input (paper L used the Keras versions; differences are listed in
  the builders' docstrings). ``vgg16`` is also one of the follow-up's (M22's)
  federated models.
- ``resnet18``: the follow-up's (M22's) ResNet-18, torchvision's ImageNet layout
  (7x7/2 stem and max-pool) on a 32x32 input, 11,181,642 parameters.
- ``resnet20``: the CIFAR ResNet-20 of He et al. (2016), 269,722 parameters,
  the default network of the CPU-scale study.
- ``mlp``: a one-hidden-layer perceptron, only for tests and smoke runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

NUM_CLASSES = 10


def _he_uniform_(module: nn.Conv2d | nn.Linear) -> None:
    """Keras' ``he_uniform`` (U(-sqrt(6/fan_in), +sqrt(6/fan_in))) and zero bias."""
    nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")
    if module.bias is not None:
        nn.init.zeros_(module.bias)


def _glorot_uniform_(module: nn.Conv2d | nn.Linear) -> None:
    """Keras' default ``glorot_uniform`` and zero bias."""
    nn.init.xavier_uniform_(module.weight)
    if module.bias is not None:
        nn.init.zeros_(module.bias)


def _keras_bn(channels: int, *, two_d: bool = True, eps: float = 1e-3) -> nn.Module:
    """BatchNorm with Keras' defaults (momentum 0.99 is PyTorch momentum 0.01)."""
    cls = nn.BatchNorm2d if two_d else nn.BatchNorm1d
    return cls(channels, eps=eps, momentum=0.01)


class PaperYCNN(nn.Module):
    """Paper Y's VGG-style CNN for CIFAR-10 (551,722 trainable parameters).

    Three blocks ``[conv-ReLU-BN, conv-ReLU-BN, maxpool, dropout]`` with 32, 64
    and 128 filters (3x3, 'same') and dropouts 0.2, 0.3, 0.4, then
    flatten (2048) - dense128-ReLU-BN - dropout 0.5 - dense10. ReLU comes
    *before* BatchNorm, as in the authors' Keras code; hidden layers use
    He-uniform initialisation, the output layer Keras' default Glorot-uniform.
    Parameter names follow the paper's layer names: ``conv1`` .. ``conv6``,
    ``dense128``, ``dense10`` (and ``bn1`` .. ``bn7``).
    """

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        widths = [(3, 32), (32, 32), (32, 64), (64, 64), (64, 128), (128, 128)]
        for i, (cin, cout) in enumerate(widths, start=1):
            conv = nn.Conv2d(cin, cout, 3, padding=1)
            _he_uniform_(conv)
            self.add_module(f"conv{i}", conv)
            self.add_module(f"bn{i}", _keras_bn(cout))
        self.drops = nn.ModuleList(nn.Dropout(p) for p in (0.2, 0.3, 0.4))
        self.dense128 = nn.Linear(128 * 4 * 4, 128)
        _he_uniform_(self.dense128)
        self.bn7 = _keras_bn(128, two_d=False)
        self.drop_dense = nn.Dropout(0.5)
        self.dense10 = nn.Linear(128, num_classes)
        _glorot_uniform_(self.dense10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in range(3):
            for i in (2 * block + 1, 2 * block + 2):
                x = getattr(self, f"bn{i}")(F.relu(getattr(self, f"conv{i}")(x)))
            x = self.drops[block](F.max_pool2d(x, 2))
        x = torch.flatten(x, 1)
        x = self.drop_dense(self.bn7(F.relu(self.dense128(x))))
        return self.dense10(x)


class _PreactBottleneck(nn.Module):
    """Keras ``block2`` of ResNet50V2: BN-ReLU first, then 1x1 / 3x3 / 1x1.

    The stride sits on the 3x3 convolution; without a projection the shortcut
    of a strided block is a 1x1 max-pool with that stride (Keras' choice).
    """

    def __init__(self, cin: int, filters: int, stride: int, project: bool) -> None:
        super().__init__()
        self.preact = nn.BatchNorm2d(cin, eps=1.001e-5, momentum=0.01)
        self.shortcut = nn.Conv2d(cin, 4 * filters, 1, stride=stride) if project else None
        self.stride = stride
        self.conv1 = nn.Conv2d(cin, filters, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters, eps=1.001e-5, momentum=0.01)
        self.conv2 = nn.Conv2d(filters, filters, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters, eps=1.001e-5, momentum=0.01)
        self.conv3 = nn.Conv2d(filters, 4 * filters, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = F.relu(self.preact(x))
        if self.shortcut is not None:
            shortcut = self.shortcut(pre)
        elif self.stride > 1:
            shortcut = F.max_pool2d(x, 1, stride=self.stride)
        else:
            shortcut = x
        out = F.relu(self.bn1(self.conv1(pre)))
        out = F.relu(self.bn2(self.conv2(out)))
        return shortcut + self.conv3(out)


class ResNet50V2(nn.Module):
    """Keras ``ResNet50V2(weights=None, input_shape=(32, 32, 3), classes=10)``.

    Stem: 7x7/2 convolution with bias (Keras: ``ZeroPadding2D(3)`` then a 'valid'
    convolution, the same as padding 3), then ``ZeroPadding2D(1)`` and a 3x3/2 max-pool:
    the pool's border windows see zeros, not minus infinity as PyTorch's padded max-pool
    would, and the stem output is not yet activated (pre-activation), so the border
    differs. Four stacks of 3, 4, 6 and 3 pre-activation bottlenecks (64, 128, 256, 512
    filters) whose *last* block carries the stride (2, 2, 2, 1), as Keras does; final
    BN-ReLU, global average pooling and a dense layer. On a 32x32 input the feature map
    is 1x1 from the third stack on, exactly as in the paper's Keras runs.
    23,539,850 trainable parameters; with BatchNorm's running statistics the
    total is 23,585,290, Keras' ``count_params()``.

    Initialisation as Keras: Glorot-uniform kernels (convolutions and the dense layer),
    zero biases, BatchNorm gamma 1 and beta 0 (epsilon 1.001e-5, momentum 0.99).

    Differences from Keras: the model returns logits and the softmax is part of the loss
    (Keras clips the probabilities at 1e-7 inside its cross-entropy); BatchNorm's running
    variance is updated with the unbiased batch variance (PyTorch) rather than the biased
    one (Keras), which changes evaluation only; the random numbers of the initialisation
    come from torch's generator (same laws, other draws).
    """

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, stride=2, padding=3)
        blocks: list[nn.Module] = []
        cin = 64
        for filters, depth, last_stride in ((64, 3, 2), (128, 4, 2), (256, 6, 2), (512, 3, 1)):
            for i in range(depth):
                stride = last_stride if i == depth - 1 else 1
                blocks.append(_PreactBottleneck(cin, filters, stride, project=i == 0))
                cin = 4 * filters
        self.blocks = nn.Sequential(*blocks)
        self.post_bn = nn.BatchNorm2d(cin, eps=1.001e-5, momentum=0.01)
        self.fc = nn.Linear(cin, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d | nn.Linear):
                _glorot_uniform_(module)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.pad(self.stem(x), (1, 1, 1, 1)), 3, stride=2)  # zeros, as Keras
        x = F.relu(self.post_bn(self.blocks(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def densenet121(num_classes: int = NUM_CLASSES) -> nn.Module:
    """torchvision's DenseNet-121 with a 10-class head (6,964,106 parameters).

    Differences from Keras' ``DenseNet121(weights=None, classes=10)`` used by
    paper L: BatchNorm epsilon 1e-5 instead of 1.001e-5 and momentum 0.1
    instead of 0.01 (PyTorch convention), PyTorch's default initialisation
    (Kaiming-normal convolutions) instead of Keras' Glorot-uniform. The layer
    structure and trainable parameter count are the same. A 32x32 input runs
    through unchanged: the 7x7/2 stem and 3x3/2 pool give 8x8, the three
    transitions 1x1.
    """
    from torchvision.models import densenet121 as tv_densenet121

    return tv_densenet121(weights=None, num_classes=num_classes)


def vgg16(num_classes: int = NUM_CLASSES) -> nn.Module:
    """torchvision's VGG-16 adapted to a 32x32 input (33,638,218 parameters).

    After five pooling stages a 32x32 input is 1x1x512, so the 7x7 adaptive
    pooling is replaced by a 1x1 one and the first dense layer takes 512
    inputs, as Keras' ``VGG16(weights=None, input_shape=(32, 32, 3),
    classes=10)`` does (same parameter count). Differences from Keras: the
    classifier keeps torchvision's two dropout layers (p = 0.5; Keras has
    none) and PyTorch's default initialisation.
    """
    from torchvision.models import vgg16 as tv_vgg16

    model = tv_vgg16(weights=None, num_classes=num_classes)
    model.avgpool = nn.AdaptiveAvgPool2d(1)
    old = model.classifier[0]
    model.classifier[0] = nn.Linear(512, old.out_features)
    return model


def resnet18(num_classes: int = NUM_CLASSES) -> nn.Module:
    """The follow-up's (M22's) ResNet-18: torchvision's ``resnet18`` with a 10-class head,
    unchanged otherwise (11,181,642 parameters).

    M22's Table V (``model details.png`` in the authors' ``FL_RD``) lists this layout layer
    by layer: a 7x7/2 convolution without bias to 16x16x64, BatchNorm, ReLU, a 3x3/2
    max-pool to 8x8, eight post-activation basic blocks (conv-BN-ReLU-conv-BN, then the
    shortcut: a 1x1/2 convolution with BatchNorm where the width doubles) to 1x1x512,
    global average pooling and ``dense_1`` (5,130 parameters). It is *not* the CIFAR
    variant with a 3x3 stem and no max-pool (11,173,962 parameters). The released
    ``main.py`` builds ``classification_models``' Keras ResNet18 instead (pre-activation
    blocks, a BatchNorm on the input); the table is what the paper reports.
    """
    from torchvision.models import resnet18 as tv_resnet18

    return tv_resnet18(weights=None, num_classes=num_classes)


class _BasicBlock(nn.Module):
    """CIFAR ResNet basic block with a parameter-free (option A) shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride = stride
        self.pad = cout - cin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x
        if self.stride > 1 or self.pad:
            shortcut = x[:, :, :: self.stride, :: self.stride]
            shortcut = F.pad(shortcut, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return F.relu(out + shortcut)


class CifarResNet(nn.Module):
    """He et al.'s CIFAR ResNet-(6n+2): widths 16/32/64, n blocks per stage."""

    def __init__(self, n: int, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers: list[nn.Module] = []
        cin = 16
        for stage, cout in enumerate((16, 32, 64)):
            for i in range(n):
                layers.append(_BasicBlock(cin, cout, 2 if stage > 0 and i == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MLP(nn.Module):
    """Flatten - dense(hidden) - ReLU - dense10; for tests and smoke runs only."""

    def __init__(self, hidden: int = 32, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3 * 32 * 32, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


MODELS: dict[str, Callable[[], nn.Module]] = {
    "cnn": PaperYCNN,
    "resnet50v2": ResNet50V2,
    "densenet121": densenet121,
    "vgg16": vgg16,
    "resnet18": resnet18,
    "resnet20": lambda: CifarResNet(3),
    "mlp": MLP,
}


def build_model(name: str, *, seed: int | None = None, model_class: str | None = None) -> nn.Module:
    """Build model ``name`` (a key of :data:`MODELS`, or a user's model: ``model_class``, a
    ``"package.module:Class"`` built as ``Class()``, config ``user_models``), seeded if
    ``seed`` is given.

    The model is returned in ``channels_last`` memory format, the fast layout
    for convolutions on CPU.

    >>> sum(p.numel() for p in build_model("mlp", seed=0).parameters()) > 0
    True
    """
    if model_class is not None:
        from gradcomp.plugins import import_class

        make: Callable[[], Any] = import_class(model_class)
    elif name in MODELS:
        make = MODELS[name]
    else:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(sorted(MODELS))}")
    if seed is not None:
        torch.manual_seed(seed)
    model = make()
    if not isinstance(model, nn.Module):
        raise TypeError(f"model {name!r}: {model_class}() is a {type(model).__name__}, "
                        "not a torch.nn.Module")  # fmt: skip
    return model.to(memory_format=torch.channels_last)


def count_parameters(model: nn.Module, *, trainable: bool = True) -> int:
    """Number of trainable parameters, or of all parameters and buffers (Keras' count)."""
    if trainable:
        return sum(p.numel() for p in model.parameters() if p.requires_grad)
    buffers = sum(b.numel() for n, b in model.named_buffers() if "num_batches" not in n)
    return sum(p.numel() for p in model.parameters()) + buffers
