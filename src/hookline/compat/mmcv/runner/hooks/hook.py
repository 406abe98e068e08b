"""``mmcv.runner.hooks.hook``: mmcv 1.x's ``Hook`` and ``HOOKS``, run by a hookline Runner.

mmcv's semantics, decided when the hook is registered:

* every stage method takes only ``runner`` (``def after_train_iter(self, runner)``)
  and receives an mmcv view of the Runner (``runner.inner_iter``,
  ``runner.data_batch``, ``runner.outputs``, ``runner.mode``,
  ``runner.data_loader``, ``runner.log_buffer``, ``runner.meta``; see
  :mod:`hookline.compat.mmcv.runner.runner_view`);
* the generic ``before_epoch`` / ``after_epoch`` / ``before_iter`` /
  ``after_iter`` run at the train and val stages;
* a stage method set on an instance (``ClosureHook``) is called;
* helpers take ``runner``: ``every_n_epochs``, ``every_n_inner_iters``,
  ``every_n_iters``, ``end_of_epoch``, ``is_last_epoch``, ``is_last_iter``.

Only the stages a hook overrides are called, as for every hookline hook, plus
``before_save_checkpoint``, ``after_load_checkpoint`` and ``before_train``,
where the view puts ``runner.meta`` into checkpoints and takes it back after a
resume, as mmcv's runner did (``get_triggered_stages()`` lists mmcv's stages,
as in mmcv).

Example::

    >>> from hookline.compat.mmcv.runner import HOOKS, Hook
    >>> @HOOKS.register_module()
    ... class EveryTen(Hook):
    ...     def after_iter(self, runner):
    ...         if self.every_n_iters(runner, 10):
    ...             runner.logger.info("iteration %d", runner.iter + 1)
    >>> EveryTen().get_triggered_stages()
    ['after_train_iter', 'after_val_iter']
"""

from __future__ import annotations

from typing import Any

from hookline.engine import registries as _native
from hookline.engine.hook import GENERIC_STAGES, STAGES, StageMethod
from hookline.engine.hook import Hook as _NativeHook

from ...utils import Registry
from ..runner_view import VIEW_STAGES, MmcvRunner, runner_view

HOOKS = Registry("hook", parent=_native.HOOKS, scope="mmcv")

#: mmcv's stages (``Hook.stages``)
MMCV_STAGES = ("before_run", "before_train_epoch", "before_train_iter", "after_train_iter",
               "after_train_epoch", "before_val_epoch", "before_val_iter", "after_val_iter",
               "after_val_epoch", "after_run")
#: mmcv's generic methods and the stages that call them
MMCV_GENERIC = {
    "before_epoch": ("before_train_epoch", "before_val_epoch"),
    "after_epoch": ("after_train_epoch", "after_val_epoch"),
    "before_iter": ("before_train_iter", "before_val_iter"),
    "after_iter": ("after_train_iter", "after_val_iter"),
}


class MmcvCall:
    """Calls an mmcv hook's stage with the Runner's mmcv view, set up for that stage."""

    __slots__ = ("__self__", "_view", "call", "stage")

    def __init__(self, call: StageMethod, hook: Any, stage: str) -> None:
        self.call = call
        self.__self__ = hook
        self.stage = stage
        self._view: MmcvRunner | None = None

    def __call__(self, runner: Any, /, **kwargs: Any) -> None:
        view = self._view
        if view is None or view.hookline_runner is not runner:
            view = self._view = runner_view(runner)
        view.enter_stage(self.stage, kwargs)
        self.call(view, **kwargs)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<mmcv {type(self.__self__).__name__}.{self.stage}>"


class Hook(_NativeHook):
    """mmcv 1.x's hook base class (see the module docstring)."""

    stages = MMCV_STAGES
    priority: Any = "NORMAL"

    def before_run(self, runner: Any) -> None:
        pass

    def after_run(self, runner: Any) -> None:
        pass

    def before_epoch(self, runner: Any) -> None:
        pass

    def after_epoch(self, runner: Any) -> None:
        pass

    def before_iter(self, runner: Any) -> None:
        pass

    def after_iter(self, runner: Any) -> None:
        pass

    def before_train_epoch(self, runner: Any) -> None:
        self.before_epoch(runner)

    def before_val_epoch(self, runner: Any) -> None:
        self.before_epoch(runner)

    def after_train_epoch(self, runner: Any) -> None:
        self.after_epoch(runner)

    def after_val_epoch(self, runner: Any, metrics: Any = None) -> None:
        self.after_epoch(runner)

    def before_train_iter(self, runner: Any, batch_idx: int = 0,
                          data_batch: Any = None) -> None:
        self.before_iter(runner)

    def before_val_iter(self, runner: Any, batch_idx: int = 0,
                        data_batch: Any = None) -> None:
        self.before_iter(runner)

    def after_train_iter(self, runner: Any, batch_idx: int = 0,
                         data_batch: Any = None, outputs: Any = None) -> None:
        self.after_iter(runner)

    def after_val_iter(self, runner: Any, batch_idx: int = 0,
                       data_batch: Any = None, outputs: Any = None) -> None:
        self.after_iter(runner)

    # -- mmcv's helpers (they take the runner) -----------------------------------------------
    def every_n_epochs(self, runner: Any, n: int) -> bool:
        return (runner.epoch + 1) % n == 0 if n > 0 else False

    def every_n_inner_iters(self, runner: Any, n: int) -> bool:
        return (runner_view(runner).inner_iter + 1) % n == 0 if n > 0 else False

    def every_n_iters(self, runner: Any, n: int) -> bool:
        return (runner.iter + 1) % n == 0 if n > 0 else False

    def end_of_epoch(self, runner: Any) -> bool:
        view = runner_view(runner)  # a loader without a length: see the engine's end_of_epoch
        return _NativeHook.end_of_epoch(view.data_loader, view.inner_iter)

    def is_last_epoch(self, runner: Any) -> bool:
        return bool(runner.epoch + 1 == runner.max_epochs)

    def is_last_iter(self, runner: Any) -> bool:
        return bool(runner.iter + 1 == runner.max_iters)

    # -- dispatch ---------------------------------------------------------------------------
    def triggered_stages(self) -> list[str]:
        """The stages the Runner calls: :meth:`get_triggered_stages`, and the view's
        (``runner.meta`` into checkpoints, back after a resume: once per save, load, run)."""
        stages = set(self.get_triggered_stages()).union(VIEW_STAGES)
        return [s for s in STAGES if s in stages]

    def get_triggered_stages(self) -> list[str]:
        """The stages this hook's class (or instance) overrides, generic methods included."""
        cls, own = type(self), vars(self)
        stages = {s for s in STAGES if s in own or getattr(cls, s) is not getattr(Hook, s)}
        for generic, concrete in MMCV_GENERIC.items():
            if generic in own or getattr(cls, generic) is not getattr(Hook, generic):
                stages.update(concrete)
        for engine_generic, engine_stages in GENERIC_STAGES.items():  # MMEngine's, when mixed in
            if getattr(cls, engine_generic) is not getattr(_NativeHook, engine_generic):
                stages.update(engine_stages)
        return [s for s in STAGES if s in stages]

    def stage_callable(self, stage: str) -> StageMethod:
        """The stage called with the mmcv view (and only the arguments its signature names)."""
        return MmcvCall(super().stage_callable(stage), self, stage)


__all__ = ["HOOKS", "MMCV_GENERIC", "MMCV_STAGES", "Hook", "MmcvCall"]
