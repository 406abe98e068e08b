"""MMEngine's ways to build several optimizers, on real GAN runs: ``optim_wrapper={
"constructor": ..., "generator": ..., "discriminator": ...}`` with a constructor registered
in ``OPTIM_WRAPPER_CONSTRUCTORS`` (mmagic's pattern, called as MMEngine calls it), hookline's
``DefaultOptimWrapperConstructor`` (no ``paramwise_cfg``), a dict of built ``OptimWrapper``
objects, and ``build_optim_wrapper(model, cfg)`` / the names ported files import."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import hookline.compat.mmengine.optim as optim
from hookline import ConfigError, Runner
from hookline.compat.mmengine.optim import (
    DefaultOptimWrapperConstructor,
    OptimWrapper,
    OptimWrapperDict,
    build_optim_wrapper,
)
from hookline.compat.mmengine.registry import OPTIM_WRAPPER_CONSTRUCTORS, OPTIM_WRAPPERS, OPTIMIZERS
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

QUIET = {"logger": None, "progress": None, "checkpoint": None}


class GANConstructor:
    """mmagic's ``MultiOptimWrapperConstructor``, in short: one wrapper per submodule."""

    calls: list[tuple[dict, object]] = []

    def __init__(self, optim_wrapper_cfg, paramwise_cfg=None):
        self.optim_wrapper_cfg = copy.deepcopy(optim_wrapper_cfg)
        GANConstructor.calls.append((copy.deepcopy(optim_wrapper_cfg), paramwise_cfg))

    def __call__(self, model):
        built = {}
        for name, cfg in self.optim_wrapper_cfg.items():
            cfg = dict(cfg)
            optimizer = OPTIMIZERS.build({**cfg.pop("optimizer"),
                                          "params": getattr(model, name).parameters()})
            built[name] = OPTIM_WRAPPERS.build({"type": "OptimWrapper", **cfg,
                                                "optimizer": optimizer})
        return OptimWrapperDict(**built)


OPTIM_WRAPPER_CONSTRUCTORS.register_module(name="TestsGANConstructor", module=GANConstructor,
                                           force=True)


class GAN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.generator = torch.nn.Linear(2, 2)
        self.discriminator = torch.nn.Linear(2, 1)

    def train_step(self, data, optim_wrapper):
        real, noise = data
        d_loss = (F.softplus(self.discriminator(self.generator(noise).detach())).mean()
                  + F.softplus(-self.discriminator(real)).mean())
        optim_wrapper["discriminator"].update_params(d_loss)
        self.discriminator.requires_grad_(False)
        optim_wrapper["generator"].update_params(
            F.softplus(-self.discriminator(self.generator(noise))).mean())
        self.discriminator.requires_grad_(True)
        return {"loss": d_loss.detach()}


def loader() -> DataLoader:
    generator = torch.Generator().manual_seed(5)
    return DataLoader(TensorDataset(torch.randn(16, 2, generator=generator) + 1,
                                    torch.randn(16, 2, generator=generator)), batch_size=4)


CHILDREN = {"generator": {"optimizer": {"type": "Adam", "lr": 1e-2}},
            "discriminator": {"optimizer": {"type": "SGD", "lr": 0.1, "momentum": 0.9}}}
SCHEDULERS = {"generator": [{"type": "StepLR", "step_size": 2, "gamma": 0.5, "by_epoch": False}]}


def train(tmp_path, optim_wrapper, model=None, **kwargs) -> Runner:
    runner = Runner(model or GAN(), optim_wrapper=optim_wrapper, train_dataloader=loader(),
                    max_iters=6, work_dir=tmp_path, device="cpu", default_hooks=QUIET, **kwargs)
    runner.train()
    return runner


@pytest.mark.parametrize("constructor", ["TestsGANConstructor", "mmengine.TestsGANConstructor",
                                         GANConstructor])
def test_a_registered_constructor_builds_the_dict_as_mmengine_calls_it(tmp_path, constructor):
    GANConstructor.calls.clear()
    runner = train(tmp_path / "built", {"constructor": constructor, **CHILDREN},
                   param_scheduler=SCHEDULERS)
    assert GANConstructor.calls == [(CHILDREN, None)]  # optim_wrapper_cfg without constructor
    wrappers = runner.optim_wrapper
    assert isinstance(wrappers, OptimWrapperDict) and list(wrappers) == ["generator",
                                                                         "discriminator"]
    assert wrappers.get_lr() == {"generator.lr": [1.25e-3], "discriminator.lr": [0.1]}
    native = train(tmp_path / "native", CHILDREN, param_scheduler=SCHEDULERS)
    for a, b in zip(runner.model.state_dict().values(), native.model.state_dict().values()):
        assert torch.equal(a, b)


