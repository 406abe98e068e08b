"""Test-session settings.

Keras 3 reads its backend once, when it is first imported: every test that imports Keras
(tests/integrations, the examples of docs/bridges.md) runs it on the torch backend.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import pytest

from hookline.core.registry import default_scope, set_default_scope


@pytest.fixture(autouse=True)
def _default_scope_as_it_was():
    """A test that sets the registries' default scope (``init_default_scope``, a ported
    project's import) does not change how later tests in the same process resolve names."""
    previous = default_scope()
    yield
    set_default_scope(previous)
