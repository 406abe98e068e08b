"""The process a run lives in: seeds, the device, the work dir, and tearing down at exit.

Example::

    >>> from hookline.engine.environment import check_device, resolve_device, seed_everything
    >>> seed_everything(0); resolve_device("cpu")
    device(type='cpu')
    >>> check_device("cpu:x")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'cpu:x'
"""

from __future__ import annotations

import atexit
import gc
import os
import random
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from hookline.core import ConfigError

from . import distributed

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class _ExitRelease:
    """The multi-process Runners of this process, let go of at exit by one handler
    (registered with the first of them, so it runs after exit handlers registered before)."""

    def __init__(self) -> None:
        self.runners: weakref.WeakSet[Runner] = weakref.WeakSet()
        self.destroy = False  # a Runner initialised the process group: destroy it too
        self.registered = False


_EXIT_RELEASE = _ExitRelease()


def _shutdown_distributed(release: _ExitRelease) -> None:
    """At exit, while the interpreter is still whole: let go of the process group, and
    destroy it if a Runner of this process created it, so that gloo's worker threads end here.

    A gloo worker may still hold a finished collective whose tensors Python dropped. If it
    lets go of it only once the interpreter is finalising, it cannot take the interpreter
    lock and the process aborts ("terminate called without an active exception": about
    once in 80 two-rank runs on a loaded 2-core machine). The DDP wrappers are collected
    first (their reducers hold the group too), while this function still holds the
    groups; the last references then go from Python, whose destructor releases the lock
    while it joins the workers.
    """
    groups = [runner.release_distributed() for runner in list(release.runners)]
    gc.collect()  # no strong reference to a Runner is left here
    if release.destroy:
        distributed.destroy()
    del groups  # the last references once the group was destroyed (by us, or by the user)


def check_device(device: Any) -> None:
    """Raise :class:`ConfigError` unless ``device`` names a device this machine has.

    Nothing is initialised: CUDA is asked whether it is available and how many
    devices it sees, no context is created.
    """
    if isinstance(device, str) and device == "auto":
        return
    if not isinstance(device, (str, torch.device)):
        raise ConfigError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") \
            from exc
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            why = ("this torch build has no CUDA support" if torch.version.cuda is None
                   else "no CUDA GPU is visible")
            raise ConfigError(f"device {str(device)!r} is not available: {why}; available "
                              f"here: {_available_devices()}")
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            raise ConfigError(f"device {str(device)!r} does not exist: this machine has {count} "
                              f"CUDA device(s); available here: {_available_devices()}")
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device {str(device)!r} is not available (no MPS backend); available "
                          f"here: {_available_devices()}")


def _available_devices() -> str:
    names = ["auto", "cpu"]
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        names += ["cuda", *(f"cuda:{i}" for i in range(count))]
    if torch.backends.mps.is_available():
        names.append("mps")
    return ", ".join(names)


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a device."""
    check_device(device)
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    return torch.device(device)


def check_writable_folder(folder: Any, what: str) -> Path:
    """``folder`` as a Path, once it is known that this process can create and write it (the
    check of :func:`check_work_dir`, for other output folders: ``what`` names the argument,
    e.g. ``"CheckpointHook out_dir"``). Only the main process (``RANK`` 0) checks: it is the
    one that writes.

    Example::

        >>> check_writable_folder("/proc/logs", "log_dir")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: log_dir '/proc/logs' cannot be written: ...
    """
    if os.environ.get("RANK", "0") != "0":
        return Path(folder)
    return check_work_dir(folder, what)


def check_work_dir(work_dir: Any, what: str = "work_dir") -> Path:
    """``work_dir`` as a Path, once it is known that the run can create and write it.

    A work dir that is a file, lies under a file, or whose nearest existing
    folder does not let this process create a folder in it (read-only,
    ``/proc``, no permission) is a :class:`ConfigError`. The test creates and
    removes an empty temporary folder there; nothing else is written.

    Example::

        >>> import tempfile
        >>> check_work_dir(tempfile.mkdtemp() + "/runs/a").name
        'a'
        >>> check_work_dir(123)
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: work_dir must be a folder path (a str or a Path), got 123
    """
    if not isinstance(work_dir, (str, os.PathLike)) or not str(work_dir):
        raise ConfigError(f"{what} must be a folder path (a str or a Path), got {work_dir!r}")
    if "\0" in str(work_dir):
        raise ConfigError(f"{what} {str(work_dir)!r} holds a NUL byte; choose another {what}")
    path = Path(work_dir)
    existing = path
    try:
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        is_dir = existing.is_dir()
    except OSError as exc:  # a name too long, a folder this process may not search
        raise ConfigError(f"{what} {str(path)!r} cannot be used: {exc.strerror or exc} "
                          f"({exc.filename or existing}); choose another {what}") from None
    if not is_dir:
        where = "is a file" if existing == path else f"lies under the file {str(existing)!r}"
        raise ConfigError(f"{what} {str(path)!r} {where}, not a folder; choose another {what}")
    _check_name_lengths(path, existing, what)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".hookline-check-", dir=existing))
    except OSError as exc:
        raise ConfigError(f"{what} {str(path)!r} cannot be written: creating a folder in "
                          f"{str(existing)!r} fails ({exc.strerror or exc})") from None
    return path


def _check_name_lengths(path: Path, existing: Path, what: str) -> None:
    """The folders still to create under ``existing`` fit the file system's name limit."""
    try:
        limit = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    for part in path.relative_to(existing).parts:
        if len(os.fsencode(part)) > limit:
            raise ConfigError(f"{what} {str(path)!r} cannot be created: the folder name "
                              f"{part[:40]!r}... is longer than the {limit} bytes the file "
                              f"system allows; choose another {what}")


def release_at_exit(runner: Runner, *, destroy: bool) -> None:
    """When the process exits, let go of the process group ``runner`` holds (and destroy it
    when ``destroy``: this process created it), before the interpreter finalises."""
    _EXIT_RELEASE.runners.add(runner)
    _EXIT_RELEASE.destroy = _EXIT_RELEASE.destroy or destroy
    if not _EXIT_RELEASE.registered:
        _EXIT_RELEASE.registered = True
        atexit.register(_shutdown_distributed, _EXIT_RELEASE)
