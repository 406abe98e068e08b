"""Bad configs, written as faults: each is one ConfigError naming the key and what is accepted,
raised before a model or dataset is built and before anything is written to the work dir.

The table covers every kind of bad config issue 11 names (hook constructor values, what
training needs, metric names, torch argument values, default hook keys, the device, the work
dir, the file's encoding, ``--set`` values) and more of each kind; the Python API table does
the same for ``Runner(...)``; a few real ``hookline train`` subprocesses check the command line.
"""

from __future__ import annotations

import copy
import inspect
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import hookline.hooks
from hookline import ConfigError, Runner
from hookline.app.config import build_runner, load_config
from hookline.app.config_check.hooks import is_builtin_hook
from hookline.demo.model import DigitsCNN
from hookline.demo.registry import DigitsDataset, demo_config_path
from hookline.engine.registries import DATASETS, HOOKS, MODELS
from hookline.hooks import CheckpointHook

CUDA = torch.cuda.is_available()


class CountedCNN(DigitsCNN):
    """The demo model, counting how often it is built."""

    built = 0

    def __init__(self, num_classes: int = 10) -> None:
        type(self).built += 1
        super().__init__(num_classes)


class CountedDigits(DigitsDataset):
    """The demo data, counting how often it is loaded."""

    built = 0

    def __init__(self, split: str = "train", val_fraction: float = 0.2, seed: int = 0) -> None:
        type(self).built += 1
        super().__init__(split, val_fraction, seed)


MODELS.register(CountedCNN, name="CountedCNNForConfigErrors", force=True)
DATASETS.register(CountedDigits, name="CountedDigitsForConfigErrors", force=True)


def base_config() -> dict:
    """The demo config on the counting model and data."""
    cfg = load_config(demo_config_path())
    cfg["model"] = {"type": "CountedCNNForConfigErrors"}
    for key in ("train_dataloader", "val_dataloader"):
        cfg[key]["dataset"]["type"] = "CountedDigitsForConfigErrors"
    cfg.pop("num_threads")
    return cfg


_DELETE = object()


def set_(path: str, value: Any) -> Callable[[dict, Path], None]:
    """A change of the config: ``value`` at the dotted ``path`` (``_DELETE`` removes it)."""
    def change(cfg: dict, _tmp: Path) -> None:
        parts = path.split(".")
        node: Any = cfg
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if value is _DELETE:
            node.pop(parts[-1])
        else:
            node[parts[-1]] = value
    return change


def both(*changes: Callable[[dict, Path], None]) -> Callable[[dict, Path], None]:
    def change(cfg: dict, tmp: Path) -> None:
        for each in changes:
            each(cfg, tmp)
    return change


def hook(**spec: Any) -> Callable[[dict, Path], None]:
    return set_("hooks", [spec])


def a_file(name: str) -> Callable[[dict, Path], None]:
    """A change that puts a file where the work dir (or a folder above it) would go."""
    def change(_cfg: dict, tmp: Path) -> None:
        (tmp / name).write_text("not a folder")
    return change


VAL = {"dataset": {"type": "CountedDigitsForConfigErrors", "split": "val"}, "batch_size": 128}
WRAPPER = {"optimizer": {"type": "Adam", "lr": 0.003}}
NAN = float("nan")

