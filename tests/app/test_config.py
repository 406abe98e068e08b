"""Config files: YAML/JSON round trips, --set overrides, early errors with suggestions,
the resolved config in the work dir and in checkpoints."""

from __future__ import annotations

import doctest
import importlib
import json
import textwrap
from pathlib import Path

import pytest
import torch
import yaml

from hookline import ConfigError, Runner
from hookline.app.config import apply_overrides, build_runner, load_config, parse_value, resolve_config
from hookline.engine.registries import MODELS


def small_cfg(**extra) -> dict:
    """A run of a few iterations on the digits (real model, real data)."""
    cfg = {
        "model": {"type": "DigitsCNN"},
        "loss_fn": {"type": "CrossEntropyLoss", "label_smoothing": 0.05},
        "optimizer": {"type": "SGD", "lr": 0.05, "momentum": 0.9},
        "param_scheduler": [{"type": "LinearLR", "start_factor": 0.5, "total_iters": 4,
                             "by_epoch": False}],
        "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"},
                             "batch_size": 64, "shuffle": True},
        "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"}, "batch_size": 128},
        "metrics": {"accuracy": "accuracy"},
        "max_iters": 6,
        "val_interval": 6,
        "seed": 3,
        "device": "cpu",
        "default_hooks": {"progress": None, "checkpoint": {"interval": 3}, "logger": {"interval": 2}},
    }
    cfg.update(extra)
    return cfg


def weights(runner: Runner) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in runner.model.state_dict().items()}


# -- reading files ------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_file_round_trip_reproduces_the_run(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    cfg = small_cfg()
    path.write_text(yaml.safe_dump(cfg) if suffix == ".yaml" else json.dumps(cfg, indent=2))
    assert load_config(path) == cfg

    first = build_runner(path, work_dir=tmp_path / "a")
    first.train()
    saved = tmp_path / "a" / "config.yaml"
    resolved = {**cfg, "work_dir": str(tmp_path / "a"), "default_hooks": {
        "progress": None, "checkpoint": {"type": "CheckpointHook", "interval": 3},
        "logger": {"type": "LoggerHook", "interval": 2}}}
    assert load_config(saved) == first.config == resolved
    # the saved config alone trains the same run again
    second = build_runner(saved, work_dir=tmp_path / "b")
    second.train()
    a, b = weights(first), weights(second)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert first.message_hub.info["val_metrics"] == second.message_hub.info["val_metrics"]
    # ... and every checkpoint carries it as plain data (loads with weights_only=True)
    checkpoint = torch.load(tmp_path / "a" / "iter_6.pth", weights_only=True)
    assert checkpoint["meta"]["config"] == first.config


def test_yaml_reading_rules(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("optimizer: {type: Adam, lr: 1e-3}\nnote: 2024-05-01\nmax_epochs: 10\n")
    cfg = load_config(path)
    assert cfg["optimizer"]["lr"] == 0.001 and isinstance(cfg["optimizer"]["lr"], float)
    assert cfg["note"] == "2024-05-01" and cfg["max_epochs"] == 10

    path.write_text("max_epochs: 2\nseed: 1\nmax_epochs: 3\n")
    with pytest.raises(ConfigError, match=r"line 3: key 'max_epochs' appears twice"):
        load_config(path)
    path.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="cannot parse"):
        load_config(path)
    path.write_text("model: {type: DigitsCNN}\n? [a, b]\n: 1\n")
    with pytest.raises(ConfigError, match=r"line 2: a key must be a name or a number, got the list"):
        load_config(path)
    as_json = tmp_path / "c.json"
    as_json.write_text('{"seed": 0, "max_epochs": 2, "seed": 1}')
    with pytest.raises(ConfigError, match=r"cannot parse .*key 'seed' appears twice"):
        load_config(as_json)
    path.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(path)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=r"\.yaml, \.yml or \.json"):
        load_config(tmp_path / "c.toml")


