"""MMEngine-style configs: what hookline accepts as MMEngine does, and one clear error for the
rest (keys, nested arguments, refused hooks, the command line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hookline.app import build_runner, load_config, resolve_config
from hookline.app.run_dirs import run_dirs
from hookline.cli import main
from hookline.compat.mmengine.hooks import EMAHook as MMEngineEMAHook
from hookline.core import ConfigError
from hookline.core.registry import default_scope
from hookline.demo.registry import demo_config_path

QUIET = ["--set", "default_hooks.progress=null", "--set", "default_hooks.logger.interval=45"]
SCRIPT = Path(sys.executable).with_name("hookline")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hookline.cli"]


def demo(**changes: Any) -> dict:
    """The demo config, one epoch, with ``changes`` (a value of None removes the key)."""
    cfg = load_config(demo_config_path())
    cfg.update(max_epochs=1, custom_imports=["hookline.compat.mmengine", "hookline.compat.mmcv"])
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


def write(tmp_path: Path, cfg: dict, name: str = "run.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)


def one_error_line(result: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), \
        result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# -- 1. MMEngine's EMAHook under hookline test / val / train --test ------------------------------------
def test_test_val_and_train_test_evaluate_a_run_with_mmengine_ema_hook(tmp_path, capsys):
    config = write(tmp_path, demo(hooks=[{"type": "mmengine.EMAHook", "momentum": 0.001}]))
    work_dir = tmp_path / "out"
    assert main(["train", str(config), "--work-dir", str(work_dir), "--test", *QUIET]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-2].startswith("test: loss ")
    for split in ("test", "val"):
        assert main([split, str(config), "--work-dir", str(work_dir), *QUIET]) == 0, split
        line = capsys.readouterr().out.strip().splitlines()[-2]
        assert line.startswith(f"{split}: loss ") and ", accuracy " in line, line


# -- 2. MMEngine hooks hookline does not port ---------------------------------------------------------
@pytest.mark.parametrize("name, hint", [("ProfilerHook", "use hookline's ProfilerHook"),
                                        ("NPUProfilerHook", "use hookline's ProfilerHook"),
                                        ("NaiveVisualizationHook", "task code"),
                                        ("PrepareTTAHook", "task code")])
def test_an_unported_mmengine_hook_is_one_config_error_naming_the_alternative(name, hint):
    with pytest.raises(ConfigError, match=f"hooks\\[0\\]: MMEngine's {name} is not supported "
                                          f"by hookline: .*{hint}"):
        resolve_config(demo(hooks=[{"type": f"mmengine.{name}"}]))


def test_an_unported_hook_on_the_command_line_is_one_error_line(tmp_path):
    config = write(tmp_path, demo())
    result = cli(tmp_path, "train", str(config), "--work-dir", "out",
                 "--set", "hooks=[{type: mmengine.ProfilerHook}]")
    one_error_line(result, "MMEngine's ProfilerHook is not supported", "hookline's ProfilerHook")
    assert not (tmp_path / "out").exists()


# -- 3. scopes ----------------------------------------------------------------------------------------
def test_scope_keys_build_in_their_scope_as_the_runner_does(tmp_path):
    cfg = demo(hooks=[{"type": "EMAHook", "_scope_": "mmengine", "momentum": 0.01}])
    cfg["model"]["_scope_"] = "mmengine"
    cfg["train_dataloader"]["dataset"]["_scope_"] = "mmengine"
    runner = build_runner(cfg, work_dir=tmp_path)
    assert any(type(hook) is MMEngineEMAHook for hook in runner.hooks)
    cfg["model"]["_scope_"] = "nosuchscope"
    with pytest.raises(ConfigError, match="model._scope_: no model registry has scope "
                                          "'nosuchscope' \\(known scopes: .*mmengine"):
        resolve_config(cfg)


def test_another_scopes_arguments_name_that_scope():
    with pytest.raises(ConfigError, match="hooks\\[0\\]: .*give \\{'type': 'mmcv.EMAHook'\\} for it"):
        resolve_config(demo(hooks=[{"type": "EMAHook", "momentum": 0.0002, "warm_up": 100}]))


def test_default_scope_is_the_scope_the_config_builds_in(tmp_path):
    cfg = demo(default_scope="mmengine", hooks=[{"type": "EMAHook", "momentum": 0.01}],
               param_scheduler=None)  # CosineAnnealingLR would be MMEngine's, which needs T_max
    runner = build_runner(cfg, work_dir=tmp_path)
    assert any(type(hook) is MMEngineEMAHook for hook in runner.hooks)
    assert default_scope() is None  # only while the config is checked and built
    with pytest.raises(ConfigError, match="default_scope: no registry has scope 'mmnothing'"):
        resolve_config(demo(default_scope="mmnothing"))


# -- 4. resume: true / false ----------------------------------------------------------------------------
def test_resume_true_and_false_in_a_config_mean_what_the_runner_reads(tmp_path, capsys):
    config = write(tmp_path, demo(resume=False))
    work_dir = tmp_path / "out"
    assert main(["train", str(config), "--work-dir", str(work_dir), *QUIET]) == 0
    assert main(["train", str(config), "--work-dir", str(work_dir), "--set", "resume=true",
                 "--set", "max_epochs=2", *QUIET]) == 0
    [run] = run_dirs(work_dir)  # resumed in the same run's folder
    assert (run / "epoch_2.pth").exists() and "resumed from" in (run / "log.txt").read_text()
    assert resolve_config(demo(resume=True))["resume"] is True


# -- 5. YAML merge keys -------------------------------------------------------------------------------
def test_a_yaml_merge_key_takes_the_mappings_own_values_and_duplicates_stay_errors(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("train: &dl {batch_size: 16, shuffle: true}\n"
                    "val:\n  <<: *dl\n  shuffle: false\n", encoding="utf-8")
    assert load_config(path)["val"] == {"batch_size": 16, "shuffle": False}
    path.write_text("train: &dl {batch_size: 16}\nval:\n  <<: *dl\n  shuffle: false\n"
                    "  shuffle: true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 5: key 'shuffle' appears twice"):
        load_config(path)


# -- 7. MMEngine's keys -----------------------------------------------------------------------------------
@pytest.mark.parametrize("key, value, fragment", [
    ("val_cfg", {}, "validation runs from val_dataloader"),
    ("test_cfg", {}, "test() runs test_dataloader"),
    ("log_processor", {"window_size": 10}, "default_hooks.logger"),
    ("env_cfg", {"cudnn_benchmark": False}, "torch.backends.cudnn.benchmark"),
    ("launcher", "none", "torchrun"),
    ("log_level", "INFO", "logs at INFO"),
    ("_base_", ["base.py"], "config inheritance is not supported"),
    ("visualizer", {"type": "Visualizer"}, "metrics.jsonl"),
    ("auto_scale_lr", {"base_batch_size": 16}, "base_batch_size"),
])
def test_each_mmengine_top_level_key_says_what_to_write_instead(key, value, fragment):
    with pytest.raises(ConfigError) as info:
        resolve_config(demo(**{key: value}))
    assert f"{key!r}" in str(info.value) and fragment in str(info.value)
    assert "did you mean" not in str(info.value)


def test_experiment_name_names_the_run(tmp_path):
    assert build_runner(demo(experiment_name="exp1"), work_dir=tmp_path).experiment_name == "exp1"
    with pytest.raises(ConfigError, match="experiment_name must be a name"):
        resolve_config(demo(experiment_name=3))


@pytest.mark.parametrize("where, value, fragment", [
    ("optim_wrapper", {"optimizer": {"type": "SGD", "lr": 0.1}, "paramwise_cfg": {}},
     "paramwise_cfg is not supported by hookline: per-parameter"),
    ("param_scheduler", {"type": "mmengine.MultiStepLR", "milestones": [1],
                         "convert_to_iter_based": True}, "convert_to_iter_based is not supported"),
    ("default_hooks.checkpoint.save_begin", 2, "save_begin is not supported"),
    ("default_hooks.checkpoint.published_keys", ["meta"], "published_keys is not supported"),
    ("default_hooks.checkpoint.backend_args", {}, "backend_args is not supported"),
])
def test_unported_mmengine_arguments_name_what_to_use_instead(where, value, fragment):
    cfg = demo()
    if where == "optim_wrapper":
        cfg.pop("optimizer")
    node = cfg
    *parents, last = where.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    with pytest.raises(ConfigError, match=f"MMEngine's {fragment}"):
        resolve_config(cfg)


# -- 8. the command line and smaller keys ---------------------------------------------------------------
def test_a_python_config_and_cfg_options_point_to_the_hookline_way(tmp_path):
    (tmp_path / "mm.py").write_text("model = dict(type='DigitsCNN')\n", encoding="utf-8")
    one_error_line(cli(tmp_path, "train", "mm.py"), "is a Python config", ".yaml or .json")
    result = cli(tmp_path, "train", "--cfg-options", "optimizer.lr=0.1")
    assert result.returncode == 2 and "--set KEY=VALUE" in result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr and not (tmp_path / "work_dirs").exists()


def test_a_random_seed_and_runtime_info_null_are_explained():
    cfg = demo()
    cfg["seed"] = None
    with pytest.raises(ConfigError, match="seed must be an int; hookline always seeds"):
        resolve_config(cfg)
    cfg = demo()
    cfg["default_hooks"]["runtime_info"] = None
    with pytest.raises(ConfigError, match="runtime_info: hookline has no RuntimeInfoHook among"):
        resolve_config(cfg)
