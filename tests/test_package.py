"""Packaging promises: hookline.core is pure Python and loads without torch or numpy."""

import doctest
import json
import subprocess
import sys

import pytest

import hookline
import hookline.core

HEAVY = ("torch", "numpy")


def modules_loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; report which heavy modules it imported."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_using_hookline_core_imports_neither_torch_nor_numpy():
    code = """
import hookline.core
from hookline.core import Event, EventBus, Registry, hookable, observe, observed
saved = Event("saved")
saved.register(lambda path: path.upper())
assert saved.emit("a.pth") == ["A.PTH"]
@hookable
def double(x):
    return 2 * x
double.post(lambda result, args, kwargs: result + 1)
assert double(2) == 5
assert EventBus(["start"]).emit("start") == []
"""
    assert modules_loaded_after(code) == {"torch": False, "numpy": False}


def test_import_hookline_alone_does_not_import_torch():
    loaded = modules_loaded_after("import hookline\nassert hookline.__version__")
    assert loaded["torch"] is False


def test_core_names_are_available_lazily_from_the_top_package_without_torch():
    code = "import hookline\nfrom hookline.core import Event\nassert hookline.Event is Event"
    assert modules_loaded_after(code)["torch"] is False


def test_top_level_names_resolve_to_hookline_core():
    for name in hookline.core.__all__:
        assert getattr(hookline, name) is getattr(hookline.core, name)
        assert name in dir(hookline)


def test_unknown_top_level_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        hookline.no_such_thing  # noqa: B018


def test_version_is_a_string():
    assert isinstance(hookline.__version__, str) and hookline.__version__.count(".") == 2


def test_top_level_docstring_examples_pass():
    assert doctest.testmod(hookline).failed == 0
