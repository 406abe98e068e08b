"""Weights of another library's checkpoint: an MMEngine training checkpoint, whose message hub
holds MMEngine's own classes, loads its weights (``load_from=``, ``load_checkpoint``) with the
foreign objects skipped and never run; resuming from it fails with one clear error.

The checkpoints are written with stand-in ``mmengine`` modules put into ``sys.modules`` for
the ``torch.save`` only, so the process that loads them cannot import the classes they name.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from hookline import Hook
from hookline.compat.mmcv.runner import load_checkpoint as mmcv_load_checkpoint
from hookline.compat.mmengine.runner import load_checkpoint
from hookline.engine.checkpoint import CheckpointError, load_checkpoint_file
from hookline.engine.checkpoint.foreign import (
    ForeignObject,
    load_skipping_foreign,
    restricted_pickle_module,
)
from hookline.hooks import CheckpointLoaderHook

from .toy import Net, make_runner

HISTORY_BUFFER = "mmengine.logging.history_buffer.HistoryBuffer"
CONFIG_DICT = "mmengine.config.config.ConfigDict"


def _fake_mmengine() -> dict[str, types.ModuleType]:
    """Modules named as MMEngine's, with a ``HistoryBuffer`` (numpy arrays inside, as
    MMEngine's) and a ``ConfigDict`` (a dict subclass)."""
    history = types.ModuleType("mmengine.logging.history_buffer")
    config = types.ModuleType("mmengine.config.config")

    class HistoryBuffer:
        def __init__(self, log_history=(), count_history=(), max_length=1000000):
            self._log_history = np.array(log_history)
            self._count_history = np.array(count_history)
            self.max_length = max_length

    class ConfigDict(dict):
        pass

    for cls, module in ((HistoryBuffer, history), (ConfigDict, config)):
        cls.__module__, cls.__qualname__ = module.__name__, cls.__name__
        setattr(module, cls.__name__, cls)
    modules = {name: types.ModuleType(name) for name in ("mmengine", "mmengine.logging",
                                                         "mmengine.config")}
    modules[history.__name__] = history
    modules[config.__name__] = config
    return modules


class Run:
    """Calls ``command`` (os.system) or evaluates ``code`` (eval) when unpickled."""

    def __init__(self, function, argument: str) -> None:
        self.function, self.argument = function, argument

    def __reduce__(self):
        return self.function, (self.argument,)


def write_mmengine_checkpoint(path: Path, monkeypatch: pytest.MonkeyPatch, *, seed: int = 1,
                              extra: dict | None = None, state_dict: bool = True,
                              legacy: bool = False) -> dict[str, torch.Tensor]:
    """An MMEngine-style ``epoch_12.pth`` of a seeded ``Net``; returns its weights."""
    torch.manual_seed(seed)
    model = Net()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with monkeypatch.context() as patch:
        modules = _fake_mmengine()
        for name, module in modules.items():
            patch.setitem(sys.modules, name, module)
        history = modules["mmengine.logging.history_buffer"].HistoryBuffer
        config = modules["mmengine.config.config"].ConfigDict
        checkpoint = {
            "meta": {"epoch": 12, "iter": 960, "cfg": "model = dict(type='Net')",
                     "dataset_meta": config(classes=("a", "b", "c")), "seed": 3},
            "message_hub": {"log_scalars": {"train/loss": history([0.9, 0.7], [1, 1])},
                            "runtime_info": {"epoch": 12, "iter": 960}, "resumed_keys": {}},
            "optimizer": optimizer.state_dict(),
            "param_schedulers": [{"base_lrs": [0.1], "last_epoch": 12}],
            **(extra or {}),
        }
        if state_dict:
            checkpoint["state_dict"] = model.state_dict()
        torch.save(checkpoint, path, _use_new_zipfile_serialization=not legacy)
    assert "mmengine" not in sys.modules
    return weights


class StartWeights(Hook):
    """The model's weights when training starts."""

    def before_train(self, runner) -> None:
        self.weights = {k: v.clone() for k, v in runner.model.state_dict().items()}


def assert_same(weights: dict[str, torch.Tensor], model: torch.nn.Module) -> None:
    state = model.state_dict()
    assert set(state) == set(weights)
    assert all(torch.equal(weights[k], state[k]) for k in weights)


@pytest.fixture
def mmengine_file(tmp_path, monkeypatch) -> tuple[Path, dict[str, torch.Tensor]]:
    path = tmp_path / "mmengine_run" / "epoch_12.pth"
    path.parent.mkdir()
    return path, write_mmengine_checkpoint(path, monkeypatch)


