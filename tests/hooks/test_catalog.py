"""The hook catalog (``hookline hooks``, docs/hooks.md) lists every registered hook correctly."""

from __future__ import annotations

import doctest
import inspect
from pathlib import Path

import pytest

import hookline.hooks.catalog as catalog
from hookline import HOOKS, Hook
from hookline.core import Priority
from hookline.hooks.catalog import END, START, catalog_entries, hook_catalog, update_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
REGENERATE = "python -m hookline.hooks.catalog --write docs/hooks.md"


def builtin_hooks() -> dict[str, type]:
    return {name: cls for name, cls in HOOKS.items()
            if inspect.isclass(cls) and issubclass(cls, Hook) and cls.__module__.startswith("hookline.")}


def test_docs_hooks_md_is_in_sync_with_the_code():
    text = DOCS.read_text(encoding="utf-8")
    assert START in text and END in text, f"docs/hooks.md lost its catalog markers; run {REGENERATE}"
    current = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert current == hook_catalog(markdown=True, builtin_only=True), (
        f"docs/hooks.md is out of date with the registered hooks; regenerate it with: {REGENERATE}")


def test_every_builtin_hook_is_listed_with_its_priority_stages_and_arguments():
    hooks = builtin_hooks()
    entries = catalog_entries(builtin_only=True)
    assert set(entries) == set(hooks) and len(hooks) >= 7
    for name, cls in hooks.items():
        entry = entries[name]
        assert entry.cls is cls
        level = Priority.get(cls.priority)
        assert entry.priority == (f"{level.name} ({int(level)})" if isinstance(level, Priority)
                                  else str(level))
        if cls.triggered_stages is Hook.triggered_stages:
            assert entry.stages == Hook.triggered_stages(object.__new__(cls))
        else:
            assert entry.stages == ["decided by each instance"]
    checkpoint = entries["CheckpointHook"]
    assert checkpoint.priority == "VERY_LOW (90)"
    assert {"after_train_epoch", "after_val_epoch"} <= set(checkpoint.stages)
    assert "interval=1" in checkpoint.arguments and "save_best=None" in checkpoint.arguments
    text = hook_catalog()
    for name in hooks:
        assert f"\n{name}  [" in text


def test_user_hooks_appear_in_the_listing_but_not_in_the_docs():
    class NoteTaker(Hook):
        """Writes notes.

        More text that is not shown.
        """

        priority = 45

        def __init__(self, path: str, every: int = 2) -> None:
            self.path, self.every = path, every

        def after_val_epoch(self, runner, metrics=None):
            pass

        def _before_iter(self, runner, batch_idx, data_batch=None, mode="train"):
            pass

    HOOKS.register(NoteTaker, name="NoteTakerForCatalogTest", force=True)
    entry = catalog_entries()["NoteTakerForCatalogTest"]
    assert entry.priority == "45" and entry.arguments == ["path", "every=2"]
    assert entry.summary == "Writes notes."
    assert entry.stages == ["before_train_iter", "before_val_iter", "after_val_epoch", "before_test_iter"]
    assert "NoteTakerForCatalogTest  [45]" in hook_catalog()
    assert "NoteTakerForCatalogTest" not in hook_catalog(markdown=True, builtin_only=True)
    row = [line for line in hook_catalog(markdown=True).splitlines() if "NoteTaker" in line][0]
    assert row.startswith("| `NoteTakerForCatalogTest` | 45 | `before_train_iter`<br>")


def test_update_markdown_writes_and_checks(tmp_path):
    page = tmp_path / "hooks.md"
    page.write_text(f"# Hooks\n\n{START}\nold\n{END}\n\nafter\n")
    assert update_markdown(page, write=False) is False
    assert "old" in page.read_text()
    assert update_markdown(page) is False
    text = page.read_text()
    assert text.startswith("# Hooks\n\n") and text.endswith(f"{END}\n\nafter\n") and "CheckpointHook" in text
    assert update_markdown(page, write=False) is True
    assert catalog.main(["--check", str(page)]) == 0
    page.write_text(f"{START}\n{END}\n")
    assert catalog.main(["--check", str(page)]) == 1
    page.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        update_markdown(page)


def test_docstring_examples():
    result = doctest.testmod(catalog, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
