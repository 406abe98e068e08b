"""Building optimizers, optimizer wrappers and schedulers from objects or config dicts, and
the ConfigErrors (with suggestions) for configs that cannot work."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError
from hookline.engine import AmpOptimWrapper, OptimWrapper, OptimWrapperDict
from hookline.engine.build import build_optim_wrapper, build_optimizer, build_schedulers


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))


def sgd(module: torch.nn.Module | None = None, lr: float = 0.1) -> torch.optim.SGD:
    return torch.optim.SGD((module or model()).parameters(), lr=lr)


# -- build_optimizer -----------------------------------------------------------------------------

def test_build_optimizer_from_a_config_gets_every_parameter_frozen_ones_too():
    net = model()
    net[0].weight.requires_grad_(False)  # MMEngine's constructor gives frozen ones as well
    optimizer = build_optimizer({"type": "AdamW", "lr": 0.01, "weight_decay": 0.1}, net)
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.defaults["lr"] == 0.01 and optimizer.defaults["weight_decay"] == 0.1
    held = [p for group in optimizer.param_groups for p in group["params"]]
    assert held == list(net.parameters())


def test_build_optimizer_passes_objects_and_none_through():
    optimizer = sgd()
    assert build_optimizer(optimizer, model()) is optimizer
    assert build_optimizer(None, model()) is None


@pytest.mark.parametrize(("spec", "message"), [
    ({"type": "SDG", "lr": 0.1}, "unknown optimizer type 'SDG'; did you mean 'SGD'"),
    ({"type": "Adamw"}, "did you mean 'AdamW'"),
    ({"type": "SGD", "lrr": 0.1}, r"unexpected argument\(s\) 'lrr' \(did you mean 'lr'\?\)"),
    ({"lr": 0.1}, "has no 'type' key"),
    ("SGD", "optimizer must be a torch.optim.Optimizer or a config dict"),
])
def test_build_optimizer_errors_suggest_what_was_meant(spec, message):
    with pytest.raises(ConfigError, match=message):
        build_optimizer(spec, model())


# -- build_optim_wrapper -------------------------------------------------------------------------

def test_an_optimizer_alone_is_wrapped_in_a_plain_optim_wrapper():
    wrapper = build_optim_wrapper({"type": "SGD", "lr": 0.1}, None, model())
    assert type(wrapper) is OptimWrapper and isinstance(wrapper.optimizer, torch.optim.SGD)
    assert wrapper.accumulative_counts == 1 and wrapper.clip_grad is None
    optimizer = sgd()
    assert build_optim_wrapper(optimizer, None, model()).optimizer is optimizer
    assert build_optim_wrapper(None, None, model()) is None


def test_an_optim_wrapper_config_builds_its_type_with_its_settings():
    wrapper = build_optim_wrapper(None, {
        "type": "AmpOptimWrapper", "optimizer": {"type": "SGD", "lr": 0.1},
        "clip_grad": {"max_norm": 2.0}, "accumulative_counts": 4, "dtype": "bfloat16"}, model())
    assert type(wrapper) is AmpOptimWrapper and wrapper.accumulative_counts == 4
    assert wrapper.clip_grad == {"type": "norm", "max_norm": 2.0}
    assert wrapper.dtype == torch.bfloat16
    plain = build_optim_wrapper(None, {"optimizer": sgd()}, model())  # type defaults
    assert type(plain) is OptimWrapper


def test_wrapper_objects_pass_through():
    wrapper = OptimWrapper(sgd())
    assert build_optim_wrapper(None, wrapper, model()) is wrapper
    wrappers = OptimWrapperDict(a=OptimWrapper(sgd()))
    assert build_optim_wrapper(None, wrappers, model()) is wrappers


def test_a_dict_of_configs_by_submodule_builds_an_optim_wrapper_dict():
    net = torch.nn.Module()
    net.encoder, net.head = torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)
    wrappers = build_optim_wrapper(None, {
        "encoder": {"optimizer": {"type": "SGD", "lr": 0.1}},
        "head": {"type": "OptimWrapper", "optimizer": {"type": "Adam", "lr": 0.01},
                 "accumulative_counts": 2}}, net)
    assert isinstance(wrappers, OptimWrapperDict) and list(wrappers) == ["encoder", "head"]
    assert wrappers["head"].accumulative_counts == 2
    assert [id(p) for p in wrappers["encoder"].optimizer.param_groups[0]["params"]] == [
        id(p) for p in net.encoder.parameters()]
    explicit = build_optim_wrapper(None, {"type": "OptimWrapperDict",
                                          "head": {"optimizer": {"type": "SGD", "lr": 0.1}}}, net)
    assert isinstance(explicit, OptimWrapperDict) and list(explicit) == ["head"]


@pytest.mark.parametrize(("optimizer", "optim_wrapper", "message"), [
    ({"type": "SGD", "lr": 0.1}, {"optimizer": {"type": "SGD", "lr": 0.1}}, "not both"),
    (None, {"type": "OptimWrapper", "clip_grad": {"max_norm": 1.0}}, "has no 'optimizer'"),
    (None, {"type": "AmpOptimWrapr", "optimizer": {"type": "SGD", "lr": 0.1}},
     "did you mean 'AmpOptimWrapper'"),
    (None, {"optimizer": {"type": "SGD", "lr": 0.1}, "accumulate": 2},
     r"unexpected argument\(s\) 'accumulate'"),
    (None, {"optimizer": {"type": "SGD", "lr": 0.1}, "clip_grad": {"max_norm": 1.0,
                                                                    "max_value": 1.0}},
     "clip_grad must be"),
    (None, "AmpOptimWrapper", "optim_wrapper must be an OptimWrapper or a config dict"),
    (None, {"optimizer": {"type": "Adamm", "lr": 0.1}}, "did you mean 'Adam'"),
])
def test_build_optim_wrapper_errors_say_what_is_accepted(optimizer, optim_wrapper, message):
    with pytest.raises(ConfigError, match=message):
        build_optim_wrapper(optimizer, optim_wrapper, model())


def test_a_submodule_config_that_is_not_a_dict_is_a_config_error():
    net = torch.nn.Module()
    net.encoder = torch.nn.Linear(3, 4)
    with pytest.raises(ConfigError, match="optim_wrapper.encoder"):
        build_optim_wrapper(None, {"type": "OptimWrapperDict", "encoder": 0.1}, net)


# -- build_schedulers ----------------------------------------------------------------------------

def test_schedulers_from_configs_with_by_epoch_and_monitor():
    optimizer = sgd()
    built = build_schedulers([{"type": "StepLR", "step_size": 2},
                              {"type": "LinearLR", "start_factor": 0.5, "total_iters": 4,
                               "by_epoch": False},
                              {"type": "ReduceLROnPlateau", "monitor": "accuracy", "mode": "max"}],
                             optimizer)
    kinds = [(type(s).__name__, by_epoch) for s, by_epoch in built]
    assert kinds == [("StepLR", True), ("LinearLR", False), ("ReduceLROnPlateau", True)]
    assert all(s.optimizer is optimizer for s, _ in built)
    assert built[2][0].monitor == "accuracy"
    assert build_schedulers(None, optimizer) == [] and build_schedulers([], None) == []


def test_sequential_lr_children_may_be_configs():
    optimizer = sgd()
    ((scheduler, by_epoch),) = build_schedulers({
        "type": "SequentialLR", "by_epoch": False, "milestones": [2],
        "schedulers": [{"type": "LinearLR", "start_factor": 0.1, "total_iters": 2},
                       {"type": "ExponentialLR", "gamma": 0.9, "by_epoch": True}]}, optimizer)
    assert type(scheduler).__name__ == "SequentialLR" and by_epoch is False
    lrs = []
    for _ in range(4):
        optimizer.step()
        scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.055, 0.1, 0.09, 0.081])


def test_a_scheduler_object_passes_through_with_its_by_epoch():
    optimizer = sgd()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    assert build_schedulers(scheduler, optimizer) == [(scheduler, True)]
    scheduler.by_epoch = False
    assert build_schedulers([scheduler], optimizer) == [(scheduler, False)]


@pytest.mark.parametrize(("spec", "message"), [
    ({"type": "StepLr", "step_size": 2}, "did you mean 'StepLR'"),
    ({"type": "CosineAnnealing", "T_max": 2}, "did you mean 'CosineAnnealingLR'"),
    ({"type": "StepLR", "step": 2}, r"'step' \(did you mean 'step_size'\?\)"),
    ({"type": "StepLR"}, "step_size"),
    ({"step_size": 2}, "has no 'type'"),
    (42, "param_scheduler entries must be schedulers or dicts"),
])
def test_build_schedulers_errors_suggest_what_was_meant(spec, message):
    with pytest.raises(ConfigError, match=message):
        build_schedulers(spec, sgd())


def test_schedulers_need_an_optimizer():
    with pytest.raises(ConfigError, match="param_scheduler needs an optimizer"):
        build_schedulers({"type": "StepLR", "step_size": 2}, None)
