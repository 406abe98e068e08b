"""What the compat layers do not port gives one error naming the hookline way (docs/porting.md,
"Not supported"): an ImportError for an import, a ConfigError for a config."""

from __future__ import annotations

import importlib
import sys

import pytest

import hookline.compat.mmengine.hooks as hooks
import hookline.compat.mmengine.optim  # noqa: F401  (the mmengine-scoped schedulers)
from hookline.compat.mmengine.registry import HOOKS as MMENGINE_HOOKS
from hookline.compat.unsupported import MMENGINE_HOOKS as REFUSED_HOOKS
from hookline.compat.unsupported import MMENGINE_SCHEDULERS, MODULES
from hookline.core import ConfigError

from .conftest import make_runner


@pytest.mark.parametrize("name", sorted(REFUSED_HOOKS))
def test_unported_mmengine_hooks_name_the_way_to_go(name, tmp_path):
    with pytest.raises(ImportError, match=rf"MMEngine's {name} is not supported by hookline: "):
        exec(f"from hookline.compat.mmengine.hooks import {name}", {})
    with pytest.raises(ConfigError, match=rf"MMEngine's {name} is not supported by hookline: "
                                          + REFUSED_HOOKS[name].split(" (")[0][:30]):
        MMENGINE_HOOKS.build({"type": name})
    with pytest.raises(ConfigError, match=rf"MMEngine's {name} is not supported"):
        make_runner(tmp_path, hooks=[{"type": f"mmengine.{name}"}])


def test_hooklines_own_profiler_hook_stays_the_unscoped_one(tmp_path):
    runner = make_runner(tmp_path, hooks=[{"type": "ProfilerHook"}])
    assert any(type(h).__module__ == "hookline.hooks.profiler" for h in runner.hooks)


@pytest.mark.parametrize("name", sorted(MMENGINE_SCHEDULERS))
def test_unported_mmengine_schedulers_name_torchs(name, tmp_path):
    for module in ("hookline.compat.mmengine.optim", "hookline.compat.mmengine.optim.scheduler"):
        with pytest.raises(ImportError, match=rf"MMEngine's {name} is not supported by hookline: "
                                              "use torch's"):
            exec(f"from {module} import {name}", {})
    with pytest.raises(ConfigError, match=rf"MMEngine's {name} is not supported by hookline: "
                                          "use torch's"):
        make_runner(tmp_path, param_scheduler={"type": f"mmengine.{name}"})


@pytest.mark.parametrize("module", sorted(MODULES))
def test_unported_modules_fail_to_import_saying_why(module):
    name = "hookline.compat." + module
    with pytest.raises(ImportError, match=rf"{module} is not supported by hookline: "):
        importlib.import_module(name)
    assert name not in sys.modules  # a later import says it again


def test_other_missing_names_are_still_plain_attribute_errors():
    with pytest.raises(ImportError, match="cannot import name 'NoSuchHook'"):
        exec("from hookline.compat.mmengine.hooks import NoSuchHook", {})
    assert not hasattr(hooks, "NoSuchHook")


def test_the_torch_schedulers_named_instead_keep_mmengines_behaviour():
    """MMEngine's OneCycleLR leaves momentum alone (torch's cycles it by default); a plateau
    scheduler monitors a metric as validation reports it (no 'val/' prefix)."""
    assert "'cycle_momentum': False" in MMENGINE_SCHEDULERS["OneCycleLR"]
    assert "eta_max" in MMENGINE_SCHEDULERS["OneCycleLR"]
    assert "'monitor': 'loss'" in MMENGINE_SCHEDULERS["ReduceOnPlateauLR"]
    assert "val/loss" not in MMENGINE_SCHEDULERS["ReduceOnPlateauLR"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"optimizer": None, "optim_wrapper": {"optimizer": {"type": "SGD", "lr": 0.1},
                                           "paramwise_cfg": {"norm_decay_mult": 0.0}}},
     r"optim_wrapper: MMEngine's paramwise_cfg is not supported by hookline: per-parameter"),
    ({"optimizer": {"type": "SGD", "lr": 0.1},
      "param_scheduler": [{"type": "mmengine.LinearLR", "begin": 0, "end": 5,
                           "convert_to_iter_based": True}]},
     r"param_scheduler\[0\]: MMEngine's convert_to_iter_based is not supported by hookline: "
     r"write the schedule in iterations"),
])
def test_the_runner_names_what_to_write_instead_of_unported_mmengine_options(kwargs, message,
                                                                               tmp_path):
    with pytest.raises(ConfigError, match=message):
        make_runner(tmp_path, **kwargs)
