"""Type checkers see the documented API: ``mypy --strict`` on typed user code of hookline.core
(tests/typed_usage/core_usage.py; ``make lint`` checks engine_usage.py, which needs torch's
types and takes too long here), the lazy names' declarations, and Python 3.10 support."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hookline
import hookline.inspect
from hookline.core import HookHandle, hookable, observed
from hookline.core.hookable import BoundHookable, HookableFunction

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(hookline.__file__).resolve().parent
USAGE = Path(__file__).resolve().parent / "typed_usage"

# hookline as a user's type checker sees an installed package: its own modules' errors are not
# the user's (silent); the torch-backed layers are skipped, so that torch is not analysed
MYPY_CONFIG = """\
[mypy]
strict = True
[mypy-hookline.*]
follow_imports = silent
[mypy-hookline.engine.*,hookline.inspect.*,hookline.hooks.*,torch.*,numpy.*]
follow_imports = skip
"""


def run_mypy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is not installed")
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG, encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(PACKAGE.parent))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
         str(tmp_path / "cache"), "--no-error-summary", *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def test_typed_user_code_of_hookline_core_passes_mypy_strict(tmp_path: Path) -> None:
    """Every ``# type: ignore`` in the file is a mistake mypy must find (strict reports the
    unneeded ones), and nothing else may be an error: a hookable function's signature, its
    result, an observed attribute's type, a registration's handle are all typed."""
    done = run_mypy(tmp_path, str(USAGE / "core_usage.py"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_sees_the_signature_of_a_hookable_function(tmp_path: Path) -> None:
    code = tmp_path / "user.py"
    code.write_text(
        "from hookline.core import hookable, observed\n"
        "@hookable\n"
        "def divide(a: float, b: float) -> float:\n"
        "    return a / b\n"
        "class Account:\n"
        "    balance = observed(0)\n"
        "    @hookable\n"
        "    def deposit(self, amount: int) -> int:\n"
        "        return amount\n"
        "reveal_type(divide)\n"
        "reveal_type(divide(1, 2))\n"
        "reveal_type(Account().deposit)\n"
        "reveal_type(Account().balance)\n"
        "reveal_type(divide.post(lambda result, args, kwargs: None))\n", encoding="utf-8")
    done = run_mypy(tmp_path, str(code))
    revealed = [line.split("Revealed type is ", 1)[1] for line in done.stdout.splitlines()
                if "Revealed type is" in line]
    assert revealed == [
        '"hookline.core.hookable.HookableFunction[[a: float, b: float], float]"',
        '"float"',
        '"hookline.core.hookable.BoundHookable[[amount: int], int]"',
        '"int"',
        '"hookline.core.handles.TypedHookHandle[[result: Any, args: Any, kwargs: Any], None]"',
    ], done.stdout


def test_the_docs_command_type_checks_on_python_3_10(tmp_path: Path) -> None:
    """``importlib.resources.abc`` is Python 3.11's: on 3.10 Traversable is importlib.abc's."""
    done = run_mypy(tmp_path, "--python-version", "3.10",
                    str(PACKAGE / "app" / "docs_command.py"))
    assert done.returncode == 0, done.stdout + done.stderr


def _type_checking_imports(path: Path) -> dict[str, str]:
    """name -> module of the ``from module import name as name`` under ``if TYPE_CHECKING``."""
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in ast.walk(node):
                if isinstance(statement, ast.ImportFrom):
                    module = ("." * statement.level) + (statement.module or "")
                    for alias in statement.names:
                        found[alias.asname or alias.name] = module
    return found


def test_every_lazy_top_level_name_is_declared_for_type_checkers() -> None:
    """``from hookline import Runner`` is the Runner for mypy, not the Any of ``__getattr__``;
    ``as`` re-exports it under ``--strict`` (no implicit re-export)."""
    declared = _type_checking_imports(PACKAGE / "__init__.py")
    assert declared == hookline._LAZY  # noqa: SLF001 - the lazy table
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    for name in declared:
        assert f"import {name} as {name}\n" in source, name


def test_the_lazy_plot_functions_are_declared_for_type_checkers() -> None:
    declared = _type_checking_imports(PACKAGE / "inspect" / "__init__.py")
    assert declared == dict.fromkeys(hookline.inspect._PLOTS, ".plots")  # noqa: SLF001


def test_the_generic_classes_behave_as_before_at_run_time() -> None:
    @hookable
    def double(x: int) -> int:
        return 2 * x

    class Account:
        balance = observed(0)

        @hookable
        def deposit(self, amount: int) -> int:
            return amount

    assert type(double) is HookableFunction and double(2) == 4
    account = Account()
    assert type(account.deposit) is BoundHookable and account.deposit(3) == 3
    assert account.balance == 0 and isinstance(Account.__dict__["balance"], observed)
    handle = double.post(lambda result, args, kwargs: result + 1)
    assert type(handle) is HookHandle and double(2) == 5
    # subscriptable, for annotations evaluated at run time
    assert observed[int] is not None and HookableFunction[[int], int] is not None


def test_dir_of_hookline_lists_no_helper_imports() -> None:
    listed = set(dir(hookline))
    assert not listed & {"Any", "importlib", "annotations", "TYPE_CHECKING", "typing"}
    public = {name for name in listed if not name.startswith("_")}
    assert public <= set(hookline._LAZY) | {"core", "engine", "inspect", "hooks", "app", "cli",  # noqa: SLF001
                                            "compat", "integrations", "demo"}
