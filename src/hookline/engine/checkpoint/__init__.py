"""Checkpoints, in one package: what they hold, writing them atomically, loading them safely.

* :mod:`.run` — :func:`collect` / :func:`apply`: a Runner's whole state to a
  checkpoint dict and back (model, optimizer wrapper, schedulers, hook
  states, RNG, position in the data).
* :mod:`.content` — :func:`make_meta` (the ``meta`` entry every hookline
  checkpoint carries), :func:`to_plain` and :func:`check_weights_only` (so
  that ``torch.load(weights_only=True)`` accepts the file), :func:`serialize`.
* :mod:`.atomic` — :func:`write_checkpoint` (the one write path: atomic
  file with its checksum, then the ``latest`` pointer; a failure is one
  :class:`CheckpointWriteError`), :func:`save_atomic`,
  :func:`write_latest` / :func:`read_latest`, :func:`remove_temp_files`
  (what interrupted writes left).
* :mod:`.integrity` — the sha256 every checkpoint file carries in its zip
  comment, and :func:`verify_file`.
* :mod:`.writer` — :class:`CheckpointWriter`: the same writes on a
  background thread, in order.
* :mod:`.loading` — :func:`load_checkpoint_file` (checksum verified; every
  failure a :class:`CheckpointError` naming the file),
  :func:`resumable_checkpoints` and :func:`find_resumable`.
* :mod:`.fit` — :func:`check_fits`: does a checkpoint fit this run (model,
  shapes, position, optimizer groups, schedulers), before anything changes.
* :mod:`.undo` — :class:`Undo`: what applying a checkpoint changed, put back
  when a part of it fails.
* :mod:`.names` — hookline's checkpoint file names (:class:`NamePattern`,
  :func:`plain_file_name`): the only names it deletes.

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

from .atomic import (
    LATEST_FILENAME,
    atomic_write,
    read_latest,
    remove_temp_files,
    save_atomic,
    write_checkpoint,
    write_latest,
)
from .content import check_weights_only, make_meta, serialize, to_plain
from .errors import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointWriteError,
    NoResumableCheckpointError,
)
from .fit import check_fits
from .integrity import verify_file
from .loading import find_resumable, load_checkpoint_file, resumable_checkpoints
from .names import NamePattern, plain_file_name
from .run import apply, collect, load, resume_or_load, save
from .undo import Undo
from .writer import CheckpointWriter

__all__ = [
    "LATEST_FILENAME",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointWriteError",
    "CheckpointWriter",
    "NamePattern",
    "NoResumableCheckpointError",
    "Undo",
    "apply",
    "atomic_write",
    "check_fits",
    "check_weights_only",
    "collect",
    "find_resumable",
    "load",
    "load_checkpoint_file",
    "make_meta",
    "plain_file_name",
    "read_latest",
    "remove_temp_files",
    "resumable_checkpoints",
    "resume_or_load",
    "save",
    "save_atomic",
    "serialize",
    "to_plain",
    "verify_file",
    "write_checkpoint",
    "write_latest",
]
