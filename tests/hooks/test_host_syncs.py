"""No host-device synchronisation on iterations that do not log or checkpoint.

The product's promise: with the default hooks (and EMAHook,
CheckInvalidLossHook, GradientMonitorHook and a Keras callback added), an
iteration that is neither a log step nor a checkpoint step reads nothing back
from the device. Two checks of it:

* on every machine (CI included), a ``TorchFunctionMode`` records each call
  that would read a device tensor back to the host (``item``, ``tolist``,
  ``bool()``, ``float()``, ``int()``, formatting, ``numpy``, ``cpu``, ``to``)
  made by code outside torch itself, and the iteration it happened in;
* on a CUDA machine, the same runs under ``torch.cuda.set_sync_debug_mode("error")``
  on the quiet iterations, so any synchronising CUDA call (including ones made
  inside torch on hookline's behalf) raises.

Both compare against the iterations the logger wrote to ``metrics.jsonl``:
the only iterations allowed to read back.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner
from hookline.demo.model import DigitsCNN
from hookline.engine.logs import flush_logger
from hookline.hooks import CheckInvalidLossHook, EMAHook, GradientMonitorHook, KerasCallback

from ._toy import one_thread  # noqa: F401  (autouse: one thread)

READS_BACK = frozenset({"item", "tolist", "__bool__", "__float__", "__int__", "__index__",
                        "__format__", "numpy", "__array__", "cpu", "to"})
TORCH_DIR = os.path.dirname(torch.__file__)
LOG_INTERVAL = 4  # 8 iterations an epoch: the logger's and the hooks' intervals line up
# CheckInvalidLossHook reads its losses every `interval` iterations by design (interval=1, its
# default, reads every iteration so a NaN never reaches the weights): here it reads on log steps.


class ReadBackRecorder(TorchFunctionMode):
    """Records (iteration, where) for every host read-back made by code outside torch."""

    def __init__(self) -> None:
        super().__init__()
        self.iteration: int | None = None
        self.calls: list[tuple[int, str, str]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if self.iteration is not None and name in READS_BACK and self._device_to_host(name, args,
                                                                                      kwargs):
            caller = inspect.currentframe().f_back  # the frame that made the call
            while caller is not None and caller.f_code.co_filename.startswith(TORCH_DIR):
                if caller.f_code.co_filename.endswith(("overrides.py", "_tensor.py")):
                    caller = caller.f_back  # torch's own dispatch frames: look past them
                    continue
                break  # torch itself reads back (e.g. inside an optimizer): not ours
            else:
                if caller is not None:
                    where = f"{Path(caller.f_code.co_filename).name}:{caller.f_lineno}"
                    self.calls.append((self.iteration, name, where))
        return func(*args, **(kwargs or {}))

    @staticmethod
    def _device_to_host(name: str, args: tuple, kwargs: dict | None) -> bool:
        """``to`` counts when it names the CPU as a string (``.to("cpu")``): on this machine
        every tensor is on the CPU, so a device taken from a tensor (``x.to(y.device)``) says
        nothing about the GPU case, where it stays on the GPU."""
        if name != "to":
            return True
        target = [a for a in args[1:] if isinstance(a, str)]
        device = (kwargs or {}).get("device", target[0] if target else None)
        return isinstance(device, str) and device.startswith("cpu")


class MarkIterations(Hook):
    """Tells the recorder which iteration runs; turns CUDA's sync check on for quiet ones.

    Runs first at ``before_train_iter``; its partner :class:`EndIteration` runs
    last at ``after_train_iter``, so every hook of the iteration is inside.
    """

    priority = "HIGHEST"

    def __init__(self, recorder: ReadBackRecorder, quiet: set[int] | None = None) -> None:
        self.recorder = recorder
        self.quiet = quiet

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.recorder.iteration = runner.iter
        if self.quiet is not None and runner.iter in self.quiet:
            torch.cuda.set_sync_debug_mode("error")


class EndIteration(Hook):
    priority = "LOWEST"

    def __init__(self, recorder: ReadBackRecorder, cuda: bool) -> None:
        self.recorder = recorder
        self.cuda = cuda

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.recorder.iteration = None
        if self.cuda:
            torch.cuda.set_sync_debug_mode("default")
            # the sync debug mode is the process's: the logger's writer thread reads this log
            # step's values (its one sync) before a quiet iteration turns "error" on
            flush_logger(runner.logger)


def markers(recorder: ReadBackRecorder, quiet: set[int] | None = None) -> list[Hook]:
    return [MarkIterations(recorder, quiet), EndIteration(recorder, quiet is not None)]


class BatchCounter(KerasCallback):
    """A Keras callback the way users write one: counts batches, reads logs at epoch end."""

    def __init__(self) -> None:
        self.batches = 0
        self.epoch_losses: list[float] = []

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_losses.append(float(logs["loss"]))


class MidCNN(torch.nn.Module):
    """A mid-size CNN: four conv blocks with BatchNorm, on 3x32x32 inputs."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[torch.nn.Module] = []
        channels = 3
        for width in (16, 32, 64, 64):
            layers += [torch.nn.Conv2d(channels, width, 3, padding=1), torch.nn.BatchNorm2d(width),
                       torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
            channels = width
        self.features = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(64 * 2 * 2, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def _data(shape: tuple[int, ...], n: int = 128) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(n, *shape, generator=generator),
                         torch.randint(0, 10, (n,), generator=generator))


MODELS = {"digits": (DigitsCNN, (1, 8, 8)), "mid-cnn": (MidCNN, (3, 32, 32))}


def _train(tmp_path: Path, model_name: str, device: str, recorder: ReadBackRecorder,
           quiet: set[int] | None = None) -> tuple[Runner, BatchCounter]:
    torch.manual_seed(0)
    build, shape = MODELS[model_name]
    keras = BatchCounter()
    pin = device.startswith("cuda")
    runner = Runner(
        build(), optimizer={"type": "Adam", "lr": 1e-3}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(_data(shape), batch_size=16, shuffle=True, pin_memory=pin),
        val_dataloader=DataLoader(_data(shape, 32), batch_size=32, pin_memory=pin),
        metrics={"accuracy": "accuracy"}, max_epochs=2, device=device, work_dir=tmp_path,
        param_scheduler={"type": "CosineAnnealingLR", "T_max": 16, "by_epoch": False},
        default_hooks={"logger": {"interval": LOG_INTERVAL}, "progress": None},
        hooks=[*markers(recorder, quiet), EMAHook(), CheckInvalidLossHook(interval=LOG_INTERVAL),
               GradientMonitorHook(interval=LOG_INTERVAL), keras],
    )
    with recorder:
        runner.train()
    return runner, keras


def _logged_iterations(work_dir: Path) -> set[int]:
    """The 0-based iterations the logger wrote a train record for."""
    records = [json.loads(line) for line in (work_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["iter"] - 1 for r in records if r.get("mode") == "train"}


@pytest.mark.parametrize("model_name", sorted(MODELS))
def test_quiet_iterations_read_nothing_back(tmp_path, model_name):
    recorder = ReadBackRecorder()
    runner, keras = _train(tmp_path, model_name, "cpu", recorder)
    assert runner.iter == 16 and keras.batches == 16 and len(keras.epoch_losses) == 2
    logged = _logged_iterations(tmp_path)
    assert logged and len(logged) < runner.iter  # some iterations log, most do not
    quiet_reads = [call for call in recorder.calls if call[0] not in logged]
    assert quiet_reads == []
    assert {call[0] for call in recorder.calls} <= logged


def test_the_recorder_sees_a_hook_that_reads_back(tmp_path):
    """The check can fail: a hook calling loss.item() every iteration is caught."""

    class Chatty(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            self.last = outputs["loss"].item()

    recorder = ReadBackRecorder()
    torch.manual_seed(0)
    runner = Runner(DigitsCNN(), optimizer={"type": "SGD", "lr": 0.01},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=3, work_dir=tmp_path,
                    train_dataloader=DataLoader(_data((1, 8, 8), 48), batch_size=16),
                    default_hooks={"logger": None, "progress": None, "checkpoint": None},
                    hooks=[*markers(recorder), Chatty()])
    with recorder:
        runner.train()
    assert [(it, name) for it, name, _ in recorder.calls] == [(0, "item"), (1, "item"),
                                                             (2, "item")]
    assert all(where.startswith("test_host_syncs.py:") for _, _, where in recorder.calls)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("model_name", sorted(MODELS))
def test_no_cuda_sync_on_quiet_iterations(tmp_path, model_name):
    """On CUDA, quiet iterations run under set_sync_debug_mode("error"): any sync raises."""
    first = tmp_path / "probe"
    recorder = ReadBackRecorder()
    runner, _ = _train(first, model_name, "cuda", recorder)  # which iterations log
    quiet = set(range(runner.iter)) - _logged_iterations(first)
    second = tmp_path / "checked"
    runner, _ = _train(second, model_name, "cuda", ReadBackRecorder(), quiet=quiet)
    assert runner.iter == 16
    assert _logged_iterations(second) == _logged_iterations(first)
