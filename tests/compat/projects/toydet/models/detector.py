import torch
import torch.nn.functional as F

from hookline.compat.mmengine.model import BaseModel
from toydet.registry import MODELS


@MODELS.register_module()
class ToyDetector(BaseModel):
    """A classifier with MMEngine's model API; ``predict`` returns one data sample per input."""

    def __init__(self, in_features: int = 4, num_classes: int = 2) -> None:
        super().__init__()
        self.head = torch.nn.Linear(in_features, num_classes)
        self.epochs_seen = []

    def set_epoch(self, epoch: int) -> None:
        self.epochs_seen.append(epoch)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        logits = self.head(inputs)
        if mode == 'loss':
            return {'loss_cls': F.cross_entropy(logits, data_samples)}
        if mode == 'predict':
            return [{'pred_label': int(p.argmax()), 'gt_label': int(t),
                     'image': x.reshape(2, 2, 1).expand(2, 2, 3)}
                    for p, t, x in zip(logits, data_samples, inputs)]
        return logits


@MODELS.register_module()
class ToyTeacherStudent(BaseModel):
    """A student trained by the loss and a teacher the MeanTeacherHook averages."""

    def __init__(self) -> None:
        super().__init__()
        self.student = torch.nn.Linear(4, 2)
        self.teacher = torch.nn.Linear(4, 2)
        self.teacher.requires_grad_(False)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        logits = self.student(inputs)
        if mode == 'loss':
            return {'loss_cls': F.cross_entropy(logits, data_samples)}
        return logits
