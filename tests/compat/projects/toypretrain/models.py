import torch
import torch.nn.functional as F

from hookline.compat.mmengine.model import BaseModel
from toypretrain.registry import MODELS


@MODELS.register_module()
class BNClassifier(BaseModel):
    """Linear -> BatchNorm -> Linear, with MMEngine's model API."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        logits = self.fc2(torch.relu(self.bn(self.fc1(inputs))))
        if mode == 'loss':
            return {'loss': F.cross_entropy(logits, data_samples)}
        if mode == 'predict':
            return [{'pred': int(p.argmax()), 'gt': int(t)} for p, t in zip(logits, data_samples)]
        return logits