# -- overrides ------------------------------------------------------------------------------------------
def test_overrides_parse_yaml_values_and_address_nested_items():
    cfg = small_cfg(hooks=[{"type": "CheckpointHook", "interval": 2}])
    out = apply_overrides(cfg, [
        "optimizer.lr=1e-3", "max_iters=8", "train_dataloader.shuffle=false",
        "default_hooks.progress=null", "hooks[0].interval=5", "hooks.0.priority=HIGH",
        "optimizer.weight_decay=0.0001", "metrics={acc: accuracy}", "device=cpu",
        "param_scheduler[0].total_iters=2", "default_hooks.timer.type=IterTimerHook",
    ])
    assert out["optimizer"] == {"type": "SGD", "lr": 0.001, "momentum": 0.9, "weight_decay": 0.0001}
    assert out["max_iters"] == 8 and out["train_dataloader"]["shuffle"] is False
    assert out["default_hooks"]["progress"] is None
    assert out["hooks"] == [{"type": "CheckpointHook", "interval": 5, "priority": "HIGH"}]
    assert out["metrics"] == {"acc": "accuracy"} and out["param_scheduler"][0]["total_iters"] == 2
    assert out["default_hooks"]["timer"] == {"type": "IterTimerHook"}
    assert cfg["optimizer"]["lr"] == 0.05 and cfg["hooks"][0] == {"type": "CheckpointHook", "interval": 2}
    assert [parse_value(v) for v in ("3", "0.5", "-2e-4", "true", "~", "[1, 2]", "a: b: c")] == \
        [3, 0.5, -0.0002, True, None, [1, 2], "a: b: c"]
    assert parse_value("yes") == "yes"  # YAML 1.2: only true / false are booleans