# (name, change, fragments the one-line message must hold: the key, and what is accepted)
CASES: list[tuple[str, Callable[[dict, Path], None], tuple[str, ...]]] = [
    # -- hook arguments: checked by constructing each built-in hook from its config
    ("EMAHook decay 2.0", hook(type="EMAHook", decay=2.0), ("hooks[0]", "decay", "[0, 1]", "2.0")),
    ("EMAHook begin_iter -1", hook(type="EMAHook", begin_iter=-1), ("begin_iter", ">= 0")),
    ("LoggerHook interval 0", set_("default_hooks.logger.interval", 0),
     ("default_hooks.logger", "interval", ">= 1", "got 0")),
    ("CheckpointHook interval -1", set_("default_hooks.checkpoint.interval", -1),
     ("default_hooks.checkpoint", "interval", ">= 1")),
    ("CheckpointHook max_keep_ckpts 0", set_("default_hooks.checkpoint.max_keep_ckpts", 0),
     ("max_keep_ckpts", "-1 (keep all)")),
    ("CheckpointHook by_epoch 'no'", set_("default_hooks.checkpoint.by_epoch", "no"),
     ("by_epoch", "true or false", "'no'")),
    ("EarlyStoppingHook patience -1", hook(type="EarlyStoppingHook", monitor="loss", patience=-1),
     ("hooks[0]", "patience", ">= 1")),
    ("EarlyStoppingHook min_delta NaN", hook(type="EarlyStoppingHook", monitor="loss",
                                            min_delta=NAN), ("min_delta", "finite number >= 0")),
    ("ProfilerHook wait -1", hook(type="ProfilerHook", wait=-1), ("wait", ">= 0")),
    ("EvalHook start -1", hook(type="EvalHook", dataloader=VAL, start=-1), ("start", ">= 0")),
    ("EvalHook dataloader shuffle 'yes'", hook(type="EvalHook", dataloader={**VAL, "shuffle": "yes"}),
     ("hooks[0].dataloader.shuffle", "true or false")),
    # -- what training needs (hookline train)
    ("no train_dataloader", set_("train_dataloader", _DELETE), ("train_dataloader", "e.g.")),
    ("no max_epochs", set_("max_epochs", _DELETE), ("max_epochs or max_iters",)),
    ("no optimizer", both(set_("optimizer", _DELETE), set_("param_scheduler", _DELETE)),
     ("needs an optimizer", "optimizer: {type:")),
    ("no loss_fn", set_("loss_fn", _DELETE), ("loss_fn", "training_step")),
    # -- what hooks need from the rest of the config
    ("EarlyStopping without val_dataloader",
     both(set_("val_dataloader", _DELETE), hook(type="EarlyStoppingHook", monitor="loss")),
     ("hooks[0]", "EarlyStoppingHook", "needs a val_dataloader")),
    ("CheckpointLoaderHook missing path", hook(type="CheckpointLoaderHook", path="no/such.pth"),
     ("hooks[0].path", "'no/such.pth'", "not found")),
    ("save_best names no metric", set_("default_hooks.checkpoint.save_best", "acc"),
     ("default_hooks.checkpoint.save_best", "'acc'", "did you mean 'accuracy'", "accuracy, loss")),
    ("monitor names no metric", hook(type="EarlyStoppingHook", monitor="f1"),
     ("hooks[0].monitor", "'f1'", "accuracy, loss")),
    ("ReduceLROnPlateau monitor names no metric",
     set_("param_scheduler", {"type": "ReduceLROnPlateau", "monitor": "val_acc"}),
     ("param_scheduler.monitor", "'val_acc'", "accuracy, loss")),
    ("EvalHook save_best not among its metrics",
     hook(type="EvalHook", dataloader=VAL, metrics={"mse": "mse"}, save_best="accuracy"),
     ("hooks[0].save_best", "'accuracy'", "loss, mse")),
    # -- optimizer, scheduler, loss, dataloader arguments: checked on dummies, torch's checks too
    ("lr -0.1", set_("optimizer.lr", -0.1), ("optimizer.lr", ">= 0", "-0.1")),
    ("lr 'fast'", set_("optimizer.lr", "fast"), ("optimizer.lr", "must be a number", "'fast'")),
    ("lr NaN", set_("optimizer.lr", NAN), ("optimizer.lr", "NaN")),
    ("lr inf", set_("optimizer.lr", float("inf")), ("optimizer.lr", "finite")),
    ("betas [0.9]", set_("optimizer.betas", [0.9]), ("optimizer.betas", "2 numbers", "[0.9]")),
    ("weight_decay -1 (torch's own check)", set_("optimizer.weight_decay", -1.0),
     ("optimizer", "Adam rejects", "weight_decay=-1.0", "Invalid weight_decay")),
    ("amsgrad 'yes'", set_("optimizer.amsgrad", "yes"), ("optimizer.amsgrad", "true or false")),
    ("T_max -5", set_("param_scheduler.T_max", -5), ("param_scheduler.T_max", ">= 1", "-5")),
    ("eta_min -1", set_("param_scheduler.eta_min", -1.0), ("param_scheduler.eta_min", ">= 0")),
    ("StepLR gamma 0", set_("param_scheduler", {"type": "StepLR", "step_size": 2, "gamma": 0}),
     ("param_scheduler.gamma", "> 0")),
    ("MultiStepLR milestones [-1]",
     set_("param_scheduler", [{"type": "MultiStepLR", "milestones": [-1]}]),
     ("param_scheduler[0].milestones", ">= 0")),
    ("scheduler by_epoch 'no'", set_("param_scheduler.by_epoch", "no"),
     ("param_scheduler.by_epoch", "true or false")),
    ("LinearLR start_factor 2 (torch's own check)",
     set_("param_scheduler", {"type": "LinearLR", "start_factor": 2.0}),
     ("param_scheduler", "LinearLR rejects", "start_factor=2.0")),
    ("reduction 'avg'", set_("loss_fn.reduction", "avg"),
     ("loss_fn.reduction", "'none', 'mean', 'sum'", "'avg'")),
    ("label_smoothing 2", set_("loss_fn.label_smoothing", 2.0), ("loss_fn.label_smoothing", "[0, 1]")),
    ("num_workers -2", set_("train_dataloader.num_workers", -2),
     ("train_dataloader.num_workers", ">= 0", "-2")),
    ("shuffle 'yes'", set_("train_dataloader.shuffle", "yes"),
     ("train_dataloader.shuffle", "true or false", "'yes'")),
    ("batch_size 0", set_("val_dataloader.batch_size", 0), ("val_dataloader.batch_size", ">= 1")),
    ("timeout -1", set_("train_dataloader.timeout", -1), ("train_dataloader.timeout", ">= 0")),
    ("prefetch_factor without workers (torch's own check)",
     set_("train_dataloader.prefetch_factor", 2),
     ("train_dataloader", "DataLoader rejects", "prefetch_factor")),
    ("clip max_norm -1",
     both(set_("optimizer", _DELETE), set_("param_scheduler", _DELETE),
          set_("optim_wrapper", {**WRAPPER, "clip_grad": {"max_norm": -1.0}})),
     ("optim_wrapper.clip_grad.max_norm", "> 0", "-1.0")),
    ("accumulative_counts 0",
     both(set_("optimizer", _DELETE), set_("param_scheduler", _DELETE),
          set_("optim_wrapper", {**WRAPPER, "accumulative_counts": 0})),
     ("optim_wrapper.accumulative_counts", ">= 1")),
    # -- model and dataset classes: their check_args runs, nothing is built or loaded
    ("model num_classes 0", set_("model.num_classes", 0), ("model", "num_classes", ">= 1")),
    ("dataset split 'tarin'", set_("train_dataloader.dataset.split", "tarin"),
     ("train_dataloader.dataset", "split", "train, val, test, all")),
    # -- default hook keys
    ("default_hooks.progres: null", set_("default_hooks.progres", None),
     ("'progres'", "did you mean 'progress'")),
    ("default_hooks.loggr without type", set_("default_hooks.loggr", {"interval": 5}),
     ("default_hooks.loggr", "did you mean 'logger'")),
    # -- the device and the work dir
    ("device cuda:99", set_("device", "cuda:99"), ("device 'cuda:99'", "available here: auto, cpu")),
    ("work dir is a file", a_file("taken"), ("work_dir", "is a file")),
    ("work dir under a file", a_file("taken"), ("work_dir", "under the file")),
    ("work dir under /proc", set_("work_dir", "/proc/hookline-config-errors"),
     ("work_dir '/proc/hookline-config-errors'", "cannot be written")),
    # -- top-level values
    ("seed 'abc'", set_("seed", "abc"), ("seed", "an int")),
    ("max_epochs 0", set_("max_epochs", 0), ("max_epochs", ">= 1")),
    ("fast_data 'no'", set_("fast_data", "no"), ("fast_data must be true or false", "'no'")),
    ("signal_sync_interval 0", set_("signal_sync_interval", 0),
     ("signal_sync_interval must be an int >= 1", "got 0")),
]
if not CUDA:
    CASES.append(("device cuda without CUDA", set_("device", "cuda"),
                  ("device 'cuda'", "not available", "available here: auto, cpu")))
