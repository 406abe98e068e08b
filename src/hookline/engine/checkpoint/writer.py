"""Background checkpoint writing: serialise now, write and fsync off the training thread.

The Runner snapshots a checkpoint into bytes on the training thread (so later
updates of the weights cannot leak into it), then hands the bytes to one
writer thread, which writes them atomically (temp file, fsync, ``os.replace``),
updates the ``latest`` pointer and deletes the files the keep-N policy let go,
strictly in submission order. Training goes on meanwhile; ``flush()`` waits
for everything submitted and re-raises the first failure (a
:class:`~hookline.engine.checkpoint.CheckpointWriteError` as it is: one line
naming the file and the cause); the next ``write()`` or ``remove()`` does too.

Example::

    >>> import tempfile, torch
    >>> from pathlib import Path
    >>> from hookline.engine.checkpoint import CheckpointWriter, serialize
    >>> folder = Path(tempfile.mkdtemp())
    >>> writer = CheckpointWriter()
    >>> writer.write(folder / "a.pth", serialize({"w": torch.ones(2)}))
    >>> writer.flush(); sorted(p.name for p in folder.iterdir())
    ['a.pth', 'latest']
    >>> writer.close()  # flush, and end the thread
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .atomic import write_checkpoint
from .errors import CheckpointError


def _STOP() -> None:
    """The job that ends the writer thread (see :meth:`CheckpointWriter.close`)."""


class CheckpointWriter:
    """One daemon thread that runs checkpoint jobs in the order they were submitted."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[Callable[[], Any]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def write(self, path: Path, payload: bytes, *, make_room: Sequence[Path] = (),
              logger: logging.Logger | None = None, point_latest: bool = True) -> None:
        """Queue an atomic write of ``payload`` to ``path`` (and the ``latest`` pointer);
        the arguments as for :func:`~hookline.engine.checkpoint.write_checkpoint`."""
        self._submit(lambda: write_checkpoint(path, payload, make_room=make_room, logger=logger,
                                              point_latest=point_latest))

    def remove(self, path: Path) -> None:
        """Queue the deletion of ``path``, after every write queued before it."""
        self._submit(lambda: path.unlink(missing_ok=True))

    def _submit(self, job: Callable[[], Any]) -> None:
        self._raise_pending()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="hookline-checkpoints",
                                            daemon=True)
            self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                self._jobs.task_done()
                return
            try:
                if self._error is None:  # after a failure, later jobs (deletions) are skipped
                    job()
            except BaseException as exc:  # handed to the training thread (flush re-raises it)
                self._error = exc
            finally:
                self._jobs.task_done()

    def flush(self) -> None:
        """Wait until every queued job is done; re-raise the first failure."""
        if self._thread is not None:
            self._jobs.join()
        self._raise_pending()

    def close(self) -> None:
        """:meth:`flush`, then end the thread (the next write starts a new one), so that a
        finished run leaves no thread behind; re-raises the first failure as flush does."""
        thread = self._thread
        if thread is None:
            return
        try:
            self.flush()
        finally:
            if thread.is_alive():
                self._jobs.put(_STOP)
                thread.join()
            self._thread = None

    def _raise_pending(self) -> None:
        if self._error is None:
            return
        # let the thread skip every job queued before the failure was seen (the deletions
        # that were to follow the failed write) before anything new runs
        self._jobs.join()
        error, self._error = self._error, None
        if isinstance(error, CheckpointError):
            raise error
        if error is not None:
            raise RuntimeError(f"writing a checkpoint in the background failed: {error}") \
                from error
