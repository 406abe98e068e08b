"""The file names hookline gives checkpoints, and telling them apart from anything else.

File names come back from checkpoints (the keep-N list, the best file) and are
later deleted as ``folder / name``; files left by an interrupted run are
cleaned by name. Both only ever touch names that these patterns accept:
plain file names (no folder part), made from hookline's own templates.

* periodic: ``epoch_N.pth``, ``iter_N.pth``, or a ``filename_tmpl`` such as
  ``ckpt_{}.pth`` (``{}`` is the epoch or iteration);
* best: ``best_<metric>_epoch_N.pth`` / ``best_<metric>_iter_N.pth``.

Example::

    >>> from hookline.engine.checkpoint.names import NamePattern
    >>> periodic = NamePattern("epoch_{}.pth")
    >>> periodic.number("epoch_12.pth"), periodic.number("../epoch_12.pth"), periodic.number("log.txt")
    (12, None, None)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: the periodic templates of CheckpointHook (by epoch, by iteration)
PERIODIC_TEMPLATES = ("epoch_{}.pth", "iter_{}.pth")
_BEST = re.compile(r"best_.+_(?:epoch|iter)_\d+\.pth")


def plain_file_name(name: Any) -> str | None:
    """``name`` when it is a bare file name (no folder, not ``..``), else None.

    Example::

        >>> plain_file_name("epoch_3.pth"), plain_file_name("../x.pth"), plain_file_name("/etc/x")
        ('epoch_3.pth', None, None)
    """
    if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name \
            or "\\" in name or "\0" in name:
        return None
    return name


class NamePattern:
    """The names a template such as ``"epoch_{}.pth"`` makes: ``{}`` is a number.

    Example::

        >>> pattern = NamePattern("ckpt_{}.pth")
        >>> pattern.matches("ckpt_7.pth"), pattern.matches("ckpt_x.pth"), pattern.format(8)
        (True, False, 'ckpt_8.pth')
    """

    def __init__(self, template: str) -> None:
        if template.count("{}") != 1:
            raise ValueError(f"a checkpoint name template has one '{{}}', got {template!r}")
        self.template = template
        before, after = template.split("{}")
        self._regex = re.compile(re.escape(before) + r"(\d+)" + re.escape(after))

    def format(self, number: int) -> str:
        return self.template.format(number)

    def number(self, name: Any) -> int | None:
        """The number in ``name``, or None when ``name`` is not one of the template's names."""
        if plain_file_name(name) is None:
            return None
        match = self._regex.fullmatch(name)
        return int(match.group(1)) if match else None

    def matches(self, name: Any) -> bool:
        return self.number(name) is not None

    def __repr__(self) -> str:
        return f"NamePattern({self.template!r})"


def best_file_name(key: str, step: str) -> str:
    """The best checkpoint's name for metric ``key`` at ``step`` (``epoch_3``, ``iter_40``).

    Example::

        >>> best_file_name("val/mIoU", "epoch_3")
        'best_val_mIoU_epoch_3.pth'
    """
    return f"best_{key.replace('/', '_')}_{step}.pth"


def best_step(key: str, name: Any) -> tuple[str, int] | None:
    """``("epoch", 3)`` for ``best_<key>_epoch_3.pth``; None for any other name.

    Example::

        >>> best_step("accuracy", "best_accuracy_iter_40.pth"), best_step("accuracy", "../x.pth")
        (('iter', 40), None)
    """
    if plain_file_name(name) is None:
        return None
    prefix = f"best_{key.replace('/', '_')}_"
    match = re.fullmatch(re.escape(prefix) + r"(epoch|iter)_(\d+)\.pth", name)
    return (match.group(1), int(match.group(2))) if match else None


def is_checkpoint_name(name: str) -> bool:
    """Whether ``name`` is one that hookline's checkpoint hooks write by default.

    Example::

        >>> [is_checkpoint_name(n) for n in ("iter_9.pth", "best_acc_epoch_2.pth", "weights.pth")]
        [True, True, False]
    """
    return any(NamePattern(t).matches(name) for t in PERIODIC_TEMPLATES) \
        or (plain_file_name(name) is not None and _BEST.fullmatch(name) is not None)
