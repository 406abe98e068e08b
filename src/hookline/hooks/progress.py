"""ProgressBarHook: tqdm bars over training (and evaluation) iterations, on a terminal.

Bars are drawn on the stream the Runner's console log lines go to (stdout),
and while a bar is open the Runner's console handler writes its lines
through ``tqdm.write`` (see :class:`hookline.engine.logs.ConsoleHandler`),
so a log line never lands inside a bar, at any terminal width.

Example::

    >>> import io
    >>> from hookline.hooks import ProgressBarHook
    >>> ProgressBarHook(enabled=False).enabled
    False
    >>> ProgressBarHook(file=io.StringIO()).shows()  # not a terminal: silent by default
    False
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.engine.checks import boolean
from hookline.engine.data import loader_length
from hookline.engine.hook import Hook
from hookline.engine.logs import ConsoleHandler, ConsoleWriter, console_of
from hookline.engine.registries import HOOKS

from .log_steps import total_train_iters
from .logger import LAST_RECORD_KEY

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class ProgressBarHook(Hook):
    """Shows a tqdm bar over the training iterations (and one per validation or
    test run) on the main process.

    The bar shows the loss of :class:`~hookline.hooks.LoggerHook`'s latest log
    line, so it never reads a device value itself (no extra host sync). Over
    a loader without a length a bar has no total, until the run's length is
    known (a training run of ``max_epochs``: at the first epoch's last batch).

    Args:
        enabled: None (default) shows bars only when ``file`` is an interactive
            terminal (not one with ``TERM=dumb``); True always; False never.
        file: where bars are drawn (default: the stream of the Runner's console
            log lines, stdout, looked up when a bar starts; ``sys.stderr``
            when the Runner logs to no console).
        eval_bars: also show bars for validation and test runs.
        leave: keep finished bars on screen.

    Example::

        >>> import io
        >>> stream = io.StringIO()
        >>> hook = ProgressBarHook(enabled=True, file=stream)  # draw even if not a terminal
        >>> hook.shows()
        True
    """

    priority = "LOW"

    def __init__(self, enabled: bool | None = None, file: IO[str] | None = None,
                 eval_bars: bool = True, leave: bool = False) -> None:
        if enabled is not None and not isinstance(enabled, bool):
            raise ConfigError(f"ProgressBarHook enabled must be None (only on a terminal), True "
                              f"or False, got {enabled!r}")
        if file is not None and not callable(getattr(file, "write", None)):
            raise ConfigError(f"ProgressBarHook file must be a text stream with write(), "
                              f"got {file!r}")
        self.enabled = enabled
        self.file = file
        self.eval_bars = boolean(eval_bars, "eval_bars", owner="ProgressBarHook")
        self.leave = boolean(leave, "leave", owner="ProgressBarHook")
        self._bar: Any = None
        self._eval_bar: Any = None
        self._shown: Any = None
        self._sized = True
        # while a bar is open: (the runner's console handler, its previous writer, ours)
        self._console: tuple[ConsoleHandler, ConsoleWriter | None, ConsoleWriter] | None = None

    def __repr__(self) -> str:
        return f"ProgressBarHook(enabled={self.enabled})"

    def stream(self, runner: Runner | None = None) -> IO[str]:
        """Where bars go: ``file``, else ``runner``'s console stream, else stdout
        (stderr for a runner without a console)."""
        if self.file is not None:
            return self.file
        if runner is None:
            return sys.stdout
        console = console_of(runner.logger)
        return console.stream if console is not None else sys.stderr

    def shows(self, runner: Runner | None = None) -> bool:
        """Whether bars would be drawn now (``enabled``, or :meth:`stream` is a terminal that
        can redraw a line: not ``TERM=dumb``, which has no carriage return or cursor moves)."""
        if self.enabled is not None:
            return self.enabled
        if os.environ.get("TERM") == "dumb":
            return False
        isatty = getattr(self.stream(runner), "isatty", None)
        try:
            return bool(isatty()) if isatty is not None else False
        except (ValueError, OSError):  # closed stream
            return False

    def _new_bar(self, runner: Runner, total: int | None, initial: int, desc: str, leave: bool) -> Any:
        if not runner.is_main_process or not self.shows(runner):
            return None
        if self.file is None:
            from tqdm.auto import tqdm  # noqa: PLC0415  (lazy: tqdm only when a bar is drawn)
        else:
            from tqdm import tqdm  # noqa: PLC0415  (lazy: tqdm only when a bar is drawn)
        bar = tqdm(total=total, initial=initial, desc=desc, unit="it", dynamic_ncols=True,
                   leave=leave, file=self.stream(runner))
        self._route_console(runner, type(bar))
        return bar

    def _route_console(self, runner: Runner, bar_class: Any) -> None:
        """Send the runner's console lines through ``tqdm.write`` (which clears the bars,
        writes the line and redraws them) until the last bar closes."""
        console = console_of(runner.logger)
        if self._console is not None or console is None:
            return

        def write(line: str, stream: IO[str]) -> None:
            bar_class.write(line, file=stream)

        self._console = (console, console.writer, write)
        console.writer = write

    def _release_console(self) -> None:
        if self._console is None or self._bar is not None or self._eval_bar is not None:
            return
        console, previous, ours = self._console
        if console.writer is ours:
            console.writer = previous
        self._console = None

    # -- training ---------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        self._close()
        total = total_train_iters(runner)
        self._bar = self._new_bar(runner, total, runner.iter, "train", self.leave)
        self._shown = None
        self._sized = total is not None  # else the total is set once known (a pass has ended)

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        bar = self._bar
        if bar is None:
            return
        if not self._sized and runner.max_iters != bar.total:
            bar.total = runner.max_iters
        bar.update(1)
        record = runner.message_hub.info.get(LAST_RECORD_KEY)
        if record is not None and record is not self._shown:
            self._shown = record
            if isinstance(record.get("loss"), float):
                bar.set_postfix(loss=f"{record['loss']:.4f}", refresh=False)

    def after_train(self, runner: Runner) -> None:
        self._close()

    # -- evaluation ----------------------------------------------------------------------
    def _start_eval(self, runner: Runner, mode: str) -> None:
        if not self.eval_bars:
            return
        total = loader_length(getattr(runner, f"{mode}_dataloader"))  # None: a bar without one
        self._eval_bar = self._new_bar(runner, total, 0, mode, False)

    def before_val_epoch(self, runner: Runner) -> None:
        self._start_eval(runner, "val")

    def before_test_epoch(self, runner: Runner) -> None:
        self._start_eval(runner, "test")

    def _eval_step(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                   outputs: Any = None) -> None:
        if self._eval_bar is not None:
            self._eval_bar.update(1)

    after_val_iter = after_test_iter = _eval_step

    def _end_eval(self, runner: Runner, metrics: dict | None = None) -> None:
        if self._eval_bar is not None:
            self._eval_bar.close()
            self._eval_bar = None
            self._release_console()

    after_val_epoch = after_test_epoch = _end_eval

    # -- end ------------------------------------------------------------------------------
    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._close()

    def after_run(self, runner: Runner) -> None:
        self._close()

    def _close(self) -> None:
        try:
            for name in ("_eval_bar", "_bar"):
                bar = getattr(self, name)
                if bar is not None:
                    setattr(self, name, None)
                    bar.close()
        finally:
            self._release_console()
