"""The training workloads of ``runner_overhead.py``: a small MLP, or a ResNet-18-shaped CNN.

``mlp`` is small on purpose, so that what a framework adds per iteration
shows; ``resnet18`` is the shape of real vision work (11.2 M parameters,
3x64x64 synthetic images, batch 128), where that overhead is measured against
a GPU-sized step. Both are synthetic and seeded: nothing is downloaded.

Example::

    >>> from _workloads import WORKLOADS
    >>> WORKLOADS["mlp"].batch, WORKLOADS["resnet18"].batch
    (32, 128)
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Workload:
    name: str
    samples: int      # dataset size (--quick divides it by 8)
    batch: int
    epochs: int
    input_shape: tuple[int, ...]
    description: str
    hidden: int = 64  # the MLP's hidden width (``--hidden``: a bigger step, the same hooks)

    def widened(self, hidden: int) -> Workload:
        """The MLP with ``hidden`` units (how the hooks' fixed cost compares with a bigger step).

        Example::

            >>> WORKLOADS["mlp"].widened(1024).description
            'MLP 32-1024-10 on 8,192 synthetic samples, batch 32'
        """
        if self.name != "mlp":
            raise ValueError("--hidden applies to the mlp workload only")
        return replace(self, hidden=hidden,
                       description=self.description.replace("32-64-10", f"32-{hidden}-10"))


WORKLOADS = {
    "mlp": Workload("mlp", 8192, 32, 4, (32,),
                    "MLP 32-64-10 on 8,192 synthetic samples, batch 32"),
    "resnet18": Workload("resnet18", 5120, 128, 2, (3, 64, 64),
                         "ResNet-18-shaped CNN (11.2 M parameters) on 5,120 synthetic 3x64x64 "
                         "images, batch 128"),
}


def build_model(torch, workload: Workload):
    """The workload's model (torch is passed in: only worker processes import it)."""
    nn = torch.nn
    if workload.name == "mlp":
        hidden = workload.hidden
        return nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                nn.BatchNorm2d(cout))
            self.skip = (nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def lightning_classifier(net, lr: float):
    """``net`` as a LightningModule, written the way Lightning's docs write one: a
    cross-entropy ``training_step`` that ``self.log``s the loss, SGD at ``lr``
    (lightning and torch are imported here: only worker processes call this)."""
    import lightning  # noqa: PLC0415
    import torch  # noqa: PLC0415

    class Classifier(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = net
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def training_step(self, batch, batch_idx):  # noqa: ARG002 - Lightning's signature
            inputs, targets = batch
            loss = self.loss_fn(self.net(inputs), targets)
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=lr)

    return Classifier()
