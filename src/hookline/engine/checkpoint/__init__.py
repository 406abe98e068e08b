"""Checkpoints, in one package: what they hold, writing them atomically, loading them safely.

* :mod:`.run` — :func:`collect` / :func:`apply`: a Runner's whole state to a
  checkpoint dict and back (model, optimizer wrapper, schedulers, hook
  states, RNG, position in the data).
* :mod:`.content` — :func:`make_meta` (the ``meta`` entry every hookline
  checkpoint carries), :func:`to_plain` and :func:`check_weights_only` (so
  that ``torch.load(weights_only=True)`` accepts the file), :func:`serialize`.
* :mod:`.atomic` — :func:`write_checkpoint` (the one write path: atomic
  file, then the ``latest`` pointer), :func:`save_atomic`,
  :func:`write_latest` / :func:`read_latest`.
* :mod:`.writer` — :class:`CheckpointWriter`: the same writes on a
  background thread, in order.
* :mod:`.loading` — :func:`load_checkpoint_file` (every failure a
  :class:`CheckpointError` naming the file) and :func:`find_resumable`.

Example::

    >>> import tempfile, torch
    >>> from hookline.engine.checkpoint import make_meta, save_atomic, write_latest, find_resumable
    >>> folder = tempfile.mkdtemp()
    >>> ckpt = {"meta": make_meta(epoch=1, iteration=45), "model": {"w": torch.ones(2)}}
    >>> path = save_atomic(ckpt, f"{folder}/epoch_1.pth")
    >>> _ = write_latest(folder, path.name)
    >>> found, loaded = find_resumable(folder)
    >>> found.name, loaded["meta"]["iter"]
    ('epoch_1.pth', 45)
"""

from .atomic import LATEST_FILENAME, atomic_write, read_latest, save_atomic, write_checkpoint, write_latest
from .content import check_weights_only, make_meta, serialize, to_plain
from .errors import CheckpointError, CheckpointNotFoundError
from .loading import find_resumable, load_checkpoint_file
from .run import apply, collect, load, resume_or_load, save
from .writer import CheckpointWriter

__all__ = [
    "LATEST_FILENAME",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointWriter",
    "apply",
    "atomic_write",
    "check_weights_only",
    "collect",
    "find_resumable",
    "load",
    "load_checkpoint_file",
    "make_meta",
    "read_latest",
    "resume_or_load",
    "save",
    "save_atomic",
    "serialize",
    "to_plain",
    "write_checkpoint",
    "write_latest",
]
