"""Every ```python block of README.md and docs/*.md runs.

Each file's blocks run in order in one namespace (a fresh module), in a
temporary working directory, so a later block may use what an earlier one
defined. Tracebacks point at the Markdown file and line. New files under
docs/ are picked up automatically.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# An opening fence, possibly indented (inside a list), then the code up to the
# closing fence at the same indentation.
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
                   re.MULTILINE | re.DOTALL)


#: pages whose examples need an optional extra (``pip install hookline[keras,lightning]``)
NEEDS = {"docs/bridges.md": ("keras", "lightning")}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number of the first code line, code)`` for each ```python block."""
    blocks = []
    for match in FENCE.finditer(text):
        indent = match["indent"]
        lines = match["code"].splitlines()
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines)
        first_line = text.count("\n", 0, match.start("code")) + 1
        blocks.append((first_line, code + "\n"))
    return blocks


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_block_extraction_keeps_line_numbers_and_dedents():
    text = "intro\n```python\nx = 1\n```\n- item\n\n  ```python\n  y = x\n  ```\n```bash\nls\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (8, "y = x\n")]


def test_readme_and_core_docs_have_examples():
    for name in ("README.md", "docs/core.md"):
        assert python_blocks((ROOT / name).read_text(encoding="utf-8")), f"{name} has no python block"


def test_readme_links_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Documentation", 1)
    assert len(section) == 2, "README.md needs a '## Documentation' section"
    listing = section[1].split("\n## ", 1)[0]
    missing = [page_id(p) for p in PAGES[1:] if f"({page_id(p)})" not in listing]
    assert not missing, f"add a link to {missing} under '## Documentation' in README.md"


@pytest.mark.parametrize(
    "path", [p for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))], ids=page_id
)
def test_python_blocks_run(path, tmp_path, monkeypatch):
    for module in NEEDS.get(page_id(path), ()):  # optional extras (make test installs them)
        pytest.importorskip(module, reason=f"{page_id(path)} needs {module}")
    monkeypatch.chdir(tmp_path)
    name = "docs_" + re.sub(r"\W", "_", page_id(path))
    module = types.ModuleType(name)  # a real module, so pickling and dataclasses work
    module.__file__ = str(path)
    monkeypatch.setitem(sys.modules, name, module)
    for first_line, code in python_blocks(path.read_text(encoding="utf-8")):
        # pad so that tracebacks show the Markdown line numbers
        exec(compile("\n" * (first_line - 1) + code, str(path), "exec"), module.__dict__)