def test_a_constructor_gets_paramwise_cfg_and_what_it_returns_is_checked(tmp_path):
    GANConstructor.calls.clear()
    paramwise = {"custom_keys": {"generator": {"lr_mult": 0.1}}}
    train(tmp_path / "a", {"constructor": "TestsGANConstructor", "paramwise_cfg": paramwise,
                           **CHILDREN})
    assert GANConstructor.calls == [(CHILDREN, paramwise)]  # the project's to read

    class Broken:
        def __init__(self, optim_wrapper_cfg, paramwise_cfg=None):
            pass

        def __call__(self, model):
            return torch.optim.SGD(model.parameters(), lr=0.1)

    with pytest.raises(ConfigError, match="constructor 'Broken' returned SGD.*an OptimWrapper "
                                          "or an OptimWrapperDict"):
        train(tmp_path / "b", {"constructor": Broken, **CHILDREN})


def test_an_unknown_constructor_is_refused_when_the_runner_is_built(tmp_path):
    with pytest.raises(ConfigError, match="TestsGANConstructr.*did you mean "
                                          "'mmengine.TestsGANConstructor'"):
        Runner(GAN(), optim_wrapper={"constructor": "TestsGANConstructr", **CHILDREN},
               train_dataloader=loader(), max_iters=2, work_dir=tmp_path, default_hooks=QUIET)


def test_the_default_constructor_wraps_every_parameter_and_refuses_paramwise_cfg(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    model[0].requires_grad_(False)
    cfg = {"constructor": "DefaultOptimWrapperConstructor", "accumulative_counts": 2,
           "optimizer": {"type": "SGD", "lr": 0.1}}
    runner = Runner(model, optim_wrapper=cfg, loss_fn=torch.nn.MSELoss(),
                    train_dataloader=DataLoader(TensorDataset(torch.ones(4, 2), torch.ones(4, 1)),
                                                batch_size=2),
                    max_iters=2, work_dir=tmp_path, device="cpu", default_hooks=QUIET)
    wrapper = runner.optim_wrapper
    assert type(wrapper) is OptimWrapper and wrapper.accumulative_counts == 2
    assert [p for g in wrapper.param_groups for p in g["params"]] == list(model.parameters())
    with pytest.raises(ConfigError, match="optim_wrapper: DefaultOptimWrapperConstructor: "
                                          "MMEngine's paramwise_cfg is not supported"):
        Runner(model, optim_wrapper={**cfg, "paramwise_cfg": {"norm_decay_mult": 0.0}},
               loss_fn=torch.nn.MSELoss(), work_dir=tmp_path, default_hooks=QUIET)
    with pytest.raises(ConfigError, match="needs an optim_wrapper config with an 'optimizer'"):
        DefaultOptimWrapperConstructor({"type": "OptimWrapper"})


def test_a_dict_of_built_wrappers_is_an_optim_wrapper_dict(tmp_path):
    model = GAN()
    built = {"generator": OptimWrapper(torch.optim.Adam(model.generator.parameters(), lr=1e-2)),
             "discriminator": OptimWrapper(torch.optim.SGD(model.discriminator.parameters(),
                                                           lr=0.1, momentum=0.9))}
    runner = train(tmp_path / "objects", built, model=model, param_scheduler=SCHEDULERS)
    assert isinstance(runner.optim_wrapper, OptimWrapperDict)
    assert runner.optim_wrapper["generator"] is built["generator"]
    native = train(tmp_path / "native", CHILDREN, param_scheduler=SCHEDULERS)
    for a, b in zip(model.state_dict().values(), native.model.state_dict().values()):
        assert torch.equal(a, b)
    # a built wrapper and a config by submodule may be mixed
    other = GAN()
    mixed = {"generator": OptimWrapper(torch.optim.Adam(other.generator.parameters(), lr=1e-2)),
             "discriminator": CHILDREN["discriminator"]}
    train(tmp_path / "mixed", mixed, model=other, param_scheduler=SCHEDULERS)
    for a, b in zip(other.state_dict().values(), native.model.state_dict().values()):
        assert torch.equal(a, b)


def test_build_optim_wrapper_is_mmengines():
    model = GAN()
    single = build_optim_wrapper(model, {"optimizer": {"type": "SGD", "lr": 0.1}})
    assert type(single) is OptimWrapper
    assert [p for g in single.param_groups for p in g["params"]] == list(model.parameters())
    several = build_optim_wrapper(model, {"constructor": "TestsGANConstructor", **CHILDREN})
    assert isinstance(several, OptimWrapperDict) and list(several) == ["generator",
                                                                       "discriminator"]
    with pytest.raises(ConfigError, match="paramwise_cfg is not supported"):
        build_optim_wrapper(model, {"optimizer": {"type": "SGD", "lr": 0.1},
                                    "paramwise_cfg": {"bias_lr_mult": 2.0}})


@pytest.mark.parametrize(("name", "message"), [
    ("ApexOptimWrapper", "use AmpOptimWrapper"),
    ("ZeroRedundancyOptimizer", "use a plain torch optimizer"),
    ("BaseOptimWrapper", "subclass OptimWrapper"),
])
def test_unported_optim_names_say_what_to_use(name, message):
    with pytest.raises(ImportError, match=f"MMEngine's {name} is not supported by hookline: "
                                          f".*{message}"):
        getattr(optim, name)
