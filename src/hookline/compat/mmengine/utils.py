"""``mmengine.utils``: type checks, paths, ``ProgressBar`` and version helpers.

Example::

    >>> from hookline.compat.mmengine.utils import is_list_of, is_seq_of, is_tuple_of
    >>> is_list_of([1, 2], int), is_seq_of(("a", 1), str), is_tuple_of((1.0,), float)
    (True, False, True)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import torch

TORCH_VERSION = torch.__version__


def is_str(x: Any) -> bool:
    """Whether ``x`` is a string."""
    return isinstance(x, str)


def is_seq_of(seq: Any, expected_type: type | tuple[type, ...],
              seq_type: type | None = None) -> bool:
    """Whether ``seq`` is a sequence (of ``seq_type``) whose items are all ``expected_type``."""
    exp_seq_type: type = Sequence if seq_type is None else seq_type
    if not isinstance(seq, exp_seq_type):
        return False
    items: Any = seq
    return all(isinstance(item, expected_type) for item in items)


def is_list_of(seq: Any, expected_type: type | tuple[type, ...]) -> bool:
    return is_seq_of(seq, expected_type, seq_type=list)


def is_tuple_of(seq: Any, expected_type: type | tuple[type, ...]) -> bool:
    return is_seq_of(seq, expected_type, seq_type=tuple)


def is_method_overridden(method: str, base_class: type, derived_class: Any) -> bool:
    """Whether ``derived_class`` (a class or an instance) overrides ``base_class.method``."""
    if not isinstance(derived_class, type):
        derived_class = type(derived_class)
    return getattr(derived_class, method) is not getattr(base_class, method)


def has_method(obj: Any, method: str) -> bool:
    return callable(getattr(obj, method, None))


def to_ntuple(n: int) -> Callable[[Any], tuple[Any, ...]]:
    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n
    return parse


to_1tuple, to_2tuple, to_3tuple, to_4tuple = (to_ntuple(n) for n in (1, 2, 3, 4))


def mkdir_or_exist(dir_name: str | Path, mode: int = 0o777) -> None:
    """Make ``dir_name`` (and its parents) unless it exists; ``""`` does nothing."""
    if dir_name == "":
        return
    os.makedirs(os.path.expanduser(dir_name), mode=mode, exist_ok=True)


def is_filepath(x: Any) -> bool:
    return isinstance(x, (str, Path))


def check_file_exist(filename: str | Path, msg_tmpl: str = 'file "{}" does not exist') -> None:
    if not os.path.isfile(filename):
        raise FileNotFoundError(msg_tmpl.format(filename))


def scandir(dir_path: str | Path, suffix: str | tuple[str, ...] | None = None,
            recursive: bool = False, case_sensitive: bool = True) -> Iterator[str]:
    """Paths (relative to ``dir_path``) of the files in it, optionally by ``suffix``."""
    root = Path(dir_path)
    wanted = suffix if suffix is None or isinstance(suffix, tuple) else (suffix,)
    if wanted is not None and not case_sensitive:
        wanted = tuple(s.lower() for s in wanted)
    for path in sorted(root.rglob("*") if recursive else root.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        name = path.name if case_sensitive else path.name.lower()
        if wanted is None or name.endswith(wanted):
            yield str(path.relative_to(root))


def digit_version(version_str: str, length: int = 4) -> tuple[int, ...]:
    """``"2.13.0+cpu"`` -> ``(2, 13, 0, 0, 0, 0)``: comparable version tuples (pre-releases
    sort before their release)."""
    match = re.match(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?", version_str.strip())
    if match is None:
        raise ValueError(f"cannot read a version from {version_str!r}")
    release = [int(x) for x in match.group(1).split(".")][:length]
    release += [0] * (length - len(release))
    pre = {"a": -3, "b": -2, "rc": -1}.get(match.group(2) or "", 0)
    return (*release, pre, int(match.group(3) or 0))


def get_git_hash(fallback: str = "unknown", digits: int | None = None) -> str:
    """The commit of the git repository the process runs in (``git rev-parse HEAD`` in the
    current directory, MMEngine's way: ``""`` outside a repository), ``fallback`` when git
    cannot be run; ``digits`` keeps that many characters.

    Example::

        >>> len(get_git_hash(digits=7)) <= 7
        True
    """
    if digits is not None and not isinstance(digits, int):
        raise TypeError("digits must be None or an integer")
    env = {k: v for k in ("SYSTEMROOT", "PATH", "HOME") if (v := os.environ.get(k)) is not None}
    env.update(LANGUAGE="C", LANG="C", LC_ALL="C")
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, env=env,
                             check=False).stdout
        sha = out.strip().decode("ascii")
    except OSError:
        return fallback
    return sha if digits is None else sha[:digits]


class ProgressBar:
    """A text progress bar: ``[>>>>    ] 3/8, 12.0 task/s, elapsed: 0s, ETA: 1s``.

    Example::

        >>> import io
        >>> out = io.StringIO()
        >>> bar = ProgressBar(2, bar_width=4, file=out)
        >>> bar.update(); bar.update()
        >>> bar.completed, out.getvalue().splitlines()[-1].startswith("[>>>>] 2/2")
        (2, True)
    """

    def __init__(self, task_num: int = 0, bar_width: int = 50, start: bool = True,
                 file: IO[str] = sys.stdout) -> None:
        self.task_num = task_num
        self.bar_width = bar_width
        self.completed = 0
        self.file = file
        self._start = time.perf_counter()
        if start:
            self.start()

    def start(self) -> None:
        if self.task_num > 0:
            self.file.write(f"[{' ' * self.bar_width}] 0/{self.task_num}, elapsed: 0s, ETA:")
        else:
            self.file.write("completed: 0, elapsed: 0s")
        self.file.flush()
        self._start = time.perf_counter()

    def update(self, num_tasks: int = 1) -> None:
        self.completed += num_tasks
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        fps = self.completed / elapsed
        if self.task_num > 0:
            done = self.completed / self.task_num
            eta = int(elapsed * (1 - done) / done + 0.5) if done > 0 else 0
            mark = int(self.bar_width * min(done, 1.0))
            bar = ">" * mark + " " * (self.bar_width - mark)
            self.file.write(f"\r[{bar}] {self.completed}/{self.task_num}, {fps:.1f} task/s, "
                            f"elapsed: {int(elapsed + 0.5)}s, ETA: {eta:5}s")
            if self.completed >= self.task_num:
                self.file.write("\n")
        else:
            self.file.write(f"\rcompleted: {self.completed}, elapsed: {int(elapsed + 0.5)}s, "
                            f"{fps:.1f} tasks/s")
        self.file.flush()


def track_iter_progress(tasks: Sequence[Any], bar_width: int = 50,
                        file: IO[str] = sys.stdout) -> Iterator[Any]:
    """Yield each of ``tasks``, drawing a :class:`ProgressBar`."""
    bar = ProgressBar(len(tasks), bar_width, file=file)
    for task in tasks:
        yield task
        bar.update()


__all__ = [
    "TORCH_VERSION", "ProgressBar", "check_file_exist", "digit_version", "get_git_hash", "has_method",
    "is_filepath", "is_list_of", "is_method_overridden", "is_seq_of", "is_str", "is_tuple_of",
    "mkdir_or_exist", "scandir", "to_1tuple", "to_2tuple", "to_3tuple", "to_4tuple",
    "to_ntuple", "track_iter_progress",
]
