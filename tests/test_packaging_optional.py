"""A missing dependency is one clear error: torch for the torch-backed layers and commands (a
``pip install --no-deps hookline``), Keras and Lightning for the bridges (their extras).

Each check runs a fresh interpreter in which importing the named modules fails as it does when
they are not installed (a ``sitecustomize`` on ``PYTHONPATH`` puts a finder that raises
``ModuleNotFoundError`` for them in front of ``sys.meta_path``): no second environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hookline
from hookline.core.dependencies import INSTALL, MissingDependencyError, missing_dependency, raise_missing

ROOT = Path(__file__).resolve().parents[1]

HIDER = '''
import os, sys

_HIDDEN = set(filter(None, os.environ.get("HOOKLINE_TEST_HIDE", "").split(",")))


class _NotInstalled:
    """Imports of the hidden top-level modules fail as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
'''

TORCH_HINT = 'needs PyTorch, which is not installed: pip install "torch>=2.4"'


@pytest.fixture(scope="module")
def hider(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hide_modules")
    (folder / "sitecustomize.py").write_text(HIDER, encoding="utf-8")
    return folder


def run_without(hider: Path, hidden: str, args: list[str], cwd: Path | None = None,
                ) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with the modules ``hidden`` (comma-separated) not importable."""
    env = dict(os.environ, HOOKLINE_TEST_HIDE=hidden, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hider), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=240,
                          env=env, cwd=cwd)


def python_without(hider: Path, hidden: str, code: str) -> subprocess.CompletedProcess[str]:
    return run_without(hider, hidden, ["-c", textwrap.dedent(code)])


def test_the_hider_hides(hider: Path) -> None:
    done = python_without(hider, "torch", """
        try:
            import torch
        except ModuleNotFoundError as exc:
            print("hidden", exc.name)
    """)
    assert done.stdout.strip() == "hidden torch", done.stderr


# -- without torch ---------------------------------------------------------------------------------


def test_hookline_core_works_without_torch(hider: Path) -> None:
    done = python_without(hider, "torch", """
        import sys
        import hookline
        from hookline.core import Event, hookable
        @hookable
        def double(x):
            return 2 * x
        double.post(lambda result, args, kwargs: result + 1)
        assert double(2) == 5 and Event("e").emit() == [] and hookline.Event is Event
        assert "torch" not in sys.modules
        print("ok")
    """)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("statement, layer", [
    ("import hookline.engine", "hookline.engine"),
    ("from hookline import Runner", "hookline.engine"),
    ("import hookline; hookline.Hook", "hookline.engine"),
    ("import hookline.inspect", "hookline.inspect"),
    ("from hookline.inspect import FeatureExtractor", "hookline.inspect"),
    ("import hookline.integrations", "hookline.engine"),
    ("import hookline.hooks", "hookline.hooks"),
    ("import hookline.demo", "hookline.demo"),
    ("import hookline.compat.mmcv", "hookline.compat.mmcv"),
    ("import hookline.compat.mmengine", "hookline.compat.mmengine"),
])
def test_a_torch_backed_layer_without_torch_is_one_clear_import_error(
        hider: Path, statement: str, layer: str) -> None:
    done = python_without(hider, "torch", f"""
        from hookline.core.dependencies import MissingDependencyError
        try:
            {statement}
        except ImportError as exc:
            assert type(exc) is MissingDependencyError and isinstance(exc, ModuleNotFoundError)
            assert exc.name == "torch", exc.name
            cause = exc.__cause__
            assert isinstance(cause, ModuleNotFoundError) and cause.name == "torch", repr(cause)
            print(exc)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f'{layer} {TORCH_HINT} (hookline.core works without it)']


def test_star_import_gives_the_core_names_without_torch(hider: Path) -> None:
    done = python_without(hider, "torch", """
        from hookline import *
        names = sorted(n for n in dir() if not n.startswith("_"))
        import hookline
        print(" ".join(names))
        print(" ".join(sorted(hookline.__all__)))
    """)
    assert done.returncode == 0, done.stderr
    imported, listed = (line.split() for line in done.stdout.splitlines())
    core = sorted(hookline.core.__all__)
    assert imported == core
    assert listed == sorted(["__version__", *core])


def test_star_import_with_torch_gives_the_engine_names_too() -> None:
    assert {"Runner", "Hook", "HOOKS", "OptimWrapper"} <= set(hookline.__all__)
    namespace: dict[str, object] = {}
    exec("from hookline import *", namespace)
    from hookline.engine import Runner  # noqa: PLC0415

    assert namespace["Runner"] is Runner and namespace["Event"] is hookline.core.Event


@pytest.mark.parametrize("command", ["train", "test", "val", "hooks", "inspect"])
def test_a_command_that_needs_torch_is_one_error_line_without_it(
        hider: Path, command: str, tmp_path: Path) -> None:
    done = run_without(hider, "torch", ["-m", "hookline", command], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: 'hookline {command}' {TORCH_HINT} (hookline.core works without it)"]


def test_the_commands_that_need_no_torch_work_without_it(hider: Path, tmp_path: Path) -> None:
    assert run_without(hider, "torch", ["-m", "hookline", "--help"], cwd=tmp_path).returncode == 0
    done = run_without(hider, "torch", ["-m", "hookline", "docs", "core"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# hookline.core reference")


def test_a_command_without_pyyaml_names_it(hider: Path, tmp_path: Path) -> None:
    done = run_without(hider, "yaml", ["-m", "hookline", "hooks"], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: 'hookline hooks' needs PyYAML, which is not installed: pip install \"PyYAML>=6.0\""]


# -- the optional frameworks -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def without_extras(hider: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What each optional framework's feature says without it (one interpreter for all: each
    loads torch)."""
    work_dir = tmp_path_factory.mktemp("without_extras")
    done = python_without(hider, "keras,lightning,matplotlib", f"""
        import json
        import torch
        from hookline import Runner
        from hookline.core.dependencies import MissingDependencyError
        from hookline.core import ConfigError
        said = {{}}
        for framework, hook in [("keras", "keras.callbacks.EarlyStopping"),
                                ("lightning", "lightning.pytorch.callbacks.Timer")]:
            try:
                Runner(torch.nn.Linear(4, 2), work_dir={str(work_dir)!r}, hooks=[{{"type": hook}}])
            except ConfigError as exc:
                cause = exc.__cause__
                assert isinstance(cause, ModuleNotFoundError) and cause.name == framework, repr(cause)
                said[hook] = str(exc)
        try:
            import hookline.integrations.lightning
        except MissingDependencyError as exc:
            assert exc.name == "lightning" and isinstance(exc.__cause__, ModuleNotFoundError)
            said["hookline.integrations.lightning"] = str(exc)
        from hookline.inspect import FeatureExtractor  # the rest of hookline.inspect loads
        try:
            from hookline.inspect import plot_gradient_flow
        except MissingDependencyError as exc:
            said["plot_gradient_flow"] = str(exc)
        print(json.dumps(said))
    """)
    assert done.returncode == 0, done.stderr
    said: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return said


def test_a_keras_callback_in_a_config_without_keras_names_the_extra(
        without_extras: dict[str, str]) -> None:
    assert without_extras["keras.callbacks.EarlyStopping"] == (
        "hook type 'keras.callbacks.EarlyStopping' needs Keras, which is not installed: "
        'pip install "hookline[keras]"')


def test_a_lightning_callback_in_a_config_without_lightning_names_the_extra(
        without_extras: dict[str, str]) -> None:
    assert without_extras["lightning.pytorch.callbacks.Timer"] == (
        "hook type 'lightning.pytorch.callbacks.Timer' needs Lightning, which is not installed: "
        'pip install "hookline[lightning]"')


def test_the_lightning_bridge_without_lightning_names_the_extra(
        without_extras: dict[str, str]) -> None:
    assert without_extras["hookline.integrations.lightning"] == (
        "hookline.integrations.lightning needs Lightning, which is not installed: "
        'pip install "hookline[lightning]"')


def test_the_plots_without_matplotlib_name_it(without_extras: dict[str, str]) -> None:
    assert without_extras["plot_gradient_flow"] == (
        "hookline.inspect.plot_gradient_flow needs matplotlib, which is not installed: "
        'pip install "matplotlib>=3.7"')


# -- the messages -------------------------------------------------------------------------------------


def test_an_unknown_missing_module_keeps_its_own_error() -> None:
    exc = ModuleNotFoundError("No module named 'my_plugin'", name="my_plugin")
    assert missing_dependency(exc, "x") is None
    with pytest.raises(ModuleNotFoundError) as raised:
        raise_missing(exc, "x")
    assert raised.value is exc
    # a submodule missing from an installed package is not the package missing
    assert missing_dependency(ModuleNotFoundError("gone", name="torch._C"), "x") is None


def test_a_known_missing_module_is_chained() -> None:
    exc = ModuleNotFoundError("No module named 'keras'", name="keras")
    with pytest.raises(MissingDependencyError) as raised:
        raise_missing(exc, "my feature")
    assert raised.value.__cause__ is exc and raised.value.name == "keras"
    assert str(raised.value) == ('my feature needs Keras, which is not installed: '
                                 'pip install "hookline[keras]"')


def test_the_install_hints_match_pyproject() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [r.replace(" ", "") for r in project["dependencies"]]
    extras = project["optional-dependencies"]
    for module, (_, hint) in INSTALL.items():
        if "hookline[" in hint:
            extra = hint.split("hookline[", 1)[1].split("]", 1)[0]
            assert extra == module and extra in extras, hint
        else:
            pinned = hint.split('"')[1]  # pip install "torch>=2.4" ...
            assert pinned in requirements, (module, pinned, requirements)
