"""A Runner's hook methods: register hooks or plain functions, call stages, show the table.

:class:`~hookline.engine.Runner` inherits them; the order and dispatch live in
:class:`~hookline.engine.hook_table.HookTable` (``runner.hooks``).

Example::

    >>> import tempfile, torch
    >>> from hookline.engine import Runner
    >>> runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 work_dir=tempfile.mkdtemp(), default_hooks={"logger": None})
    >>> handle = runner.on("after_train_epoch", lambda runner: None, every=2)
    >>> "ClosureHook" in runner.hook_table()
    True
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast, overload

from hookline.core import HookHandle

from .closure_hook import ClosureHook
from .default_hooks import default_hook_specs, duplicated_default
from .eval_loop import record_metrics
from .hook import Hook
from .hook_adapters import adapt_hook
from .hook_table import HookProfile, HookTable
from .registries import HOOKS

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["RunnerHooks"]

#: the stages whose ``metrics`` the message hub records first, and their mode
_METRIC_STAGES = {"after_val_epoch": "val", "after_test_epoch": "test"}


class RunnerHooks:
    """Hook registration and stage calls of a Runner (which sets :attr:`hooks` and
    :attr:`logger`)."""

    hooks: HookTable
    logger: logging.Logger

    def _register_default_hooks(self, overrides: Mapping[str, Any] | None) -> None:
        for key, spec in default_hook_specs(overrides).items():
            self.register_hook(spec, _default_key=key)

    def register_hook(self, hook: Hook | Mapping[str, Any], priority: Any = None, *,
                      _default_key: str | None = None) -> HookHandle:
        """Add a hook (an instance or a ``{"type": ...}`` config); returns its handle.

        A Keras or Lightning callback is wrapped in its adapter hook
        (:mod:`hookline.engine.hook_adapters`, docs/bridges.md).

        Priority comes from the argument, then the config's ``priority``, then
        the class; equal priorities keep registration order, defaults first. A priority
        given here is set on the hook too (``hook.priority``), as MMEngine does.
        """
        instance: Hook  # HookTable.add refuses what is not a Hook
        if isinstance(hook, Mapping):
            cfg = dict(hook)
            cfg_priority = cfg.pop("priority", None)
            priority = priority if priority is not None else cfg_priority
            instance = HOOKS.build(cfg)
        else:
            instance = hook
        # a Keras or Lightning callback (given or built from a config) runs through its adapter
        instance = adapt_hook(instance, cast("Runner", self))
        twin = None if _default_key is not None else duplicated_default(instance,
                                                                         self.hooks.by_key())
        if twin is not None:
            self.logger.warning(
                "%s is added next to the default %r hook, and both will run (e.g. two "
                "checkpoints or two log lines each time); pass default_hooks={%r: None} to "
                "keep only yours, or configure the default one with default_hooks={%r: {...}}",
                type(instance).__name__, twin, twin, twin)
        handle = self.hooks.add(instance, priority, is_default=_default_key is not None,
                                key=_default_key)
        if priority is not None:  # MMEngine's register_hook sets it on the hook too
            try:
                instance.priority = priority
            except AttributeError:  # a read-only priority (a property): ordered all the same
                pass
        return handle

    def hook_table(self) -> str:
        """The stage-by-hook call order, as text."""
        return self.hooks.table()

    def get_hooks_info(self) -> str:
        """The same in MMEngine's layout (its ``Runner.get_hooks_info()``): per stage, one
        ``(PRIORITY) HookName`` line per hook in call order."""
        return self.hooks.stage_info()

    def hook_profile(self) -> HookProfile:
        """Calls and seconds per hook and stage since ``runner.hooks.start_profiling()``
        (``print(runner.hook_profile())`` shows a table; see docs/logging.md)."""
        return self.hooks.profile_report()

    def call_hook(self, stage: str, **kwargs: Any) -> None:
        """Call ``stage`` on the hooks that override it (MMEngine's name). Metrics a loop of
        one's own passes to ``after_val_epoch`` / ``after_test_epoch`` reach the message hub
        first (:func:`~.eval_loop.record_metrics`), as MMEngine's RuntimeInfoHook puts them."""
        runner = cast("Runner", self)
        if stage in _METRIC_STAGES and isinstance(kwargs.get("metrics"), dict):
            record_metrics(runner, _METRIC_STAGES[stage], kwargs["metrics"])
        self.hooks.call(runner, stage, **kwargs)

    @overload
    def on(self, stage: str, fn: Callable[..., Any], *, priority: Any = None, every: int = 1,
           once: bool = False, when: Callable[..., bool] | None = None) -> HookHandle: ...

    @overload
    def on(self, stage: str, fn: None = None, *, priority: Any = None, every: int = 1,
           once: bool = False, when: Callable[..., bool] | None = None
           ) -> Callable[[Callable[..., Any]], HookHandle]: ...

    def on(self, stage: str, fn: Callable[..., Any] | None = None, *, priority: Any = None,
           every: int = 1, once: bool = False, when: Callable[..., bool] | None = None
           ) -> HookHandle | Callable[[Callable[..., Any]], HookHandle]:
        """Run a plain function at ``stage``; returns its :class:`HookHandle` (``.remove()``).

        ``fn(runner, **stage_kwargs)`` gets the stage's arguments (or those it names:
        ``fn(runner)``, ``fn()``, checked here); ``every``,
        ``once`` and ``when`` filter like everywhere in hookline (see
        :class:`~hookline.engine.closure_hook.ClosureHook`). Without ``fn`` it is a decorator::

            @runner.on("after_train_iter", every=100)
            def log(runner, batch_idx, data_batch=None, outputs=None): ...
        """
        if fn is None:
            return lambda f: self.on(stage, f, priority=priority, every=every, once=once,
                                     when=when)
        hook = ClosureHook(stage, fn, priority=priority, every=every, once=once, when=when)
        hook.handle = handle = self.register_hook(hook)
        return handle