def test_load_from_an_mmengine_checkpoint_trains_from_its_weights(mmengine_file, tmp_path):
    path, weights = mmengine_file
    start = StartWeights()
    runner = make_runner(tmp_path / "run", max_epochs=1, load_from=path, hooks=[start])
    runner.train()
    assert all(torch.equal(weights[k], start.weights[k]) for k in weights)
    assert set(start.weights) == set(weights)
    assert runner.iter > 0 and (runner.epoch, runner.iter) != (12, 960)  # weights only
    log = (tmp_path / "run" / "log.txt").read_text()
    assert (f"{path}: an MMEngine checkpoint; kept its weights, skipped {CONFIG_DICT} (meta), "
            f"{HISTORY_BUFFER} (message_hub)") in log
    assert "mmengine" not in sys.modules  # nothing was imported
    assert importlib.util.find_spec("mmengine") is None  # and nothing could have been


def test_checkpoint_loader_hook_reads_an_mmengine_checkpoint(mmengine_file, tmp_path):
    path, weights = mmengine_file
    start = StartWeights()
    make_runner(tmp_path / "run", max_epochs=1, hooks=[CheckpointLoaderHook(path), start]).train()
    assert all(torch.equal(weights[k], start.weights[k]) for k in weights)


def test_runner_load_checkpoint_weights_only_keeps_numpy_and_placeholders(mmengine_file, tmp_path):
    path, weights = mmengine_file
    runner = make_runner(tmp_path / "run", max_epochs=1)
    checkpoint = runner.load_checkpoint(path, resume=False)
    assert_same(weights, runner.model)
    buffer = checkpoint["message_hub"]["log_scalars"]["train/loss"]
    assert isinstance(buffer, ForeignObject) and buffer.foreign_name == HISTORY_BUFFER
    assert isinstance(buffer.state["_log_history"], np.ndarray)
    assert buffer.state["_log_history"].tolist() == [0.9, 0.7]
    assert checkpoint["meta"]["dataset_meta"].entries == {"classes": ("a", "b", "c")}
    assert checkpoint["optimizer"]["param_groups"][0]["momentum"] == 0.9


@pytest.mark.parametrize("load", [load_checkpoint, mmcv_load_checkpoint], ids=["mmengine", "mmcv"])
def test_compat_load_checkpoint_reads_an_mmengine_checkpoint(mmengine_file, caplog, load):
    path, weights = mmengine_file
    model = Net()
    with caplog.at_level(logging.WARNING, logger="hookline"):
        checkpoint = load(model, path, strict=True)
    assert_same(weights, model)
    assert checkpoint["meta"]["epoch"] == 12
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and HISTORY_BUFFER in warnings[0] and path.name in warnings[0]


def test_a_legacy_format_mmengine_checkpoint_loads_too(tmp_path, monkeypatch):
    path = tmp_path / "legacy.pth"
    weights = write_mmengine_checkpoint(path, monkeypatch, legacy=True)
    model = Net()
    load_checkpoint(model, path)
    assert_same(weights, model)


@pytest.mark.parametrize("resume", ["path", "method"])
def test_resuming_from_an_mmengine_checkpoint_is_one_clear_error(mmengine_file, tmp_path, resume):
    path, _ = mmengine_file
    runner = make_runner(tmp_path / "run", max_epochs=1,
                         resume=path if resume == "path" else None)
    weights_before = {k: v.clone() for k, v in runner.model.state_dict().items()}
    with pytest.raises(CheckpointError) as info:
        if resume == "path":
            runner.train()
        else:
            runner.load_checkpoint(path, resume=True)
    message = str(info.value)
    assert str(path) in message and HISTORY_BUFFER in message
    assert "an MMEngine checkpoint" in message and "load_from=" in message
    assert "load_checkpoint(path, resume=False)" in message
    assert "resuming needs a hookline checkpoint" in message
    assert "weights_only=False" not in message
    assert_same(weights_before, runner.model)


def test_a_strict_load_names_the_class_and_how_to_load_the_weights(mmengine_file):
    path, _ = mmengine_file
    with pytest.raises(CheckpointError) as info:
        load_checkpoint_file(path)
    assert "weights_only" in info.value.reason and "weights_only=False" not in info.value.reason
    assert "resuming needs a hookline checkpoint" in info.value.reason
    assert isinstance(info.value.__cause__, pickle.UnpicklingError)