WORK_DIRS = {"work dir is a file": "taken", "work dir under a file": "taken/run"}


@pytest.mark.parametrize("name, change, fragments", CASES, ids=[case[0] for case in CASES])
def test_each_bad_config_is_one_error_before_anything_is_built_or_written(
        tmp_path, name, change, fragments):
    cfg = base_config()
    change(cfg, tmp_path)
    work_dir = tmp_path / WORK_DIRS.get(name, "run")
    CountedCNN.built = CountedDigits.built = 0
    with pytest.raises(ConfigError) as info:
        build_runner(cfg, work_dir=None if "work_dir" in cfg else work_dir, for_training=True)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    assert CountedCNN.built == 0 and CountedDigits.built == 0  # nothing was built
    written = [p for p in tmp_path.rglob("*") if p.name != "taken"]
    assert written == []  # nothing was written: no work dir, no log.txt, no config.yaml


def test_the_unchanged_base_config_passes_and_builds(tmp_path):
    runner = build_runner(base_config(), work_dir=tmp_path / "run", for_training=True)
    assert CountedCNN.built == 1 and (tmp_path / "run" / "config.yaml").exists()
    del runner


def test_a_config_file_that_is_not_utf8_is_one_error(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("# r\xe9glages\nmodel: {type: DigitsCNN}\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at offset 3\); save it as "
                                          "UTF-8"):
        build_runner(path, work_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()
    path.write_bytes(b"\xef\xbb\xbfmodel: {type: DigitsCNN}\n")  # a UTF-8 byte-order mark is fine
    assert load_config(path) == {"model": {"type": "DigitsCNN"}}


def test_an_override_with_the_wrong_type_is_one_error(tmp_path):
    with pytest.raises(ConfigError, match=r"^optimizer.lr must be a number \(Adam's default is "
                                          r"0.001\), got 'fast'$"):
        build_runner(base_config(), work_dir=tmp_path / "run", overrides=["optimizer.lr=fast"])
    assert not (tmp_path / "run").exists()


def test_what_training_needs_is_only_required_for_training(tmp_path):
    cfg = base_config()
    del cfg["train_dataloader"], cfg["max_epochs"]
    runner = build_runner(cfg, work_dir=tmp_path / "run")  # validation only: fine
    assert runner.train_loop is None


def test_a_model_with_its_own_steps_needs_no_loss_and_its_metric_names_are_not_guessed(tmp_path):
    class OwnSteps(DigitsCNN):
        def training_step(self, batch):
            return nn.functional.cross_entropy(self(batch[0]), batch[1])

        def validation_step(self, batch):
            return {"top1": (self(batch[0]).argmax(1) == batch[1]).float().mean()}

    MODELS.register(OwnSteps, name="OwnStepsForConfigErrors", force=True)
    cfg = base_config()
    cfg.update(model={"type": "OwnStepsForConfigErrors"}, metrics=None, loss_fn=None)
    cfg["default_hooks"]["checkpoint"]["save_best"] = "top1"
    build_runner(cfg, work_dir=tmp_path / "run", for_training=True)


def test_every_builtin_hook_constructs_without_side_effects(tmp_path, monkeypatch):
    """The config check constructs built-in hooks: their constructors must only validate."""
    monkeypatch.chdir(tmp_path)
    needs = {"monitor": "loss", "dataloader": VAL, "path": "x.pth", "stage": "before_run",
             "fn": lambda runner: None, "callback": object()}
    built = []
    for name in HOOKS.names():
        target = HOOKS.get(name)
        if not is_builtin_hook(target):
            continue
        required = {key: needs[key] for key, p in inspect.signature(target).parameters.items()
                    if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD}
        try:
            target(**required)
        except ConfigError:  # an adapter that needs a real object (KerasCallback)
            continue
        built.append(name)
    assert len(built) >= 30
    assert list(tmp_path.iterdir()) == []


# -- the Python API --------------------------------------------------------------------------------
DATA = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
API_CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("optimizer without type", {"optimizer": {"lr": "fast"}}, ("optimizer", "no 'type'", "SGD")),
    ("optimizer lr 'fast'", {"optimizer": {"type": "SGD", "lr": "fast"}},
     ("optimizer.lr", "must be a number", "'fast'")),
    ("optimizer class", {"optimizer": torch.optim.SGD}, ("optimizer is the class SGD",)),
    ("loss_fn a string", {"loss_fn": "cross_entropy"},
     ("loss_fn", "'cross_entropy'", "did you mean {'type': 'CrossEntropyLoss'}")),
    ("loss_fn the class", {"loss_fn": nn.CrossEntropyLoss},
     ("loss_fn is the class CrossEntropyLoss", "CrossEntropyLoss()")),
    ("hooks a string", {"hooks": "EMAHook"}, ("hooks must be a list", "hooks=[{'type': 'EMAHook'}]")),
    ("hooks one config", {"hooks": {"type": "EMAHook"}}, ("hooks must be a list", "wrap it")),
    ("hooks a class", {"hooks": [CheckpointHook]}, ("hooks[0] is the class CheckpointHook",)),
    ("seed 'abc'", {"seed": "abc"}, ("seed must be an int", "'abc'")),
    ("work_dir 123", {"work_dir": 123}, ("work_dir must be a folder path", "123")),
    ("default_hooks loggr", {"default_hooks": {"loggr": None}},
     ("'loggr'", "did you mean 'logger'")),
    ("default_hooks a string", {"default_hooks": {"logger": "LoggerHook"}},
     ("default_hooks.logger must be a hook config",)),
    ("device cuda:99", {"device": "cuda:99"}, ("device 'cuda:99'",)),
    ("scheduler T_max -5 on an optimizer object",
     {"param_scheduler": {"type": "CosineAnnealingLR", "T_max": -5}}, ("param_scheduler.T_max",)),
    ("dataloader config num_workers -1",
     {"val_dataloader": {"dataset": DATA, "num_workers": -1}}, ("val_dataloader.num_workers",)),
    ("dataloader a list", {"val_dataloader": [1, 2]}, ("val_dataloader must be a torch DataLoader",)),
    ("model the class", {"model": nn.Linear}, ("model is the class Linear",)),
    ("resume 5", {"resume": 5}, ("resume must be a checkpoint path, 'auto', True or False",)),
    ("fast_data 1", {"fast_data": 1}, ("fast_data must be true or false", "got 1")),
    ("signal_sync_interval 2.5", {"signal_sync_interval": 2.5},
     ("signal_sync_interval must be an int >= 1", "got 2.5")),
]


@pytest.mark.parametrize("name, change, fragments", API_CASES, ids=[c[0] for c in API_CASES])
def test_each_bad_runner_argument_is_one_error_naming_it(tmp_path, name, change, fragments):
    model = nn.Linear(4, 2)
    args: dict[str, Any] = dict(
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss_fn=nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(DATA, batch_size=8), max_epochs=1,
        work_dir=tmp_path / "run", default_hooks={"progress": None})
    args.update(change)
    with pytest.raises(ConfigError) as info:
        Runner(args.pop("model", model), **args)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    assert not (tmp_path / "run").exists()


def test_a_hook_argument_that_is_not_a_bool_is_refused():
    with pytest.raises(ConfigError, match="^CheckpointHook by_epoch must be true or false, got 'no'$"):
        CheckpointHook(by_epoch="no")
    with pytest.raises(ConfigError, match="LoggerHook ignore_last must be true or false"):
        hookline.hooks.LoggerHook(ignore_last=1)


# -- the command line ---------------------------------------------------------------------------------
SCRIPT = Path(sys.executable).with_name("hookline")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hookline.cli"]


def hookline_train(tmp_path: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, "train", str(config), "--work-dir", str(tmp_path / "run"), *args],
                          cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=120)


CLI_CASES = [
    ("--set optimizer.lr=fast", "", ["--set", "optimizer.lr=fast"], "optimizer.lr must be a number"),
    ("non-UTF-8 file", "latin-1", [], "is not UTF-8 text"),
    ("default_hooks typo", "", ["--set", "default_hooks.progres=null"], "did you mean 'progress'"),
    ("training without train_dataloader", "", ["--set", "train_dataloader=null"],
     "training needs train_dataloader"),
]


@pytest.mark.parametrize("name, encoding, args, fragment", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_hookline_train_prints_one_error_line_and_writes_nothing(tmp_path, name, encoding, args,
                                                                 fragment):
    text = "# réglages\n" + yaml.safe_dump(copy.deepcopy(load_config(demo_config_path())))
    config = tmp_path / "run.yaml"
    config.write_bytes(text.encode(encoding or "utf-8"))
    result = hookline_train(tmp_path, config, *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "run").exists()
