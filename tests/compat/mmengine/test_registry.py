"""hookline.compat.mmengine.registry: MMEngine's Registry API over hookline's registry tree."""

from __future__ import annotations

import pytest

from hookline import HOOKS as NATIVE_HOOKS
from hookline import ConfigError, Hook
from hookline.compat.mmengine.registry import (
    HOOKS,
    MODEL_WRAPPERS,
    MODELS,
    RUNNERS,
    DefaultScope,
    Registry,
    build_from_cfg,
    count_registered_modules,
    init_default_scope,
)
from hookline.core.registry import default_scope, set_default_scope

from ..conftest import make_runner


def test_roots_hang_below_hooklines_registries_in_the_mmengine_scope():
    assert HOOKS.scope == "mmengine" and HOOKS.parent is NATIVE_HOOKS
    assert MODELS.parent.scope == "hookline" and RUNNERS.parent is None
    assert MODEL_WRAPPERS.get("DistributedDataParallel") is not None
    assert "CheckpointHook" in count_registered_modules()["hook"]


def test_scope_is_inferred_from_the_creating_package():
    assert Registry("thing", scope=None).scope == __name__.split(".")[0]  # "tests"
    assert Registry.split_scope_key("toydet.Hook") == ("toydet", "Hook")
    assert Registry.split_scope_key("Hook") == (None, "Hook")


def test_get_returns_none_and_build_raises_one_config_error():
    registry = Registry("widget", scope="widgets_a")

    @registry.register_module()
    class Widget:
        def __init__(self, size=1):
            self.size = size

    assert registry.get("Nope") is None and "Widget" in registry
    with pytest.raises(TypeError):
        registry.get(3)
    with pytest.raises(ConfigError, match="unknown widget type 'Widgt'; did you mean 'Widget'"):
        registry.build({"type": "Widgt"})
    with pytest.raises(ConfigError, match="unexpected argument.*'sise'.*did you mean 'size'"):
        registry.build({"type": "Widget", "sise": 2})
    assert registry.build({"size": 3}, default_args={"type": "Widget"}).size == 3
    assert build_from_cfg({"type": "Widget"}, registry, {"size": 5}).size == 5
    with pytest.raises(ConfigError, match="cfg should be a dict"):
        build_from_cfg(["Widget"], registry)


def test_a_custom_build_func_is_used_and_inherited():
    calls = []

    def build(cfg, *args, default_args=None, registry=None, **kwargs):
        calls.append((cfg["type"], registry.scope))
        return "built"

    parent = Registry("custom", build_func=build, scope="customs")
    child = Registry("custom", parent=parent, scope="customs_child")
    assert parent.build({"type": "A"}) == child.build({"type": "B"}) == "built"
    assert calls == [("A", "customs"), ("B", "customs_child")]


def test_default_scope_makes_a_project_name_win_in_a_runner(tmp_path):
    project = Registry("hook", parent=HOOKS, scope="scopedproj")

    @project.register_module(name="IterTimerHook")
    class ProjectTimer(Hook):
        pass

    previous = default_scope()
    try:
        init_default_scope("scopedproj")
        assert DefaultScope.get_current_instance().scope_name == "scopedproj"
        runner = make_runner(tmp_path, default_hooks={"timer": {"type": "IterTimerHook"}})
        assert type(runner.hooks.by_key()["timer"]) is ProjectTimer
        with project.switch_scope_and_registry("scopedproj") as registry:
            assert registry is project
    finally:
        set_default_scope(previous)
    fresh = make_runner(tmp_path / "2", default_hooks={"timer": {"type": "IterTimerHook"}})
    assert type(fresh.hooks.by_key()["timer"]) is not ProjectTimer


def test_a_ported_registration_of_a_builtin_name_takes_precedence_only_in_its_registry():
    local = Registry("model", parent=MODELS, scope="emaports")

    @local.register_module(name="ExponentialMovingAverage")
    class MyEMA:
        pass

    assert local.get("ExponentialMovingAverage") is MyEMA
    assert MODELS.get("ExponentialMovingAverage").__module__.startswith("hookline.compat")