@pytest.mark.parametrize("how", ["os.system", "eval"])
def test_code_a_foreign_pickle_names_never_runs(tmp_path, monkeypatch, caplog, how):
    marker = tmp_path / "ran.txt"
    payload = (Run(os.system, f"touch {marker}") if how == "os.system"
               else Run(eval, f"__import__('pathlib').Path({str(marker)!r}).touch()"))
    path = tmp_path / "epoch_12.pth"
    weights = write_mmengine_checkpoint(path, monkeypatch, extra={"hooks": {"x": payload}})
    model = Net()
    with caplog.at_level(logging.WARNING, logger="hookline"):
        load_checkpoint(model, path)
    assert not marker.exists()
    assert_same(weights, model)
    name = f"{os.system.__module__}.system" if how == "os.system" else "builtins.eval"
    assert any(f"{name} (hooks)" in r.getMessage() for r in caplog.records)
    start = StartWeights()
    make_runner(tmp_path / "run", max_epochs=1, load_from=path, hooks=[start]).train()
    assert not marker.exists()
    assert all(torch.equal(weights[k], start.weights[k]) for k in weights)


def test_a_foreign_object_in_place_of_a_weight_is_a_clear_error(tmp_path, monkeypatch):
    marker = tmp_path / "ran.txt"
    path = tmp_path / "epoch_12.pth"
    torch.manual_seed(0)
    state = Net().state_dict()
    state["body.0.weight"] = Run(os.system, f"touch {marker}")
    write_mmengine_checkpoint(path, monkeypatch, state_dict=False, extra={"state_dict": state})
    with pytest.raises(CheckpointError, match=r"state_dict\['body.0.weight'\] is a system"):
        make_runner(tmp_path / "run", max_epochs=1, load_from=path).train()
    assert not marker.exists()


def test_a_foreign_file_without_weights_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "hub.pth"
    write_mmengine_checkpoint(path, monkeypatch, state_dict=False)
    with pytest.raises(CheckpointError) as info:
        make_runner(tmp_path / "run", max_epochs=1, load_from=path).train()
    assert "hub.pth" in str(info.value) and "no 'state_dict'" in info.value.reason
    assert HISTORY_BUFFER in info.value.reason
    with pytest.raises(CheckpointError, match="no 'state_dict'"):
        load_checkpoint(Net(), path)


class Caller:
    def __call__(self, value):
        return value


class CalledInstance:
    """Unpickled by calling a ``Caller`` instance: a placeholder cannot stand in for that."""

    def __reduce__(self):
        return Caller(), (1,)


def test_a_foreign_pickle_the_placeholders_cannot_read_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "odd.pth"
    write_mmengine_checkpoint(path, monkeypatch, extra={"odd": CalledInstance()})
    with pytest.raises(CheckpointError) as info:
        make_runner(tmp_path / "run", max_epochs=1, load_from=path).train()
    reason = info.value.reason
    assert f"{__name__}.Caller" in reason and "reading its tensors with those objects skipped " \
        "failed too (TypeError" in reason
    assert "load_from=" not in reason and isinstance(info.value.__cause__, pickle.UnpicklingError)


def test_a_truncated_foreign_file_is_reported_as_truncated(mmengine_file):
    path, _ = mmengine_file
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint_file(path, for_weights=True)


def test_a_plain_mmengine_checkpoint_loads_weights_and_refuses_resume(tmp_path):
    torch.manual_seed(2)
    model = Net()
    path = tmp_path / "plain.pth"
    torch.save({"meta": {"epoch": 3, "iter": 30}, "state_dict": model.state_dict()}, path)
    runner = make_runner(tmp_path / "run", max_epochs=1)
    runner.load_checkpoint(path, resume=False)
    assert_same(model.state_dict(), runner.model)
    with pytest.raises(CheckpointError, match="no 'hookline_version'.*resuming needs a hookline"):
        runner.load_checkpoint(path, resume=True)


def test_build_cannot_set_attributes_of_a_class():
    # GLOBAL torch.Tensor, then BUILD with slot state {"evil": 1}: would set torch.Tensor.evil
    payload = b"\x80\x02ctorch\nTensor\nq\x00N}q\x01X\x04\x00\x00\x00evilq\x02K\x01s\x86q\x03b."
    with pytest.raises(pickle.UnpicklingError, match="refused to set the state"):
        restricted_pickle_module().load(io.BytesIO(payload))
    assert not hasattr(torch.Tensor, "evil")


def test_load_skipping_foreign_never_imports(mmengine_file):
    path, _ = mmengine_file
    loaded = load_skipping_foreign(path)
    assert loaded.library() == "MMEngine"
    assert loaded.skipped == {CONFIG_DICT: ("meta",), HISTORY_BUFFER: ("message_hub",)}
    assert "mmengine" not in sys.modules
