"""Every docstring example of hookline.core runs, so none can rot."""

import doctest
import importlib
import pkgutil

import pytest

import hookline.core

MODULES = ["hookline.core"] + [
    f"hookline.core.{info.name}" for info in pkgutil.iter_modules(hookline.core.__path__)
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see output)"


@pytest.mark.parametrize("name", [m for m in MODULES if not m.rsplit(".", 1)[1].startswith("_")])
def test_public_modules_have_examples(name):
    assert doctest.testmod(importlib.import_module(name)).attempted > 0
