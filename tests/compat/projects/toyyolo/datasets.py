import torch
from torch.utils.data import Dataset

from toyyolo.registry import DATASETS


@DATASETS.register_module()
class ToyYoloDataset(Dataset):
    """Samples whose inputs are scaled by the pipeline (a list of {"type": "Scale", ...})."""

    def __init__(self, size: int = 16, pipeline=None) -> None:
        generator = torch.Generator().manual_seed(1)
        self.x = torch.randn(size, 4, generator=generator)
        self.y = (self.x[:, 0] > 0).long()
        self.pipeline = list(pipeline or [])
        self.scale = 1.0
        for step in self.pipeline:
            self.scale *= step.get('factor', 1.0)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index] * self.scale, self.y[index]
