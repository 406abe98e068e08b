"""The error every checkpoint problem becomes: one line naming the file and why.

Example::

    >>> from hookline.engine.checkpoint import CheckpointError
    >>> CheckpointError("a.pth", "truncated").reason
    'truncated'
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

PathLike = str | os.PathLike[str]


class CheckpointError(Exception):
    """A file that is not a loadable hookline checkpoint.

    The message names the file and says why (truncated, not a torch file,
    refused by ``weights_only`` loading, not a hookline checkpoint, missing
    keys, ...). The original exception, if any, is ``__cause__``.

    Attributes:
        path: the file.
        reason: why it cannot be loaded, in words.

    Example::

        >>> str(CheckpointError("runs/epoch_3.pth", "truncated or corrupt"))
        "cannot load checkpoint 'runs/epoch_3.pth': truncated or corrupt"
    """

    def __init__(self, path: PathLike, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"cannot load checkpoint {str(path)!r}: {reason}")

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across processes
        return (type(self), (self.path, self.reason))


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The checkpoint file does not exist.

    Both a :class:`CheckpointError` and a :class:`FileNotFoundError`, so either
    ``except`` clause catches it.

    Example::

        >>> from hookline.engine.checkpoint import load_checkpoint_file
        >>> try:
        ...     load_checkpoint_file("/no/such/file.pth")
        ... except FileNotFoundError as exc:
        ...     print(exc)
        cannot load checkpoint '/no/such/file.pth': no such file
    """

    def __init__(self, path: PathLike, reason: str = "no such file") -> None:
        CheckpointError.__init__(self, path, reason)
        self.errno = errno.ENOENT
        self.strerror = reason
        self.filename = str(path)
