"""Test-session settings.

Keras 3 reads its backend once, when it is first imported: every test that imports Keras
(tests/integrations, the examples of docs/bridges.md) runs it on the torch backend.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")
