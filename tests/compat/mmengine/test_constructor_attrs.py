"""DefaultOptimWrapperConstructor has MMEngine's attributes and add_params, so a constructor
subclass in the style of mmdet's / mmpretrain's layer-decay constructors works; the base
class's own add_params still refuses paramwise_cfg, naming the user's class."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError
from hookline.compat.mmengine.optim.optimizer.builder import build_optim_wrapper
from hookline.compat.mmengine.optim.optimizer.default_constructor import (
    DefaultOptimWrapperConstructor,
)
from hookline.compat.mmengine.registry import OPTIM_WRAPPER_CONSTRUCTORS as MM_CONSTRUCTORS
from hookline.compat.mmengine.registry import Registry

from ..conftest import make_runner

CONSTRUCTORS = Registry("optimizer wrapper constructor", parent=MM_CONSTRUCTORS,
                        scope="ctordet")


@CONSTRUCTORS.register_module()
class LayerDecayConstructor(DefaultOptimWrapperConstructor):
    """The layer-decay shape: reads paramwise_cfg, base_lr and base_wd in add_params."""

    def add_params(self, params, module, prefix="", is_dcn_module=None):
        rate = self.paramwise_cfg["decay_rate"]
        layers = [name for name, _ in module.named_children()]
        for depth, name in enumerate(layers):
            for pname, param in getattr(module, name).named_parameters():
                scale = rate ** (len(layers) - 1 - depth)
                params.append({"params": [param], "lr": self.base_lr * scale,
                               "weight_decay": 0.0 if pname == "bias" else self.base_wd})


class NoOverride(DefaultOptimWrapperConstructor):
    pass


class CallsSuper(DefaultOptimWrapperConstructor):
    def add_params(self, params, module, prefix="", is_dcn_module=None):
        super().add_params(params, module, prefix, is_dcn_module)


CFG = {"type": "OptimWrapper", "accumulative_counts": 2,
       "optimizer": {"type": "SGD", "lr": 0.1, "weight_decay": 1e-4}}


def test_mmengines_attributes():
    ctor = DefaultOptimWrapperConstructor(CFG)
    assert ctor.optimizer_cfg == {"type": "SGD", "lr": 0.1, "weight_decay": 1e-4}
    assert ctor.optim_wrapper_cfg == {"type": "OptimWrapper", "accumulative_counts": 2}
    assert "optimizer" in CFG  # the caller's config is not changed
    assert (ctor.base_lr, ctor.base_wd, ctor.paramwise_cfg) == (0.1, 1e-4, {})
    no_wd = DefaultOptimWrapperConstructor({"optimizer": {"type": "SGD", "lr": 0.1}})
    assert no_wd.base_wd is None
    params: list = []
    ctor.add_params(params, torch.nn.Linear(2, 1))
    assert [list(g) for g in params] == [["params"], ["params"]]


def test_without_paramwise_cfg_every_parameter_is_one_group():
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    wrapper = LayerDecayConstructor(CFG)(model)  # MMEngine calls add_params only with one
    assert len(wrapper.param_groups) == 1 and wrapper.accumulative_counts == 2


def test_a_subclass_overriding_add_params_takes_paramwise_cfg_and_trains(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    wrapper = build_optim_wrapper(model, {**CFG, "constructor": "ctordet.LayerDecayConstructor",
                                          "paramwise_cfg": {"decay_rate": 0.5}})
    assert [g["lr"] for g in wrapper.param_groups] == pytest.approx([0.05, 0.05, 0.1, 0.1])
    assert [g["weight_decay"] for g in wrapper.param_groups] == [1e-4, 0.0, 1e-4, 0.0]
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    before = model[0].weight.detach().clone()
    runner = make_runner(tmp_path, model=model, optimizer=None, optim_wrapper={
        **CFG, "constructor": "ctordet.LayerDecayConstructor",
        "paramwise_cfg": {"decay_rate": 0.5}})
    runner.train()
    assert [g["lr"] for g in runner.optim_wrapper.param_groups] == pytest.approx(
        [0.05, 0.05, 0.1, 0.1])
    assert not torch.equal(before, model[0].weight)


@pytest.mark.parametrize("cls", [DefaultOptimWrapperConstructor, NoOverride])
def test_paramwise_cfg_without_an_own_add_params_is_refused_at_construction(cls):
    with pytest.raises(ConfigError, match=rf"^{cls.__name__}: MMEngine's paramwise_cfg is not "
                                          "supported by hookline: per-parameter"):
        cls(CFG, paramwise_cfg={"bias_lr_mult": 2.0})
    cls(CFG, paramwise_cfg={})  # empty is no paramwise_cfg


def test_the_base_add_params_refuses_paramwise_cfg_naming_the_users_class():
    ctor = CallsSuper(CFG, paramwise_cfg={"norm_decay_mult": 0.0})  # overrides: accepted here
    with pytest.raises(ConfigError, match=r"^CallsSuper: MMEngine's paramwise_cfg is not "
                                          "supported"):
        ctor(torch.nn.Linear(2, 1))
    with pytest.raises(ConfigError, match="paramwise_cfg must be None or a dict"):
        DefaultOptimWrapperConstructor(CFG, paramwise_cfg=[("bias_lr_mult", 2.0)])
