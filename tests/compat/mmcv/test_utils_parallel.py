"""hookline.compat.mmcv.utils / parallel and the package's re-exports."""

from __future__ import annotations

import logging

import pytest
import torch

import hookline.compat.mmcv as mmcv
from hookline.compat.mmcv.parallel import (
    MODULE_WRAPPERS,
    MMDataParallel,
    MMDistributedDataParallel,
    is_module_wrapper,
)
from hookline.compat.mmcv.runner import HOOKS, Hook, allreduce_grads, allreduce_params, get_dist_info
from hookline.compat.mmcv.utils import Registry, deprecated_api_warning, get_logger


def test_module_wrappers_and_registrations():
    assert is_module_wrapper(MMDataParallel(torch.nn.Linear(1, 1)))
    assert not is_module_wrapper(torch.nn.Linear(1, 1))
    assert MODULE_WRAPPERS.get("MMDistributedDataParallel") is MMDistributedDataParallel

    @MODULE_WRAPPERS.register_module()
    class MyWrapper(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

    assert is_module_wrapper(MyWrapper(torch.nn.Linear(1, 1)))


def test_utils_and_top_level_names(tmp_path):
    registry = Registry("thing")
    assert registry.scope == "tests" and mmcv.is_str("x") and mmcv.Registry is Registry
    logger = get_logger("compat-mmcv", log_file=str(tmp_path / "a.log"), log_level=logging.INFO)
    logger.info("hello")
    assert "hello" in (tmp_path / "a.log").read_text()

    @deprecated_api_warning({"old": "new"})
    def function(new=0):
        return new

    with pytest.warns(DeprecationWarning, match="'old' is deprecated"):
        assert function(old=3) == 3
    assert get_dist_info() == (0, 1)
    params = [torch.nn.Parameter(torch.ones(2))]
    params[0].grad = torch.ones(2)
    allreduce_params(params)
    allreduce_grads(params)
    assert params[0].tolist() == [1.0, 1.0]


def test_mmcv_accepts_its_deprecated_bare_register_module_decorator():
    """mmcv 1.x registers ``@HOOKS.register_module`` (no parentheses) with a warning."""
    with pytest.warns(DeprecationWarning, match="without parentheses"):
        @HOOKS.register_module
        class BareDecoratedHook(Hook):
            def after_train_iter(self, runner):
                runner.seen = True

    assert type(HOOKS.build({"type": "BareDecoratedHook"})) is BareDecoratedHook
    other = Registry("layer", scope="mmcv_bare_test")
    with pytest.warns(DeprecationWarning):
        other.register_module(type("Plain", (), {}), force=True)
    assert other.get("Plain").__name__ == "Plain"
