"""Every docstring example of hookline.inspect runs, and every public module has one."""

import doctest
import importlib
import pkgutil

import pytest

import hookline.inspect

MODULES = ["hookline.inspect"] + [
    f"hookline.inspect.{info.name}" for info in pkgutil.iter_modules(hookline.inspect.__path__)
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see output)"


@pytest.mark.parametrize("name", [m for m in MODULES if not m.rsplit(".", 1)[1].startswith("_")])
def test_public_modules_have_examples(name):
    assert doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS).attempted > 0


def test_every_public_name_is_exported():
    for name in hookline.inspect.__all__:
        assert getattr(hookline.inspect, name).__doc__, name
