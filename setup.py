"""Build step: the wheel ships ``docs/*.md`` and ``README.md`` as ``hookline/docs/``.

``hookline docs`` reads them there (see src/hookline/app/docs_command.py);
the repository's ``docs/`` stays their one source. Everything else about
the package is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithDocs(build_py):
    """``build_py``, then the Markdown docs copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads docs/ itself
            return
        files = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
        missing = [str(f) for f in files if not f.is_file()]
        if missing or len(files) < 2:
            raise SystemExit(f"setup.py: documentation files missing: {missing or 'docs/*.md'}")
        target = Path(self.build_lib) / "hookline" / "docs"
        self.mkpath(str(target))
        for source in files:
            self.copy_file(str(source), str(target / source.name))


setup(cmdclass={"build_py": BuildPyWithDocs})