@pytest.mark.parametrize("override, message", [
    ("optimizer.lr", "KEY=VALUE"),
    ("=3", "KEY=VALUE"),
    ("hooks[3].interval=1", "not an index of a list of 1"),
    ("optimizer.lr.x=1", "not a mapping or a list"),
    ("missing[0]=1", "is not set"),
    ("hooks[x]=1", "write list indices"),
])
def test_bad_overrides(override, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        apply_overrides(small_cfg(hooks=[{"type": "CheckpointHook"}]), [override])


def test_overrides_reach_the_runner_and_the_saved_config(tmp_path):
    runner = build_runner(small_cfg(), work_dir=tmp_path,
                          overrides=["optimizer.lr=0.2", "default_hooks.logger.interval=3"])
    assert runner.optimizer.param_groups[0]["initial_lr"] == 0.2
    assert runner.hooks.by_key()["logger"].interval == 3
    saved = load_config(tmp_path / "config.yaml")
    assert saved["optimizer"]["lr"] == 0.2
    # a default hook given without a type keeps its type and default arguments
    assert saved["default_hooks"]["logger"] == {"type": "LoggerHook", "interval": 3}
    assert saved["default_hooks"]["checkpoint"] == {"type": "CheckpointHook", "interval": 3}
    assert saved["work_dir"] == str(tmp_path)


# -- errors before anything is built -------------------------------------------------------------------
class CountedNet(torch.nn.Module):
    built = 0

    def __init__(self) -> None:
        super().__init__()
        CountedNet.built += 1
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


MODELS.register(CountedNet, name="CountedNetForConfigTests", force=True)


@pytest.mark.parametrize("change, message", [
    ({"optimiser": {"type": "SGD"}}, "unknown top-level config key 'optimiser'; did you mean 'optimizer'"),
    ({"custom_hooks": []}, "'custom_hooks': hookline's name for MMEngine's custom_hooks is hooks"),
    ({"hooks": [{"type": "ChekpointHook"}]}, "hooks[0]: unknown hook type 'ChekpointHook'; "
                                             "did you mean 'CheckpointHook'"),
    ({"hooks": [{"type": "CheckpointHook", "intervl": 2}]},
     "hooks[0]: hook type 'CheckpointHook' got unexpected argument(s) 'intervl' (did you mean 'interval'?)"),
    ({"hooks": [{"type": "CheckpointHook", "priority": "HIGHER"}]}, "hooks[0].priority: invalid priority"),
    ({"hooks": {"type": "CheckpointHook"}}, "hooks must be a list"),
    ({"default_hooks": {"logger": {"interval": 1, "by_epcoh": False}}},
     "default_hooks.logger: hook type 'LoggerHook' got unexpected argument(s) 'by_epcoh' "
     "(did you mean 'by_epoch'?)"),
    ({"default_hooks": {"mine": {"interval": 1}}}, "default_hooks.mine has no 'type'"),
    ({"optimizer": {"type": "Adm", "lr": 0.1}}, "optimizer: unknown optimizer type 'Adm'; did you mean"),
    ({"optimizer": {"type": "SGD", "learning_rate": 0.1}}, "optimizer: optimizer type 'SGD' got "
                                                           "unexpected argument(s) 'learning_rate'"),
    ({"optimizer": {"type": "SGD", "lr": 0.1, "params": []}}, "'params' is filled in by the Runner"),
    ({"param_scheduler": {"type": "StepLR", "step": 2}},
     "param_scheduler: param_scheduler type 'StepLR' got unexpected argument(s) 'step' "
     "(did you mean 'step_size'?)"),
    ({"param_scheduler": {"type": "StepLR", "step_size": 2}, "optimizer": None},
     "param_scheduler needs an optimizer"),
    ({"loss_fn": {"type": "CrossEntropy"}}, "loss_fn: unknown loss type 'CrossEntropy'; did you mean "
                                            "'CrossEntropyLoss'"),
    ({"loss_fn": "CrossEntropyLoss"}, "loss_fn must be a mapping with a 'type' key"),
    ({"train_dataloader": {"dataset": {"type": "DigitsDataset", "splt": "train"}}},
     "train_dataloader.dataset: dataset type 'DigitsDataset' got unexpected argument(s) 'splt' "
     "(did you mean 'split'?)"),
    ({"val_dataloader": {"dataset": {"type": "DigitsDataset"}, "batchsize": 8}},
     "val_dataloader: unknown dataloader option 'batchsize'; did you mean 'batch_size'"),
    ({"val_dataloader": {"batch_size": 8}}, "val_dataloader needs a 'dataset' entry"),
    ({"metrics": {"acc": "acuracy"}}, "metrics.acc: unknown metric type 'acuracy'; did you mean 'accuracy'"),
    ({"max_iters": 0}, "max_iters must be an int >= 1"),
    ({"max_epochs": 2}, "give max_epochs or max_iters, not both"),
    ({"seed": "zero"}, "seed must be an int"),
    ({"num_threads": 0}, "num_threads must be an int >= 1"),
    ({"resume": "nowhere.pth"}, "resume: checkpoint 'nowhere.pth' not found"),
    ({"custom_imports": ["no_such_module_xyz"]}, "custom_imports: cannot import 'no_such_module_xyz'"),
])
def test_errors_name_the_place_and_suggest_before_anything_is_built(tmp_path, change, message):
    CountedNet.built = 0
    cfg = {**small_cfg(model={"type": "CountedNetForConfigTests"}), **change}
    with pytest.raises(ConfigError) as info:
        build_runner(cfg, work_dir=tmp_path / "run")
    assert message in str(info.value)
    assert CountedNet.built == 0
    assert not (tmp_path / "run").exists()


def test_model_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown model type 'DigitCNN'; did you mean 'DigitsCNN'"):
        build_runner(small_cfg(model={"type": "DigitCNN"}), work_dir=tmp_path)
    with pytest.raises(ConfigError, match="model type 'DigitsCNN' got unexpected argument.*'classes'.*"
                                          "did you mean 'num_classes'"):
        build_runner(small_cfg(model={"type": "DigitsCNN", "classes": 3}), work_dir=tmp_path)
    cfg = small_cfg()
    del cfg["model"]
    with pytest.raises(ConfigError, match="the config has no 'model'"):
        build_runner(cfg, work_dir=tmp_path)


# -- building ---------------------------------------------------------------------------------------------
def test_from_config_builds_every_part(tmp_path):
    runner = build_runner(small_cfg(param_scheduler={
        "type": "SequentialLR", "milestones": [2],
        "schedulers": [{"type": "LinearLR", "start_factor": 0.5, "total_iters": 2},
                       {"type": "ConstantLR", "factor": 1.0}], "by_epoch": False,
    }), work_dir=tmp_path)
    assert type(runner.model).__name__ == "DigitsCNN"
    assert isinstance(runner.loss_fn, torch.nn.CrossEntropyLoss) and runner.loss_fn.label_smoothing == 0.05
    assert isinstance(runner.optimizer, torch.optim.SGD)
    assert [type(s).__name__ for s in runner.param_schedulers] == ["SequentialLR"]
    assert len(runner.train_dataloader.dataset) == 1438 and runner.train_dataloader.batch_size == 64
    assert len(runner.val_dataloader.dataset) == 181
    assert "progress" not in runner.hooks.by_key()
    runner.train()
    assert runner.iter == 6 and 0.0 <= runner.message_hub.info["val_metrics"]["accuracy"] <= 1.0


def test_custom_imports_register_user_classes(tmp_path, monkeypatch):
    (tmp_path / "my_parts_for_config_test.py").write_text(textwrap.dedent("""
        import torch
        from hookline import Hook
        from hookline.engine.registries import HOOKS, MODELS

        @MODELS.register(force=True)
        class TinyDigits(torch.nn.Module):
            def __init__(self, hidden=8):
                super().__init__()
                self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, hidden),
                                               torch.nn.ReLU(), torch.nn.Linear(hidden, 10))

            def forward(self, x):
                return self.net(x)

        @HOOKS.register(force=True)
        class CountIters(Hook):
            def __init__(self):
                self.count = 0

            def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
                self.count += 1
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = small_cfg(model={"type": "TinyDigits", "hidden": 4}, hooks=[{"type": "CountIters"}],
                    custom_imports={"imports": ["my_parts_for_config_test"]})
    runner = build_runner(cfg, work_dir=tmp_path / "run")
    runner.train()
    assert runner.model.net[1].out_features == 4
    assert [h.count for h in runner.hooks.hooks if type(h).__name__ == "CountIters"] == [6]
    assert runner.config["custom_imports"] == {"imports": ["my_parts_for_config_test"]}


def test_a_custom_import_that_fails_in_its_own_code_is_one_error_naming_file_and_line(
        tmp_path, monkeypatch):
    (tmp_path / "parts_with_syntax_error.py").write_text("import torch\ndef broken(:\n")
    (tmp_path / "parts_that_raise.py").write_text("import torch\nraise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"custom_imports: 'parts_with_syntax_error' has a syntax "
                                          r"error at .*parts_with_syntax_error.py, line 2"):
        build_runner(small_cfg(custom_imports=["parts_with_syntax_error"]), work_dir=tmp_path / "a")
    with pytest.raises(ConfigError, match=r"custom_imports: importing 'parts_that_raise' raised "
                                          r"RuntimeError: boom \(.*parts_that_raise.py, line 2\)"):
        build_runner(small_cfg(custom_imports=["parts_that_raise"]), work_dir=tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_num_threads_sets_torch_threads(tmp_path):
    before = torch.get_num_threads()
    try:
        runner = build_runner(small_cfg(num_threads=1), work_dir=tmp_path)
        assert torch.get_num_threads() == 1 and runner.config["num_threads"] == 1
    finally:
        torch.set_num_threads(before)


def test_python_objects_in_a_config_are_kept_and_saved_as_text(tmp_path):
    loss = torch.nn.CrossEntropyLoss()
    runner = build_runner(small_cfg(loss_fn=loss), work_dir=tmp_path)
    assert runner.loss_fn is loss
    assert runner.config["loss_fn"] == "CrossEntropyLoss()"
    assert load_config(tmp_path / "config.yaml")["loss_fn"] == "CrossEntropyLoss()"


def test_resume_argument_continues_a_run(tmp_path):
    build_runner(small_cfg(), work_dir=tmp_path).train()
    again = build_runner(small_cfg(max_iters=9), work_dir=tmp_path, resume="auto")
    again.train()
    assert again.iter == 9 and again.config["resume"] == "auto"
    assert torch.load(tmp_path / "iter_9.pth", weights_only=True)["meta"]["config"]["max_iters"] == 9


@pytest.mark.parametrize("name", ["hookline.app.config", "hookline.app.config_check",
                                  "hookline.app.commands", "hookline.demo.registry"])
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_annotated_config_in_docs_cli_md_is_valid(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    block = next(b for b in text.split("```yaml\n")[1:] if b.startswith("custom_imports"))
    path = tmp_path / "documented.yaml"
    path.write_text(block.split("```", 1)[0])
    cfg = load_config(path)
    assert cfg["custom_imports"] == ["my_project.models"]
    assert cfg["optimizer"]["weight_decay"] == 1e-4
    del cfg["custom_imports"]  # the documented module does not exist here
    resolved = resolve_config(cfg, work_dir=tmp_path)
    assert resolved["default_hooks"]["checkpoint"]["type"] == "CheckpointHook"
    runner = build_runner(cfg, work_dir=tmp_path)
    assert [type(s).__name__ for s in runner.param_schedulers] == ["LinearLR", "MultiStepLR"]
    assert type(runner.hooks.by_key()["logger"]).__name__ == "LoggerHook"
