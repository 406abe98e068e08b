"""Every docstring example outside hookline.core runs too (tests/core covers the core)."""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil

import pytest

import hookline
from hookline.compat.unsupported import MODULES as MODULES_NOT_PORTED

#: stand-ins of modules the compat layers do not port: importing them is the error they give
REFUSED = {name.replace("mmengine.", "hookline.compat.mmengine.").replace(
    "mmcv.", "hookline.compat.mmcv.") for name in MODULES_NOT_PORTED}

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(hookline.__path__, prefix="hookline.")
    if not info.name.startswith("hookline.core") and info.name not in REFUSED
)


#: modules that need an optional extra (``pip install hookline[lightning]``; ``make test``
#: installs it, so CI runs them)
OPTIONAL = {"hookline.integrations.lightning": "lightning",
            "hookline.integrations.lightning_inspect": "lightning"}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name, tmp_path):
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name], reason=f"{name} needs hookline[{OPTIONAL[name]}]")
    module = importlib.import_module(name)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # examples that write default work dirs write them here
    try:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    finally:
        os.chdir(cwd)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see output)"
