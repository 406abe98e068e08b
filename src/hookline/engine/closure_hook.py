"""ClosureHook: any plain function as a Runner hook on one stage (``runner.on`` builds one).

Example::

    >>> from hookline.engine.closure_hook import ClosureHook
    >>> seen = []
    >>> hook = ClosureHook("after_train_epoch", lambda runner: seen.append(runner.epoch), every=2)
    >>> hook.triggered_stages()
    ['after_train_epoch']
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError, HookError, HookHandle, Priority
from hookline.core.event import check_options, filtered
from hookline.core.priority import PriorityLike

from .hook import STAGE_KWARGS, STAGES, Hook
from .hook_table import HookTable
from .registries import HOOKS

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def _fn_name(fn: Callable[..., Any]) -> str:
    target = getattr(fn, "__func__", fn)
    return getattr(target, "__qualname__", None) or type(target).__qualname__


#: Ignite's event names, for the error a ported ``runner.on(Events.X, ...)`` gets
IGNITE_EVENTS = {"STARTED": "before_train", "EPOCH_STARTED": "before_train_epoch",
                 "ITERATION_STARTED": "before_train_iter",
                 "ITERATION_COMPLETED": "after_train_iter",
                 "EPOCH_COMPLETED": "after_train_epoch", "COMPLETED": "after_train",
                 "EXCEPTION_RAISED": "on_exception"}


def _ignite_name(stage: Any) -> str:
    """``Events.ITERATION_COMPLETED`` (filtered or not), or its name as a string: the name."""
    return str(getattr(stage, "name", stage)).rsplit(".", 1)[-1].upper()


def _stage_name(stage: Any) -> str:
    """``stage`` checked: one Runner stage name, or one :class:`ConfigError` saying what to pass.

        >>> try:
        ...     _stage_name(("after_train_epoch", "after_train"))
        ... except ConfigError as exc:
        ...     print(str(exc).split(": ", 1)[1])
        register it once per stage: runner.on('after_train_epoch', fn) and runner.on('after_train', fn)
    """
    if isinstance(stage, str) and stage in STAGES:
        return stage
    # several stages: a list, a set, Ignite's ``Events.A | Events.B`` (an EventsList, iterable)
    if not isinstance(stage, (str, bytes)) and isinstance(stage, Iterable):
        try:
            items = list(stage)
        except Exception:  # an iterable that fails: the generic advice below
            items = []
        shown = repr(stage) if isinstance(stage, (list, tuple, set, frozenset)) or not items \
            else " | ".join(map(str, items))
        stages = [item if isinstance(item, str) and item in STAGES
                  else IGNITE_EVENTS.get(_ignite_name(item)) for item in items]
        advice = ("runner.on(stage, fn) for each" if not stages or None in stages
                  else " and ".join(f"runner.on({name!r}, fn)" for name in stages))
        raise ConfigError(f"a function runs at one Runner stage, got {shown}: register it once "
                          f"per stage: {advice}")
    ignite = _ignite_name(stage)
    if ignite in IGNITE_EVENTS:
        raise ConfigError(f"unknown Runner stage {stage!r}: Ignite's {ignite} is the stage "
                          f"{IGNITE_EVENTS[ignite]!r}")
    raise ConfigError.unknown("Runner stage", stage, STAGES)


def _once_error(once: Any, stage: str) -> ConfigError | None:
    """The error for Ignite's ``once=N`` / ``once=[N, M]`` (an event filter there), with the
    hookline spelling; None for other values (:func:`check_options` words those)."""
    if isinstance(once, int) and not isinstance(once, bool):
        return ConfigError(f"once must be True or False, got {once!r} (to run once, at call "
                           f"number {once}, pass every={once}, once=True)")
    if isinstance(once, (list, tuple, set, frozenset)) and once and all(
            isinstance(n, int) and not isinstance(n, bool) for n in once):
        numbers = tuple(sorted(once))
        plural = "s" if len(numbers) > 1 else ""
        listed = ", ".join(map(str, numbers[:-1])) + (" and " if plural else "") \
            + str(numbers[-1])
        if stage in ("before_train_iter", "after_train_iter"):
            where, hint = f"iteration{plural} {listed}", f"when=lambda runner: runner.iter + 1 in {numbers}"
        elif stage in ("before_train_epoch", "after_train_epoch"):
            where, hint = f"epoch{plural} {listed}", f"when=lambda runner: runner.epoch + 1 in {numbers}"
        else:
            where, hint = f"call{plural} {listed} of {stage}", "a when= predicate true at those calls"
        return ConfigError(f"once must be True or False, got {once!r} (to run at {where}, as "
                           f"Ignite's once={list(numbers)} does, pass {hint})")
    return None


def fit_to_stage(fn: Callable[..., Any], stage: str, role: str) -> Callable[..., Any]:
    """``fn`` as ``call(runner, **stage_kwargs)``: ``fn`` itself when it takes them all, else
    a wrapper passing what its signature names, checked once, here (Ignite's handlers take
    ``engine`` alone or nothing; a Runner stage passes ``runner`` and keywords).

        >>> call = fit_to_stage(lambda runner: runner, "after_train_iter", "fn")
        >>> call("the runner", batch_idx=0, data_batch=None, outputs={})
        'the runner'
        >>> fit_to_stage(lambda runner, step: 0, "after_train_iter", "fn")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: fn <lambda> requires 'step', which after_train_iter ...
    """
    expected = STAGE_KWARGS.get(stage, ())
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins): call it as given
        return fn
    # the first positional parameter gets the runner, unless it is named for a stage argument
    takes_runner = bool(params) and params[0].kind in (
        params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD, params[0].VAR_POSITIONAL
    ) and not (params[0].kind is params[0].POSITIONAL_OR_KEYWORD and params[0].name in expected)
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return fn if takes_runner else lambda _runner, **kwargs: fn(**kwargs)
    rest = params[1:] if takes_runner else params
    required = [p.name for p in rest if p.default is p.empty and p.name not in expected
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        passes = f"runner, then {', '.join(expected)} by keyword" if expected else "runner only"
        raise ConfigError(f"{role} {_fn_name(fn)} requires {', '.join(map(repr, required))}, "
                          f"which {stage} does not pass: it passes {passes} (rename the "
                          "parameters so, or give them defaults)")
    named = tuple(k for k in expected
                  if any(p.name == k and p.kind is not p.POSITIONAL_ONLY for p in rest))
    if takes_runner and named == expected:
        return fn
    if not takes_runner:
        return lambda _runner, **kwargs: fn(**{k: kwargs[k] for k in named if k in kwargs})
    return lambda runner, **kwargs: fn(runner, **{k: kwargs[k] for k in named if k in kwargs})


def _blaming(call: Callable[..., bool], when: Callable[..., bool], stage: str
             ) -> Callable[..., bool]:
    """``call`` (``when`` fitted to the stage), its failures reported as ``when``'s own
    (not as the hook function's)."""
    def checked(runner: Any, **kwargs: Any) -> bool:
        try:
            return call(runner, **kwargs)
        except Exception as exc:
            raise HookError(when, stage, exc) from exc
    return checked


_SERIALS = itertools.count()

def _nothing() -> None:
    """What ``filtered`` calls to remove a once-hook: ClosureHook removes its own."""


def finished_hooks(runner: Any) -> list[ClosureHook]:
    """The ``once=True`` ClosureHooks that ran on ``runner`` and took themselves off its hook
    table, in the order they finished. Their state (``done``) still goes into checkpoints, under
    the keys they had (:func:`closure_rank`), so that the keys of the others do not move."""
    table = getattr(runner, "hooks", None)
    if not isinstance(table, HookTable):
        return []
    return [hook for hook in table.retired if isinstance(hook, ClosureHook)]


def closure_rank(runner: Any, hook: ClosureHook) -> tuple[int, int]:
    """``hook``'s place among the ClosureHooks of its stage and function, finished ones
    included: (priority, order of construction), the hook table's order for the hooks
    ``runner.on`` registers."""
    if hook.retired_rank is not None:
        return hook.retired_rank
    return runner.hooks.priority_of(hook), hook.serial


@HOOKS.register()
class ClosureHook(Hook):
    """Calls ``fn`` at one ``stage`` with the stage's arguments: ``runner`` first,
    then the stage's keyword arguments (e.g. ``batch_idx``, ``data_batch``,
    ``outputs`` for ``after_train_iter``; ``metrics`` for ``after_val_epoch``).

    Args:
        stage: one of the Runner's stages (:data:`hookline.engine.hook.STAGES`).
        fn: the function; its return value is ignored. It may name only some of
            the stage's keyword arguments (``fn(runner)``), or take none at all
            (``fn()``, as an Ignite handler may): it gets what it names, checked
            here; a parameter the stage does not pass is a :class:`ConfigError`.
        priority: a :class:`hookline.core.Priority` name or an int 0..100
            (default NORMAL).
        every: call ``fn`` on every ``every``-th call of the stage, counted by
            this hook from its registration on, over the whole run (val passes
            included), and kept across resume. This is not Ignite's ``every``,
            which tests the engine's iteration number: for that, pass
            ``when=lambda runner: (runner.iter + 1) % n == 0``.
        once: call ``fn`` once, then stop (kept across resume).
        when: ``when(runner, **stage_kwargs) -> bool`` (fitted like ``fn``);
            ``fn`` runs only when true (checked on the calls ``every`` lets through).

    An exception in ``fn`` (or ``when``) becomes a :class:`hookline.core.HookError`
    naming that function and the stage. :meth:`hookline.Runner.on` is the shortcut.

    Example::

        def log_lr(runner, batch_idx, data_batch=None, outputs=None):
            runner.logger.info("lr %.4g", runner.optimizer.param_groups[0]["lr"])
        runner.register_hook(ClosureHook("after_train_iter", log_lr, every=100))
    """

    priority: PriorityLike = "NORMAL"

    def __init__(self, stage: str, fn: Callable[..., Any], *, priority: Any = None,
                 every: int = 1, once: bool = False,
                 when: Callable[..., bool] | None = None) -> None:
        stage = _stage_name(stage)
        if not callable(fn):
            raise ConfigError(f"ClosureHook fn must be callable, got {fn!r} for stage {stage!r}")
        error = _once_error(once, stage)
        if error is not None:
            raise error
        check_options(once, every, when)
        call = fit_to_stage(fn, stage, "fn")
        checked_when = None if when is None else _blaming(fit_to_stage(when, stage, "when"),
                                                           when, stage)
        if priority is not None:
            self.priority = Priority.get(priority)
        self.stage = stage
        self.fn = fn
        self.every = every
        self.once = once
        self.when = when
        #: calls of the stage so far (what ``every`` counts)
        self.calls = 0
        #: True once a ``once=True`` hook has run
        self.done = False
        self.handle: HookHandle | None = None
        #: order of construction: ranks ClosureHooks of one stage and function for their
        #: checkpoint keys (with the priority), finished ones included
        self.serial = next(_SERIALS)
        #: (priority, serial) of a finished once-hook taken off its Runner's hook table
        self.retired_rank: tuple[int, int] | None = None
        gate = (lambda *args, **kwargs: self.calls % every == 0) if every > 1 else None
        if once:  # `once` here rather than by filtered(): finishing needs the runner
            run_fn = call

            def call(runner: Any, **kwargs: Any) -> Any:
                self._finish(runner)
                return run_fn(runner, **kwargs)
        self._call = filtered(call, False, 1, checked_when, _nothing, gate)
        # The hook table reads the stage's method by name: this instance's attribute
        # shadows the base class's no-op for the one stage, and only for this hook.
        setattr(self, stage, self._dispatch)

    def triggered_stages(self) -> list[str]:
        """Just :attr:`stage`."""
        return [self.stage]

    def _dispatch(self, runner: Runner, **kwargs: Any) -> None:
        if self.done:  # finished in the run a checkpoint was saved from: off the table now
            self._finish(runner)
            return
        self.calls += 1
        try:
            self._call(runner, **kwargs)
        except HookError:
            raise
        except Exception as exc:
            raise HookError(self.fn, self.stage, exc) from exc

    def _finish(self, runner: Any) -> None:
        """Done: off the hook table (so it costs nothing from now on), kept in the runner's
        :func:`finished_hooks`, whose states checkpoints keep too."""
        self.done = True
        handle = self.handle
        if handle is None or handle.removed:
            return
        table = getattr(runner, "hooks", None)
        if isinstance(table, HookTable):
            try:
                self.retired_rank = (table.priority_of(self), self.serial)
            except KeyError:  # on another table (or none): nothing to keep
                pass
            else:
                table.retired.append(self)
        handle.remove()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` directly (so a function decorated with ``runner.on`` stays callable)."""
        return self.fn(*args, **kwargs)

    # -- state --------------------------------------------------------------------------
    @property
    def state_key(self) -> str:
        return f"ClosureHook[{self.stage}:{_fn_name(self.fn)}]"

    def state_dict(self) -> dict[str, Any]:
        if self.every == 1 and not self.once:
            return {}
        return {"calls": self.calls, "done": self.done}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = int(state.get("calls", 0))
        self.done = bool(state.get("done", False))

    def __repr__(self) -> str:
        return f"ClosureHook({self.stage!r}, {_fn_name(self.fn)})"
