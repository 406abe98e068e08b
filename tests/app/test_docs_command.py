"""``hookline docs [TOPIC]``: the index, a topic, an unknown one; the docs inside a built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hookline.app.docs_command import doc_text, topics
from hookline.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))


def hookline(*args: str, cwd: Path, path: str | None = None) -> subprocess.CompletedProcess:
    """``hookline ARGS`` in a fresh interpreter; ``path`` (a wheel) first on ``sys.path``."""
    prefix = f"sys.path.insert(0, {path!r}); " if path else ""
    code = f"import sys; {prefix}from hookline.cli import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_the_index_lists_every_docs_file_and_the_readme_with_its_title(capsys):
    assert main(["docs"]) == 0
    out = capsys.readouterr().out
    rows = dict(line.split(None, 1) for line in out.splitlines()[2:])
    assert set(rows) == {p.stem for p in DOCS} | {"readme"}
    assert rows["cli"] == "Config files and the hookline command"  # docs/cli.md's title
    assert rows["hooks"] == "Built-in hooks"
    assert out.splitlines()[2].split()[0] == "readme"  # the README first


@pytest.mark.parametrize("name", ["cli", "CLI", "cli.md"])
def test_a_topic_prints_its_markdown_file(capsys, name):
    assert main(["docs", name]) == 0
    expected = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out == expected.rstrip("\n") + "\n"


def test_readme_is_a_topic():
    assert doc_text("readme") == (ROOT / "README.md").read_text(encoding="utf-8")


def test_an_unknown_topic_is_one_error_line_listing_the_topics(tmp_path):
    result = hookline("docs", "clii", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: no docs topic 'clii'; did you mean 'cli'? (topics: readme, ")
    assert all(p.stem in line for p in DOCS)


def test_help_points_to_the_docs_command_not_to_a_file(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "hookline docs cli" in out and "docs/cli.md" not in out
    assert "docs" in out.split("examples:")[0]  # listed among the commands


def test_a_built_wheel_ships_the_docs_and_the_command_reads_them(tmp_path):
    """``pip wheel`` of a copy of the checkout: hookline/docs/*.md inside, read from the zip."""
    source = tmp_path / "checkout"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "docs", source / "docs")
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path / "wheel")],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("hookline-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"hookline/docs/{p.name}" for p in DOCS} | {"hookline/docs/README.md"} <= set(names)
    result = hookline("docs", "cli", cwd=tmp_path, path=str(wheel))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Config files and the `hookline` command")
    probe = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(wheel)!r}); "
                            "import hookline.app.docs_command as d; print(d.__file__); "
                            "print(len(d.topics()))"], capture_output=True, text=True, timeout=300)
    where, count = probe.stdout.split()
    assert where.startswith(str(wheel)) and int(count) == len(DOCS) + 1  # read from the wheel


def test_topics_in_the_checkout_are_the_repository_files():
    assert Path(str(topics()["engine"])) == ROOT / "docs" / "engine.md"
