"""Before a new training run writes: the files it would replace must be hookline's own.

A new run (not a resume) writes ``epoch_N.pth`` / ``iter_N.pth`` /
``best_*.pth`` and the ``latest`` pointer into its checkpoint folders (the
work dir; a CheckpointHook's ``out_dir``), replacing files of the same
names, and its ``max_keep_ckpts`` deletes them again. That is fine for the
checkpoints of an earlier run there (a warning says so), but not for

* the file the run loads its weights from (``load_from``, a
  CheckpointLoaderHook's path): fine-tuning from ``work_dir/epoch_3.pth``
  into the same work dir would replace (or delete) the weights it starts from;
* a file of such a name that is not a hookline checkpoint (pretrained
  weights saved as ``epoch_1.pth``, a user's own ``latest`` notes).

:func:`check_new_run_files` refuses both with one :class:`ConfigError`
naming the file and what to do, before anything is written. Whether a file
is a hookline checkpoint is read from the zip archive's pickle (its
``meta`` holds ``hookline_version``) without loading any tensor.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "latest").write_text("my notes\\n")
    >>> is_hookline_file(folder / "latest")
    False
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError

from .atomic import LATEST_FILENAME, read_latest
from .errors import CheckpointError
from .names import NamePattern, is_checkpoint_name

if TYPE_CHECKING:  # pragma: no cover
    from ..runner import Runner

_POINTER_SIZE = 4096  # a 'latest' pointer holds one file name
_MARK = b"hookline_version"  # the key of a hookline checkpoint's meta (content.make_meta)


def is_hookline_file(path: Path) -> bool:
    """Whether ``path`` is a hookline checkpoint or ``latest`` pointer (what a new run may
    replace). Reads the pointer's text, or the pickle of a checkpoint's zip archive (not
    its tensors); anything unreadable counts as not hookline's."""
    try:
        if path.name == LATEST_FILENAME:
            return _is_pointer(path)
        with zipfile.ZipFile(path) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
            return len(pickles) == 1 and _MARK in archive.read(pickles[0])
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError):
        return False


def _is_pointer(path: Path) -> bool:
    if path.stat().st_size >= _POINTER_SIZE:
        return False
    try:
        target = read_latest(path.parent)
    except CheckpointError:
        return False
    return target is not None and (target.suffix == ".pth" or target.is_file())


def checkpoint_folders(runner: Runner) -> dict[Path, list[NamePattern]]:
    """The folders a training run of ``runner`` writes checkpoints into, with the name
    templates of its ``filename_tmpl`` s: the work dir (signal stops write there too)
    and every CheckpointHook's."""
    folders: dict[Path, list[NamePattern]] = {Path(runner.work_dir): []}
    for hook in runner.hooks.hooks:  # CheckpointHooks (the engine does not import the hooks)
        if callable(getattr(hook, "note_stop_checkpoint", None)):
            out_dir = getattr(hook, "out_dir", None)
            folder = Path(out_dir) if out_dir is not None else Path(runner.work_dir)
            patterns = folders.setdefault(folder, [])
            template = getattr(hook, "filename_tmpl", None)
            if isinstance(template, str) and template.count("{}") == 1:
                patterns.append(NamePattern(template))
    return folders


def _weights_file(hook: Any) -> Path | None:
    """The file a CheckpointLoaderHook loads (found by class name: the engine does not import
    the hooks); None for any other hook."""
    path = getattr(hook, "path", None)
    if any(cls.__name__ == "CheckpointLoaderHook" for cls in type(hook).__mro__) \
            and isinstance(path, (str, os.PathLike)):
        return Path(path)
    return None


def _written_names(folder: Path, patterns: Iterable[NamePattern]) -> list[Path]:
    """The entries of ``folder`` whose names a run's checkpoint writes take."""
    patterns = list(patterns)
    if not folder.is_dir():
        return []
    return [entry for entry in sorted(folder.iterdir())
            if entry.name == LATEST_FILENAME or is_checkpoint_name(entry.name)
            or any(p.matches(entry.name) for p in patterns)]


def _same_file(entry: Path, source: Path) -> bool:
    try:
        return os.path.samefile(entry, source)
    except OSError:
        return False


def check_new_run_files(runner: Runner, load_from: Any = None) -> None:
    """Refuse a new training run that would replace ``load_from`` or a file that is not
    hookline's (see the module's docstring); nothing is written or changed here."""
    sources = [(f"load_from {str(load_from)!r}", Path(load_from))] if load_from is not None \
        else []
    for hook in runner.hooks.hooks:
        path = _weights_file(hook)
        if path is not None:
            sources.append((f"CheckpointLoaderHook's path {str(path)!r}", path))
    foreign: list[str] = []
    for folder, patterns in checkpoint_folders(runner).items():
        for entry in _written_names(folder, patterns):
            if entry.is_symlink() or not entry.is_file():
                continue  # replacing a link or skipping a folder loses no file's data
            loaded = next((what for what, path in sources if _same_file(entry, path)), None)
            if loaded is not None:
                resume = (" To continue the run that wrote it instead, pass resume= (its "
                          "path, or 'auto')." if is_hookline_file(entry) else "")
                raise ConfigError(
                    f"{loaded} is in {str(folder)!r}, where this new run "
                    f"writes its checkpoints, under a name they take ({entry.name}): the run "
                    "would replace it (and max_keep_ckpts delete it), losing the weights it "
                    "starts from. Copy or move it out of that folder first (e.g. to "
                    "pretrained.pth elsewhere), or give this run another work_dir; nothing "
                    f"was written.{resume}")
            if not is_hookline_file(entry):
                foreign.append(str(entry))
    if foreign:
        names = ", ".join(repr(name) for name in foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ConfigError(
            f"{names} {'is' if len(foreign) == 1 else 'are'} not hookline's (not a checkpoint "
            "it wrote, nor its 'latest' pointer), but this new run writes its checkpoints "
            f"under {'that name' if len(foreign) == 1 else 'those names'} and would replace "
            f"{'it' if len(foreign) == 1 else 'them'}: move or rename "
            f"{'it' if len(foreign) == 1 else 'them'}, or give this run another work_dir "
            "(or CheckpointHook out_dir); nothing was written")
