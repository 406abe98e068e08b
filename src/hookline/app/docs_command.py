"""``hookline docs [TOPIC]``: the documentation in the terminal, also for wheel users.

Without TOPIC it prints the index (each topic with its title); with one, the
topic's Markdown. The files are the repository's ``docs/*.md`` and
``README.md`` (topic ``readme``): a built wheel ships copies of them as
``hookline/docs/`` (setup.py's ``build_py`` copies them, so ``docs/`` stays
the one source), and a source checkout (an editable install) reads ``docs/``
itself.

Example::

    >>> from hookline.app.docs_command import doc_text, topics
    >>> {"cli", "engine", "hooks", "readme"} <= set(topics())
    True
    >>> doc_text("cli").splitlines()[0]
    '# Config files and the `hookline` command'
"""

from __future__ import annotations

import argparse
import difflib
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from hookline.core import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:  # Python 3.10 has it in importlib.abc only
        from importlib.abc import Traversable

__all__ = ["add_arguments", "doc_text", "docs_index", "run", "topics"]


def _checkout_files() -> list[Traversable]:
    """``docs/*.md`` and ``README.md`` of the source checkout this package runs from."""
    root = Path(__file__).resolve().parents[3]  # src/hookline/app/docs_command.py -> the checkout
    if not (root / "docs").is_dir() or not (root / "pyproject.toml").is_file():
        return []
    return [*sorted((root / "docs").glob("*.md")), root / "README.md"]


def topics() -> dict[str, Traversable]:
    """Topic name (the file name, lower case, without ``.md``) -> the Markdown file."""
    shipped = resources.files("hookline") / "docs"
    files = [f for f in shipped.iterdir() if f.name.endswith(".md")] if shipped.is_dir() \
        else _checkout_files()
    found = {f.name[:-3].lower(): f for f in files if f.is_file()}
    if not found:
        raise ConfigError("this installation has no documentation files (hookline/docs is "
                          "missing); read them at the project's docs/ folder")
    return dict(sorted(found.items(), key=lambda item: (item[0] != "readme", item[0])))


def _title(name: str, text: str) -> str:
    if name == "readme":
        return "what hookline is, installing it, a quick tour"
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].replace("`", "").strip()
    return ""


def docs_index() -> str:
    """Every topic with its title, and how to read one."""
    found = topics()
    width = max(len(name) for name in found)
    lines = ["hookline documentation: hookline docs TOPIC prints a topic (Markdown).", ""]
    lines += [f"  {name:<{width}}  {_title(name, file.read_text(encoding='utf-8'))}"
              for name, file in found.items()]
    return "\n".join(lines)


def doc_text(topic: str) -> str:
    """The Markdown of ``topic`` (``cli``, ``cli.md`` and ``CLI`` name the same one)."""
    found = topics()
    name = topic.strip().lower().removesuffix(".md")
    if name not in found:
        close = difflib.get_close_matches(name, list(found), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"no docs topic {topic!r}{hint} (topics: {', '.join(found)})")
    return found[name].read_text(encoding="utf-8")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``hookline docs``' arguments to ``parser``."""
    parser.add_argument("topic", nargs="?", metavar="TOPIC",
                        help="a topic to print (e.g. cli, engine, hooks); without one, the index")


def run(args: argparse.Namespace) -> int:
    """Print the index or a topic; 0 on success (an unknown topic is a ConfigError)."""
    print(docs_index() if args.topic is None else doc_text(args.topic).rstrip("\n"))
    return 0
