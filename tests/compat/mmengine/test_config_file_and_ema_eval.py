"""``Config.fromfile`` / ``merge_from_dict`` / ``dump``, and MMEngine's EMAHook evaluating a
checkpoint loaded before ``test()`` / ``val()`` (``before_run`` has not built the average)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError
from hookline.compat.mmengine.config import Config
from hookline.compat.mmengine.hooks import EMAHook
from hookline.engine.checkpoint import load_checkpoint_file

from ..conftest import make_runner, toy_data


def test_fromfile_reads_yaml_as_hookline_does(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("optimizer: {type: SGD, lr: 1e-2}\n", encoding="utf-8")
    assert Config.fromfile(path).optimizer.lr == 0.01  # a float, as in hookline train
    path.write_text("max_epochs: 2\nmax_epochs: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="key 'max_epochs' appears twice"):
        Config.fromfile(path)
    path.write_text("_base_: [base.yaml]\nmax_epochs: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="_base_ .* is not supported"):
        Config.fromfile(path)
    with pytest.raises(ConfigError, match="unexpected argument.*'bogus'.*import_custom_modules"):
        Config.fromfile(path, bogus=True)
    (tmp_path / "run.py").write_text("max_epochs = 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="Python configs are not supported: write the same keys"):
        Config.fromfile(tmp_path / "run.py", import_custom_modules=False)


def test_merge_from_dict_sets_dotted_keys_and_dump_writes_what_fromfile_reads(tmp_path):
    cfg = Config({"model": {"type": "Net", "depth": 18}, "hooks": [{"type": "A", "interval": 1}]})
    cfg.merge_from_dict({"model.depth": 50, "model": {"width": 2}, "hooks.0.interval": 5,
                         "optimizer.lr": 0.1})
    assert cfg.to_dict() == {"model": {"type": "Net", "depth": 50, "width": 2},
                             "hooks": [{"type": "A", "interval": 5}], "optimizer": {"lr": 0.1}}
    with pytest.raises(ConfigError, match="'3' is not an index of a list of 1 item"):
        cfg.merge_from_dict({"hooks.3.interval": 1})
    with pytest.raises(ConfigError, match="allow_list_keys=True"):
        cfg.merge_from_dict({"hooks.0.interval": 1}, allow_list_keys=False)
    for name in ("out.yaml", "out.json"):
        assert cfg.dump(tmp_path / name) is None
        assert Config.fromfile(tmp_path / name) == cfg
    assert "depth: 50" in cfg.dump()


def test_ema_hook_evaluates_a_checkpoint_loaded_before_test_and_val(tmp_path):
    trained = make_runner(tmp_path / "train", hooks=[EMAHook(momentum=0.5)])
    trained.train()
    trained.save_checkpoint(tmp_path, "ema.pth")
    saved = load_checkpoint_file(tmp_path / "ema.pth")
    loader = DataLoader(toy_data(), batch_size=32)
    hook = EMAHook(momentum=0.5)
    runner = make_runner(tmp_path / "eval", hooks=[hook], val_dataloader=loader,
                         test_dataloader=loader)
    runner.load_checkpoint(tmp_path / "ema.pth")  # before any run: no before_run yet
    assert torch.equal(hook.ema_model.module.weight, saved["state_dict"]["weight"])
    seen = []
    runner.on("after_test_epoch", lambda r, metrics=None: seen.append(r.model.weight.clone()))
    runner.test()
    runner.val()
    # the averaged weights (MMEngine's state_dict) were evaluated, and are back afterwards
    assert torch.equal(seen[0], saved["state_dict"]["weight"])
    assert torch.equal(runner.model.weight, saved["state_dict"]["weight"])
