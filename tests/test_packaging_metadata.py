"""What a user of the published package gets: the sdist's files (its tests run unpacked), the
metadata, and the install instructions of README.md (the PyPI page, ``hookline docs readme``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_no_pytest_framework_classifier() -> None:
    """hookline is no pytest plugin (it has no pytest11 entry point)."""
    project = pyproject()["project"]
    assert "Framework :: Pytest" not in project["classifiers"]
    assert "pytest11" not in project.get("entry-points", {})


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The files of an sdist built (by setuptools, offline) from a copy of the checkout."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"pyproject.toml needs setuptools>=77, this is {setuptools.__version__}")
    if not (ROOT / "MANIFEST.in").is_file() or not (ROOT / "setup.py").is_file():
        pytest.skip("not a source checkout")
    copy = tmp_path_factory.mktemp("checkout") / "hookline"
    copy.mkdir()
    ignore = shutil.ignore_patterns(".mypy_cache", ".pytest_cache", "*.egg-info")
    for name in ("src", "tests", "examples", "docs"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, copy / name)
    (copy / "tests" / "__pycache__").mkdir(exist_ok=True)  # left out of the sdist
    (copy / "tests" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "-c", "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"],
        cwd=copy, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=""))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    archive = copy / "dist" / done.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


def test_the_sdist_carries_the_whole_test_tree(sdist_names: set[str]) -> None:
    tests = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and ".mypy_cache" not in p.parts}
    missing = sorted(tests - sdist_names)
    assert not missing, f"MANIFEST.in leaves out of the sdist: {missing[:20]}"
    assert "tests/conftest.py" in sdist_names and "tests/core/test_event.py" in sdist_names
    assert not [n for n in sdist_names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_sdist_carries_the_examples_and_the_docs_images(sdist_names: set[str]) -> None:
    wanted = {str(p.relative_to(ROOT)) for folder in ("examples", "docs")
              for p in (ROOT / folder).rglob("*") if p.is_file()}
    assert "docs/images/demo_curves.png" in wanted
    assert not sorted(wanted - sdist_names)
    assert {"README.md", "LICENSE", "pyproject.toml", "setup.py", "src/hookline/py.typed",
            "src/hookline/demo/digits.npz"} <= sdist_names


def readme_section(title: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = readme.split(f"\n## {title}\n", 1)
    assert len(parts) == 2, f"README.md has no '## {title}' section"
    return parts[1].split("\n## ", 1)[0]


def test_readme_says_how_to_install() -> None:
    install = readme_section("Install")
    extras = pyproject()["project"]["optional-dependencies"]
    for line in ("pip install hookline ", 'pip install "hookline[keras]"',
                 'pip install "hookline[lightning]"', "pip install --no-deps hookline"):
        assert line in install, line
    assert {"keras", "lightning"} <= set(extras)
    # the quick start without the Makefile, for a wheel
    assert "hookline train --work-dir work_dirs/demo --test" in install


def test_the_install_section_reaches_wheel_users(tmp_path: Path) -> None:
    """``hookline docs readme`` (the README a wheel ships) shows it, outside the checkout too."""
    done = subprocess.run([sys.executable, "-m", "hookline", "docs", "readme"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "\n## Install\n" in done.stdout and "pip install --no-deps hookline" in done.stdout
