"""A Runner's checkpoint methods, under MMEngine's names: save, load the weights, resume.

:class:`~hookline.engine.Runner` inherits them; the work is done in
:mod:`hookline.engine.checkpoint` (``save``, ``load``). As in MMEngine,
``load_checkpoint(path)`` loads the weights only and ``resume(path)`` the
whole run (position, optimizer, schedulers, hook state, RNG).

Example::

    >>> import tempfile, torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline.engine import Runner
    >>> data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    >>> runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2,
    ...                 train_dataloader=DataLoader(data, batch_size=8),
    ...                 work_dir=tempfile.mkdtemp(), default_hooks={"logger": None})
    >>> path = runner.save_checkpoint(tempfile.mkdtemp(), "start.pth")  # MMEngine's form
    >>> _ = runner.train()  # doctest: +ELLIPSIS
    2... - hookline - INFO - model: Linear, ...
    ...
    >>> _ = runner.load_checkpoint(path)  # doctest: +ELLIPSIS
    2... - hookline - INFO - loaded weights from .../start.pth
    >>> runner.iter  # the weights changed; the run stays where it was
    8
    >>> _ = runner.resume(path)  # doctest: +ELLIPSIS
    2... - hookline - INFO - resumed from .../start.pth...
    >>> runner.iter  # the whole run, back at its start
    0
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError

from .checkpoint import load, resume_or_load, save

if TYPE_CHECKING:  # pragma: no cover
    from .checkpoint import CheckpointWriter

#: MMEngine's remote-storage arguments of ``save_checkpoint``: hookline writes local files only
_NO_BACKENDS = ("file_client_args", "backend_args")


class RunnerCheckpoints:
    """The checkpoint side of a Runner (see the module docstring)."""

    checkpoint_writer: CheckpointWriter
    rank: int
    work_dir: Path
    _resume: str | os.PathLike[str] | None
    _load_from: str | os.PathLike[str] | None
    _loaded: bool

    @property
    def resume_from(self) -> str | os.PathLike[str] | None:
        """What this Runner resumes (its ``resume=``: ``"auto"`` or a path), or None."""
        return self._resume

    def save_checkpoint(self, path: str | Path, filename: str | None = None,
                        file_client_args: Any = None, *, save_optimizer: bool = True,
                        save_param_scheduler: bool | None = None,
                        meta: Mapping[str, Any] | None = None, by_epoch: bool | None = None,
                        backend_args: Any = None, background: bool = False,
                        make_room: Sequence[str | Path] = ()) -> Path:
        """Write the run's state to ``path`` (relative paths go in ``work_dir``) atomically.

        MMEngine's form works too: ``save_checkpoint(out_dir, filename, meta={...})``
        writes ``out_dir/filename`` and adds ``meta`` to the checkpoint's ``meta``
        (plain data: numbers, strings, lists, dicts, tensors); ``by_epoch`` is
        accepted (the meta records epoch and iteration either way). Schedulers are
        saved with the optimizer, so ``save_param_scheduler`` must equal
        ``save_optimizer``; remote storage (``file_client_args``, ``backend_args``)
        is refused.

        The state is serialised at once. With ``background=True`` the file is
        then written and fsynced by a writer thread while training goes on
        (in order with other background writes; ``flush_checkpoints()`` waits,
        and the Runner flushes before it loads a checkpoint and when a run
        ends). Multi-process runs always write in the foreground, so every
        rank finds the file after the barrier that follows a save. A failed
        write is a ``CheckpointWriteError`` naming the file and the cause;
        ``make_room`` names files to delete first if the disk is full (the
        checkpoints keep-N drops after this one).
        """
        del by_epoch  # MMEngine's; hookline's meta has both counters
        for name, value in zip(_NO_BACKENDS, (file_client_args, backend_args)):
            if value is not None:
                raise ConfigError(f"save_checkpoint: {name} (remote storage) is not supported; "
                                  "hookline writes local files (give a local folder)")
        if save_param_scheduler is not None and bool(save_param_scheduler) != bool(save_optimizer):
            raise ConfigError("save_checkpoint: schedulers are saved with the optimizer, so "
                              "save_param_scheduler must equal save_optimizer")
        if meta is not None and not isinstance(meta, Mapping):
            raise ConfigError(f"save_checkpoint: meta must be a dict, got {meta!r}")
        target = Path(path) / filename if filename is not None else Path(path)
        return save(self, target, save_optimizer=save_optimizer,  # type: ignore[arg-type]
                    background=background, make_room=make_room, meta=meta)

    def remove_checkpoint(self, path: str | Path) -> None:
        """Delete a checkpoint file (main process only), after every pending background write."""
        if self.rank == 0:
            self.checkpoint_writer.remove(Path(path))

    def flush_checkpoints(self) -> None:
        """Wait for background checkpoint writes; re-raise the first failure."""
        self.checkpoint_writer.flush()

    def load_checkpoint(self, path: str | Path, map_location: Any = "cpu", strict: bool = False,
                        revise_keys: Sequence[tuple[str, str]] = (("^module\\.", ""),), *,
                        resume: bool = False, checkpoint: dict[str, Any] | None = None
                        ) -> dict[str, Any]:
        r"""Load the weights of ``path`` into the model (MMEngine's ``load_checkpoint(filename,
        map_location='cpu', strict=False, revise_keys=[(r'^module\.', '')])``); the run's
        position, optimizer and schedulers stay as they are. ``strict=False`` (the default)
        loads what fits and warns about missing, extra and reshaped weights (a new head);
        ``revise_keys`` rewrite the weights' keys. ``map_location`` is accepted: the weights
        go where the model is. ``resume=True`` is :meth:`resume`. Returns the checkpoint."""
        if isinstance(map_location, bool):  # load_checkpoint(path, True): resume, positionally
            raise ConfigError("load_checkpoint's second argument is MMEngine's map_location; to "
                              "restore the whole run use runner.resume(path) (or resume=True)")
        if not isinstance(strict, bool):
            raise ConfigError(f"load_checkpoint strict must be True or False, got {strict!r}")
        if isinstance(revise_keys, (str, bytes)) or not all(
                isinstance(pair, (tuple, list)) and len(pair) == 2
                and all(isinstance(p, str) for p in pair) for pair in revise_keys):
            raise ConfigError("load_checkpoint revise_keys must be a list of (pattern, "
                              f"replacement) string pairs, got {revise_keys!r}")
        if resume:
            return load(self, path, resume=True, checkpoint=checkpoint)  # type: ignore[arg-type]
        return load(self, path, resume=False, checkpoint=checkpoint,  # type: ignore[arg-type]
                    strict=strict, revise_keys=[(str(a), str(b)) for a, b in revise_keys])

    def resume(self, path: str | Path, resume_optimizer: bool = True,
               resume_param_scheduler: bool = True, map_location: Any = "default"
               ) -> dict[str, Any]:
        """Continue the run saved in ``path``: weights, position, optimizer, schedulers, hook
        state and RNG (MMEngine's ``resume``; all of it or nothing, so ``resume_optimizer``
        and ``resume_param_scheduler`` must stay True). Returns the checkpoint."""
        del map_location
        if not (resume_optimizer and resume_param_scheduler):
            raise ConfigError("resume restores the whole run (exact resume needs the optimizer "
                              "and schedulers); for the weights alone use "
                              "runner.load_checkpoint(path)")
        return load(self, path, resume=True)  # type: ignore[arg-type]

    def _load_or_resume(self, training: bool = False) -> None:
        if not self._loaded:
            self._loaded = True
            resume_or_load(self, self._resume, self._load_from,  # type: ignore[arg-type]
                           training=training)
