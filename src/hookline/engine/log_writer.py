"""``LogWriter``: one thread that writes log lines and records, in the order they were queued.

A Runner's logger owns one (:func:`hookline.engine.logs.writer_of`). A
logging hook hands it a call (format this line and send it to the handlers,
append this record to ``metrics.jsonl``) with :meth:`LogWriter.submit`: the
training thread pays one enqueue, the writer thread does the formatting and
the file and console I/O. One writer keeps the order of everything it is
given. :meth:`LogWriter.drain` waits until all of it is written (the Runner's
logger drains before any line logged the ordinary way, and logging hooks
drain at the end of each epoch, before a checkpoint and when a run ends;
an ``atexit`` handler drains every writer left). Only records queued since
the last drain can be lost, and only if the process is killed (SIGKILL).

Example::

    >>> from hookline.engine.log_writer import LogWriter
    >>> lines = []
    >>> writer = LogWriter()
    >>> for n in range(3):
    ...     writer.submit(lines.append, n)
    >>> writer.drain(); lines
    [0, 1, 2]
    >>> writer.close()
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

_Job = tuple[Callable[..., Any], tuple[Any, ...]]
_WRITERS: weakref.WeakSet[LogWriter] = weakref.WeakSet()
_LOCAL = threading.local()  # .writer: the LogWriter whose thread this is


class LogWriter:
    """Runs submitted calls on one daemon thread, strictly in submission order.

    The thread starts at the first :meth:`submit`. It works in batches: woken
    by the first call after it went idle, it waits ``batch_s`` (or until
    someone drains) for more, then runs all of them, so a call costs the
    submitting thread an append and no wake-up (lines reach the console up
    to ``batch_s`` late). A call that raises does not stop the writer: the
    first failure is kept and raised on the next :meth:`submit` or
    :meth:`drain` (a disk-full error of a metrics file fails the run, a few
    log steps later than a direct write would). With ``background=False``
    calls run at once, on the caller's thread.
    """

    #: seconds the thread lets calls gather before it runs them (a drain does not wait)
    batch_s = 0.05
    #: seconds without work after which the thread ends (the next call starts a new one)
    idle_exit_s = 30.0

    def __init__(self, name: str = "hookline-log-writer", *, background: bool = True) -> None:
        self.name = name
        #: False: :meth:`submit` runs each call at once on the calling thread
        self.background = background
        self._reset()
        _WRITERS.add(self)

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._hurry = threading.Event()  # a drain waits: run the batch now
        self._jobs: deque[_Job] = deque()
        self._thread: threading.Thread | None = None
        self._signalled = False  # the thread was woken for the jobs now queued
        self._busy = False  # the thread is running a batch it took off _jobs
        self._error: BaseException | None = None

    @property
    def pending(self) -> int:
        """Calls queued and not taken by the thread yet (0 after :meth:`drain`)."""
        return len(self._jobs)

    def on_writer_thread(self) -> bool:
        """Whether the caller is this writer's thread (a call it runs)."""
        return getattr(_LOCAL, "writer", None) is self

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the writer thread, after everything submitted before it."""
        if self.on_writer_thread():  # a queued call's own call: a failure stays for the caller
            fn(*args)
            return
        if self._error is not None:
            self._raise_error()
        if not self.background:
            if self._jobs or self._busy:  # switched off with calls queued: those first
                self.drain()
            fn(*args)
            return
        self._jobs.append((fn, args))
        if not self._signalled or self._thread is None:
            self._wake()

    def _wake(self) -> None:
        with self._cond:
            self._signalled = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def wait(self) -> None:
        """Wait until every call submitted so far has run (failures stay for :meth:`drain`).

        Returns at once when nothing is pending, and on the writer thread
        itself (a call that logs must not wait for itself)."""
        if (self._jobs or self._busy) and not self.on_writer_thread():
            done = threading.Event()
            self._jobs.append((done.set, ()))
            self._hurry.set()
            self._wake()
            done.wait()

    def drain(self) -> None:
        """:meth:`wait`, then raise the first failure of a call, if any."""
        self.wait()
        if self._error is not None:
            self._raise_error()

    def close(self) -> None:
        """Drain, then stop the thread (a later :meth:`submit` starts a new one)."""
        self.drain()
        with self._cond:
            thread, self._thread = self._thread, None
            self._cond.notify()
        if thread is not None and not self.on_writer_thread():
            thread.join()

    def _run(self) -> None:
        _LOCAL.writer = self
        me = threading.current_thread()
        while True:
            with self._cond:
                self._signalled = False
                while True:
                    if self._thread is not me:  # closed (a newer thread takes what comes)
                        return
                    if self._jobs:
                        break
                    if not self._cond.wait(timeout=self.idle_exit_s) and not self._jobs:
                        self._thread = None  # idle: the next call starts a new thread
                        return
            self._hurry.wait(self.batch_s)  # let a batch gather, unless someone waits
            self._hurry.clear()
            self._busy = True
            try:
                jobs = self._jobs
                while jobs:
                    fn, args = jobs.popleft()
                    try:
                        fn(*args)
                    except BaseException as exc:  # handed to the next caller of submit/drain
                        if self._error is None:
                            self._error = exc
            finally:
                self._busy = False

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def __repr__(self) -> str:
        return f"LogWriter({self.name!r}, pending={self.pending})"


def drain_all() -> None:
    """Drain every live writer (registered with ``atexit``: a process that exits, even by
    ``sys.exit`` outside a run, writes what it queued)."""
    for writer in list(_WRITERS):
        try:
            writer.drain()
        except Exception:  # at exit, nobody is left to raise to
            pass


def _after_fork_in_child() -> None:
    for writer in list(_WRITERS):  # the thread did not survive the fork: start afresh
        writer._reset()  # noqa: SLF001  (this module's own class)


atexit.register(drain_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
