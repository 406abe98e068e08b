"""Reading a key that a Keras ``logs`` dict does not hold is a KeyError listing the keys it
holds (and the closest one); ``except KeyError``, ``in`` and ``logs.get`` work as on a dict,
and nothing is read from the device for it."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import HookError
from hookline.hooks import KerasCallback
from hookline.hooks.keras_values import Logs, LogsKeyError


def loaders():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=generator)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    return DataLoader(data, batch_size=8), DataLoader(data, batch_size=16)


class ReadsValAcc(KerasCallback):
    def __init__(self) -> None:
        self.found: list[object] = []

    def on_epoch_end(self, epoch, logs=None):
        self.found.append(logs.get("val_acc", "absent"))
        self.found.append("val_acc" in logs)
        try:
            logs["val_acc"]
        except KeyError as exc:
            self.found.append(str(exc))
        logs["val_acc"]  # the mistake: read as Keras 2 named it


def test_a_missing_key_lists_the_keys_of_the_logs(tmp_path):
    torch.manual_seed(0)
    train, val = loaders()
    hook = ReadsValAcc()
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=train,
                    val_dataloader=val, metrics={"accuracy": "accuracy"}, max_epochs=1,
                    work_dir=tmp_path, hooks=[hook],
                    default_hooks={"progress": None, "logger": None, "checkpoint": None})
    with pytest.raises(HookError) as caught:
        runner.train()
    original = caught.value.original
    assert isinstance(original, KeyError) and isinstance(original, LogsKeyError)
    message = ("'val_acc' is not in logs; its keys: 'loss', 'val_loss', 'val_accuracy' "
               "(did you mean 'val_accuracy', 'val_loss'?)")
    assert str(original) == message
    assert hook.found == ["absent", False, message]
    assert message in str(caught.value)


def test_a_missing_key_reads_no_value():
    class Counted(torch.Tensor):
        reads = 0

        def item(self):
            Counted.reads += 1
            return super().item()

    logs = Logs({"loss": torch.tensor(0.5).as_subclass(Counted)})
    assert "acc" not in logs and Counted.reads == 0
    with pytest.raises(KeyError, match="its keys: 'loss'"):
        logs["acc"]
    assert Counted.reads == 0
    assert logs["loss"] == 0.5 and Counted.reads == 1  # the one sync of the first read
    with pytest.raises(KeyError, match=r"'x' is not in logs; its keys: none$"):
        Logs()["x"]
