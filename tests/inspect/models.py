"""Small models for the inspect tests and benchmarks (no torchvision here)."""

from __future__ import annotations

import torch
from torch import nn

HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
              "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs")


def hook_state(model: nn.Module, *tensors: torch.Tensor) -> dict:
    """Every hook table of every module, parameter and extra tensor, for before/after comparisons.

    torch keeps these in private attributes only; the tests read them here, in one place.
    """
    state: dict = {}
    for name, module in model.named_modules():
        state[f"module:{name}"] = ({attr: dict(getattr(module, attr)) for attr in HOOK_DICTS},
                                   module._is_full_backward_hook)  # noqa: SLF001
    named = [(f"param:{n}", p) for n, p in model.named_parameters()]
    named += [(f"tensor:{i}", t) for i, t in enumerate(tensors)]
    for name, tensor in named:
        tables = (tensor._backward_hooks, tensor._post_accumulate_grad_hooks)  # noqa: SLF001
        state[name] = tuple(table if table is None else dict(table) for table in tables)
    return state


class MLP(nn.Sequential):
    def __init__(self, sizes=(16, 32, 32, 4)) -> None:
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        super().__init__(*layers)


class BasicBlock(nn.Module):
    """A ResNet basic block, with in-place ReLUs and an in-place residual add as in torchvision
    (``inplace=False``: the same block with out-of-place ops, for comparisons)."""

    def __init__(self, cin: int, cout: int, stride: int = 1, inplace: bool = True) -> None:
        super().__init__()
        self.inplace = inplace
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=inplace)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.inplace:
            out += identity
        else:
            out = out + identity
        return self.relu(out)


class SmallResNet(nn.Module):
    """A ResNet-18-shaped network, narrow: stem, layer1..layer3 of two blocks, pool, fc.

    ``inplace=False`` builds the same network with out-of-place ReLUs and residual adds.
    """

    def __init__(self, width: int = 8, num_classes: int = 10, inplace: bool = True) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=inplace)

        def block(cin: int, cout: int, stride: int = 1) -> BasicBlock:
            return BasicBlock(cin, cout, stride, inplace)

        self.layer1 = nn.Sequential(block(width, width), block(width, width))
        self.layer2 = nn.Sequential(block(width, 2 * width, 2), block(2 * width, 2 * width))
        self.layer3 = nn.Sequential(block(2 * width, 4 * width, 2), block(4 * width, 4 * width))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class TinyTransformer(nn.Module):
    """Token classifier: embedding, a TransformerEncoder (ModuleList of layers), mean pool, head."""

    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4, layers: int = 2,
                 classes: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)).mean(1))


class TiedLM(nn.Module):
    """A language-model head that shares its weight with the embedding."""

    def __init__(self, vocab: int = 50, dim: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.lm_head(torch.tanh(self.mix(self.embed(tokens))))


class SharedNet(nn.Module):
    """One Linear applied three times, and an activation reused."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.inp = nn.Linear(4, dim)
        self.shared = nn.Linear(dim, dim)
        self.act = nn.ReLU()
        self.out = nn.Linear(dim, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.inp(x))
        for _ in range(3):
            x = self.act(self.shared(x))
        return self.out(x)


class TwoInputNet(nn.Module):
    """forward(image, extra, *, scale): several positional and a keyword input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.side = nn.Linear(3, 4)
        self.head = nn.Linear(8, 2)

    def forward(self, image: torch.Tensor, extra: torch.Tensor, *, scale: float = 1.0) -> torch.Tensor:
        a = torch.flatten(self.pool(self.conv(image)), 1)
        return self.head(torch.cat([a, self.side(extra)], 1)) * scale


class HeavyNet(nn.Sequential):
    """Convolutions and linears big enough that hook overhead is small next to them (profiling)."""

    def __init__(self) -> None:
        super().__init__(
            nn.Conv2d(16, 64, 3, padding=1), nn.Conv2d(64, 64, 3, padding=1),
            nn.Conv2d(64, 32, 3, padding=1), nn.Flatten(), nn.Linear(32 * 24 * 24, 512), nn.Linear(512, 512),
        )


class ArgMaxNet(nn.Module):
    """A classifier that returns class indices: its output has no grad_fn."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).argmax(-1)
