"""The ``hookline`` command: ``train``, ``test``, ``val``, ``hooks`` and ``inspect``.

::

    hookline train [CONFIG] [--work-dir D] [--resume auto|PATH] [--set KEY=VALUE ...] [--test] ...
    hookline test [CONFIG] [--checkpoint best|latest|PATH] [--work-dir D] [--set KEY=VALUE ...]
    hookline val [CONFIG] [--checkpoint best|latest|PATH] [--work-dir D] [--set KEY=VALUE ...]
    hookline hooks [CONFIG] [--set KEY=VALUE ...]
    hookline inspect [MODEL] ...
    hookline docs [TOPIC]

Each subcommand's module is imported only when that subcommand runs, so
``hookline --help`` does not import torch. A :class:`ConfigError` prints one
``error: ...`` line and exits 2; a training run stopped by SIGINT/SIGTERM
exits ``128 + signal`` after saving a checkpoint. Ctrl-C while the command's
modules import (torch's extension would otherwise drop it) stops the command
with exit code 130 once they are imported, before anything is run. Output cut
short by a closed pipe (``hookline train ... | head``) exits 1.

Example::

    >>> from hookline.cli import main
    >>> main(["hooks", "--help"])  # doctest: +ELLIPSIS
    usage: hookline hooks ...
    0
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType, ModuleType

import hookline
from hookline.core import ConfigError, HookError
from hookline.core.dependencies import missing_dependency

# name -> (module, function adding its arguments, function running it, one-line help)
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "train": ("hookline.app.commands", "add_train_arguments", "run_train",
              "train the run a YAML/JSON config describes (the demo without one)"),
    "test": ("hookline.app.eval_commands", "add_test_arguments", "run_test",
             "evaluate a run's best/latest checkpoint on the config's test_dataloader"),
    "val": ("hookline.app.eval_commands", "add_val_arguments", "run_val",
            "evaluate a run's best/latest checkpoint on the config's val_dataloader"),
    "hooks": ("hookline.app.commands", "add_hooks_arguments", "run_hooks",
              "print a config's hook table, or list every registered hook"),
    "inspect": ("hookline.app.inspect_command", "add_arguments", "run",
                "summarise a model; gradient/activation statistics and plots"),
    "docs": ("hookline.app.docs_command", "add_arguments", "run",
             "print the documentation: the topics, or one topic's Markdown"),
}

EPILOG = """examples:
  hookline train                                  train the demo into work_dirs/demo/<timestamp>/
  hookline train my.yaml --set optimizer.lr=0.05  train a config with one value changed
  hookline train my.yaml --resume auto            continue the last run from its newest checkpoint
  hookline test                                   test the demo's best checkpoint (of the last run)
  hookline test my.yaml --checkpoint latest       test a config's newest checkpoint (or a PATH)
  hookline val my.yaml                            the same on the config's val_dataloader
  hookline inspect my_project:Net --input-size 1,3,32,32   a model's summary (--grad: gradients)
  hookline hooks my.yaml                          which hook runs at which stage, in order
  hookline hooks                                  every registered hook
  hookline docs cli                               the config format and every command's options

Documentation: hookline docs (the topics), hookline docs TOPIC (one of them)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; only ``command``'s module is imported to add its arguments."""
    parser = argparse.ArgumentParser(
        prog="hookline", description="hookline: hooks for Python and PyTorch training.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hookline {hookline.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, add, _, help_text) in COMMANDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        if name == command:
            getattr(_import(module, name), add)(child)
    return parser


def _import(module: str, command: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise _Unavailable(f"'hookline {command}' is not available in this installation "
                               f"({module} is missing)") from None
        missing = missing_dependency(exc, f"'hookline {command}'")  # torch, PyYAML ...
        if missing is None:
            raise
        raise _Unavailable(str(missing)) from exc


class _Unavailable(Exception):
    pass


def _chosen(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hookline`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _chosen(argv)
    try:
        with _interrupts_recorded() as interrupted:  # the imports of torch & co.
            parser = build_parser(command)
        if interrupted:
            print("interrupted while starting: nothing was run", file=sys.stderr)
            return 130
        try:
            args = _parse(parser, argv)
        except SystemExit as exc:  # --help / --version / usage errors
            return int(exc.code or 0)
        module, _, run, _ = COMMANDS[args.command]
        cut_before = _output_cut()
        with _cwd_on_path():  # custom_imports may name modules in the current directory
            code = int(getattr(_import(module, args.command), run)(args) or 0)
        return 1 if code == 0 and _output_cut() and not cut_before else code
    except _Unavailable as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # hookline hooks | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        config_error = _config_error(exc)
        if config_error is None:
            raise
        return _error(config_error)


@contextlib.contextmanager
def _interrupts_recorded() -> Iterator[list[int]]:
    """Record SIGINT (Ctrl-C) instead of raising KeyboardInterrupt inside the block: torch's
    C extension imports numpy and drops an exception raised there, so the run went on.
    The caller checks the list after the block. Nothing changes where SIGINT is not
    Python's default (ignored in a background job, or a handler of the caller's)."""
    caught: list[int] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield caught
        return

    def record(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)

    previous = signal.signal(signal.SIGINT, record)
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; an unknown option after the subcommand is reported with that
    subcommand's usage (argparse's own error shows the top-level usage)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        child = _subcommand_parser(parser, args.command)
        after = argv.index(args.command) < argv.index(extra[0]) if extra[0] in argv else True
        (child if child is not None and after else parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    return args


def _subcommand_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    """The parser of subcommand ``name``."""
    for action in parser._actions:  # noqa: SLF001  (argparse keeps subparsers nowhere else)
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            found = action.choices.get(name)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def _output_cut() -> bool:
    """Whether a Runner's console lost its reader (``hookline train ... | head``)."""
    logs = sys.modules.get("hookline.engine.logs")
    return bool(logs is not None and logs.console_cut())


@contextlib.contextmanager
def _cwd_on_path() -> Iterator[None]:
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _config_error(exc: BaseException) -> str | None:
    """The message to show for a configuration mistake (also one raised inside a hook) or a
    file that is not a loadable checkpoint; None for anything else (a real bug: traceback)."""
    checkpoint = sys.modules.get("hookline.engine.checkpoint")
    user_errors = (ConfigError, checkpoint.CheckpointError) if checkpoint is not None else (ConfigError,)
    if isinstance(exc, user_errors):
        return str(exc)
    if isinstance(exc, HookError) and isinstance(exc.original, user_errors):
        return str(exc)
    return None


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
