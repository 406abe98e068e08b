"""The hook catalog: every hook in ``HOOKS`` with its default priority, stages and arguments.

``hookline hooks`` prints it as text; docs/hooks.md holds it as Markdown
between ``<!-- catalog:start -->`` and ``<!-- catalog:end -->``, regenerated
with ``python -m hookline.hooks.catalog --write docs/hooks.md`` (``--check``
exits 1 when the file is out of date).

Example::

    >>> from hookline.hooks.catalog import catalog_entries, hook_catalog
    >>> entry = catalog_entries()["CheckpointHook"]
    >>> entry.priority, "after_train_epoch" in entry.stages, entry.arguments[0]
    ('VERY_LOW (90)', True, 'interval=1')
    >>> hook_catalog(markdown=True).splitlines()[0]
    '| hook | priority | stages | arguments | what it does |'
    >>> hook_catalog().splitlines()[1][:46]  # at a stage, a smaller number runs first
    'HIGHEST 0, VERY_HIGH 10, HIGH 30, ABOVE_NORMAL'
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from hookline.core import Priority
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

__all__ = ["END", "PRIORITY_ORDER", "START", "CatalogEntry", "catalog_entries", "hook_catalog",
           "update_markdown"]

#: how priorities order hooks, in words: every name with its number
PRIORITY_ORDER = ", ".join(f"{p.name} {int(p)}" for p in Priority) + " (or any int from 0 to 100)"
START = "<!-- catalog:start -->"
END = "<!-- catalog:end -->"
_BY_ARGUMENTS = "decided by each instance"


@dataclass
class CatalogEntry:
    """One registered hook: its registry name, class, default priority, stages, arguments."""

    name: str
    cls: type[Hook]
    priority: str
    stages: list[str]
    arguments: list[str]
    summary: str


def _priority(cls: type[Hook]) -> str:
    value = Priority.get(cls.priority)
    return f"{value.name} ({int(value)})" if isinstance(value, Priority) else str(value)


def _stages(cls: type[Hook]) -> list[str]:
    if getattr(cls, "triggered_stages", None) is not Hook.triggered_stages:
        return [_BY_ARGUMENTS]
    return Hook.triggered_stages(object.__new__(cls))


def _arguments(cls: type[Hook]) -> list[str]:
    if cls.__init__ is object.__init__:
        return []
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return []
    shown = []
    for param in list(params.values())[1:]:  # skip self
        if param.kind is param.VAR_POSITIONAL:
            shown.append(f"*{param.name}")
        elif param.kind is param.VAR_KEYWORD:
            shown.append(f"**{param.name}")
        elif param.default is param.empty:
            shown.append(param.name)
        else:
            shown.append(f"{param.name}={param.default!r}")
    return shown


def _summary(cls: type[Hook]) -> str:
    doc = inspect.getdoc(cls) or ""
    if cls.__doc__ is None or doc == inspect.getdoc(Hook):
        return ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    if paragraph.endswith(":") and ". " in paragraph:  # "... Override any of:" introduces a list
        paragraph = paragraph[: paragraph.rindex(". ") + 1]
    paragraph = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", paragraph)  # :class:`X` -> `X`
    return paragraph.replace("``", "`")


def catalog_entries(builtin_only: bool = False) -> dict[str, CatalogEntry]:
    """Every hook registered in ``HOOKS`` (after importing the built-in ones), by name.

    ``builtin_only`` keeps the hooks defined in the ``hookline`` package
    (what docs/hooks.md lists), leaving out hooks registered by user code.
    """
    entries = {}
    for name, cls in HOOKS.items():
        if not (inspect.isclass(cls) and issubclass(cls, Hook)):
            continue
        if builtin_only and not cls.__module__.startswith("hookline."):
            continue
        entries[name] = CatalogEntry(name, cls, _priority(cls), _stages(cls), _arguments(cls),
                                     _summary(cls))
    return entries


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def hook_catalog(markdown: bool = False, *, builtin_only: bool = False) -> str:
    """The catalog as text (``hookline hooks``) or as a Markdown table (docs/hooks.md)."""
    entries = catalog_entries(builtin_only=builtin_only)
    if markdown:
        lines = ["| hook | priority | stages | arguments | what it does |", "|---|---|---|---|---|"]
        for entry in entries.values():
            stages = "<br>".join(f"`{s}`" if s != _BY_ARGUMENTS else s for s in entry.stages)
            args = ", ".join(f"`{_cell(a)}`" for a in entry.arguments) or "none"
            lines.append(f"| `{entry.name}` | {entry.priority} | {stages or 'none'} | {args} | "
                         f"{_cell(entry.summary)} |")
        return "\n".join(lines)
    lines = [f"{len(entries)} hooks registered in HOOKS. At each stage a smaller priority number "
             "runs first:", f"{PRIORITY_ORDER}."]
    for entry in entries.values():
        lines += ["", f"{entry.name}  [{entry.priority}]"]
        if entry.summary:
            lines += textwrap.wrap(entry.summary, 100, initial_indent="    ", subsequent_indent="    ")
        for label, items in (("stages:   ", entry.stages), ("arguments:", entry.arguments)):
            lines += textwrap.wrap(", ".join(items) or "none", 100, initial_indent=f"    {label} ",
                                   subsequent_indent=" " * 15, break_on_hyphens=False)
    return "\n".join(lines)


def update_markdown(path: str | Path, *, write: bool = True) -> bool:
    """Put the Markdown catalog of the built-in hooks between the markers of ``path``.

    Returns True when the file was already up to date; with ``write=False``
    only checks.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise ValueError(f"{path} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{hook_catalog(markdown=True, builtin_only=True)}\n{END}{tail}"
    if new == text:
        return True
    if write:
        path.write_text(new, encoding="utf-8")
    return False


def main(argv: list[str] | None = None) -> int:
    """``python -m hookline.hooks.catalog [--write FILE | --check FILE] [--markdown]``."""
    parser = argparse.ArgumentParser(prog="python -m hookline.hooks.catalog",
                                     description="Print the hook catalog, or update a Markdown file's.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="rewrite the catalog between the markers of FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE's catalog is out of date")
    parser.add_argument("--markdown", action="store_true", help="print Markdown instead of text")
    args = parser.parse_args(argv)
    if args.write or args.check:
        fresh = update_markdown(args.write or args.check, write=bool(args.write))
        if args.check and not fresh:
            print(f"{args.check} is out of date; run: python -m hookline.hooks.catalog --write "
                  f"{args.check}", file=sys.stderr)
            return 1
        return 0
    print(hook_catalog(markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
