"""``Hook``: the base class of Runner hooks, with MMEngine's stages and signatures.

A hook overrides the stages it needs; the Runner calls each stage only on
the hooks that override it. Porting an MMEngine hook means changing its
import::

    >>> from hookline import Hook
    >>> class PrintLoss(Hook):
    ...     priority = "LOW"
    ...     def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
    ...         if self.every_n_train_iters(runner, 100):
    ...             runner.logger.info("loss %.4f", float(outputs["loss"]))
    >>> PrintLoss().triggered_stages()
    ['after_train_iter']

A stage method may also take only ``runner`` (mmcv's style): the Runner
then calls it with ``runner`` alone, as decided when the hook is registered::

    >>> class Seed(Hook):
    ...     def after_train_iter(self, runner):
    ...         pass
    >>> Seed().stage_callable("after_train_iter").passes
    ()
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from hookline.core import ConfigError

from .data import loader_length
from .data_pass import running_pass

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

DATA_BATCH = Any


class StageMethod(Protocol):
    """What the Runner calls for a stage: a hook's bound method or a :class:`StageCall`."""

    @property
    def __self__(self) -> Any: ...

    def __call__(self, runner: Runner, /, **kwargs: Any) -> None: ...

#: every stage, in the order a training run reaches them
STAGES: tuple[str, ...] = (
    "before_run",
    "after_load_checkpoint",
    "before_train",
    "before_train_epoch",
    "before_train_iter",
    "after_train_iter",
    "after_train_epoch",
    "before_val",
    "before_val_epoch",
    "before_val_iter",
    "after_val_iter",
    "after_val_epoch",
    "after_val",
    "before_save_checkpoint",
    "after_train",
    "before_test",
    "before_test_epoch",
    "before_test_iter",
    "after_test_iter",
    "after_test_epoch",
    "after_test",
    "after_run",
    "on_exception",
)

#: the keyword arguments each stage is called with (after ``runner``)
STAGE_KWARGS: dict[str, tuple[str, ...]] = {
    stage: ("batch_idx", "data_batch", "outputs") if stage.startswith("after_") and
    stage.endswith("_iter") else ("batch_idx", "data_batch") if stage.endswith("_iter")
    else ("metrics",) if stage in ("after_val_epoch", "after_test_epoch")
    else ("checkpoint",) if stage.endswith("_checkpoint")
    else ("exception",) if stage == "on_exception" else ()
    for stage in STAGES
}

#: a subclass overriding a mode-generic method (``_after_iter`` ...) triggers these stages
GENERIC_STAGES = {
    "_before_epoch": ("before_train_epoch", "before_val_epoch", "before_test_epoch"),
    "_after_epoch": ("after_train_epoch", "after_val_epoch", "after_test_epoch"),
    "_before_iter": ("before_train_iter", "before_val_iter", "before_test_iter"),
    "_after_iter": ("after_train_iter", "after_val_iter", "after_test_iter"),
}


class Hook:
    """Base class: every stage is a no-op. Set ``priority`` to order hooks
    (a :class:`hookline.core.Priority` name or an int 0..100; lower runs first).

    ``state_dict()`` / ``load_state_dict()`` carry a hook's own state through
    checkpoints, stored under ``state_key`` (the class name by default).
    """

    priority: Any = "NORMAL"
    #: every stage a Runner calls (MMEngine's ``Hook.stages``, plus ``on_exception``)
    stages: tuple[str, ...] = STAGES

    # -- run -----------------------------------------------------------------
    def before_run(self, runner: Runner) -> None:
        """Before ``train()``, or a standalone ``val()``/``test()``."""

    def after_run(self, runner: Runner) -> None:
        """After ``train()``, or a standalone ``val()``/``test()``."""

    def after_load_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        """A checkpoint was read; it is applied after this stage (hooks may edit it)."""

    def before_save_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        """A checkpoint is about to be written; hooks may add entries."""

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        """Training, validation or test stopped with ``exception`` (re-raised afterwards)."""

    # -- train / val / test ----------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        """Before the first training epoch."""

    def after_train(self, runner: Runner) -> None:
        """After the last training epoch."""

    def before_val(self, runner: Runner) -> None:
        """Before a validation run."""

    def after_val(self, runner: Runner) -> None:
        """After a validation run."""

    def before_test(self, runner: Runner) -> None:
        """Before a test run."""

    def after_test(self, runner: Runner) -> None:
        """After a test run."""

    # -- epochs ------------------------------------------------------------------
    def before_train_epoch(self, runner: Runner) -> None:
        self._before_epoch(runner, mode="train")

    def before_val_epoch(self, runner: Runner) -> None:
        self._before_epoch(runner, mode="val")

    def before_test_epoch(self, runner: Runner) -> None:
        self._before_epoch(runner, mode="test")

    def after_train_epoch(self, runner: Runner) -> None:
        self._after_epoch(runner, mode="train")

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._after_epoch(runner, mode="val")

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._after_epoch(runner, mode="test")

    # -- iterations ---------------------------------------------------------------
    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None) -> None:
        self._before_iter(runner, batch_idx=batch_idx, data_batch=data_batch, mode="train")

    def before_val_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None) -> None:
        self._before_iter(runner, batch_idx=batch_idx, data_batch=data_batch, mode="val")

    def before_test_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None) -> None:
        self._before_iter(runner, batch_idx=batch_idx, data_batch=data_batch, mode="test")

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None,
                         outputs: dict[str, Any] | None = None) -> None:
        self._after_iter(runner, batch_idx=batch_idx, data_batch=data_batch,
                         outputs=outputs, mode="train")

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None,
                       outputs: Sequence[Any] | dict[str, Any] | None = None) -> None:
        self._after_iter(runner, batch_idx=batch_idx, data_batch=data_batch,
                         outputs=outputs, mode="val")

    def after_test_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None,
                        outputs: Sequence[Any] | dict[str, Any] | None = None) -> None:
        self._after_iter(runner, batch_idx=batch_idx, data_batch=data_batch,
                         outputs=outputs, mode="test")

    # -- mode-generic (override one to act in train, val and test) ----------------
    def _before_epoch(self, runner: Runner, mode: str = "train") -> None:
        """Called by every ``before_*_epoch`` unless that stage is overridden."""

    def _after_epoch(self, runner: Runner, mode: str = "train") -> None:
        """Called by every ``after_*_epoch`` unless that stage is overridden."""

    def _before_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None,
                     mode: str = "train") -> None:
        """Called by every ``before_*_iter`` unless that stage is overridden."""

    def _after_iter(self, runner: Runner, batch_idx: int, data_batch: DATA_BATCH = None,
                    outputs: Any = None, mode: str = "train") -> None:
        """Called by every ``after_*_iter`` unless that stage is overridden."""

    # -- state ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The hook's own state to put in checkpoints (tensors and plain containers)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""

    @property
    def state_key(self) -> str:
        """Where this hook's state lives in a checkpoint's ``hooks`` dict."""
        return type(self).__name__

    # -- helpers (MMEngine's names and meanings) ---------------------------------------
    @staticmethod
    def every_n_epochs(runner: Runner, n: int, start: int = 0) -> bool:
        """True at the end of every ``n``-th epoch counted from ``start``."""
        done = runner.epoch + 1 - start
        return n > 0 and done >= 0 and done % n == 0

    @staticmethod
    def every_n_inner_iters(batch_idx: int, n: int) -> bool:
        """True after every ``n``-th batch of the current epoch."""
        return n > 0 and (batch_idx + 1) % n == 0

    @staticmethod
    def every_n_train_iters(runner: Runner, n: int, start: int = 0) -> bool:
        """True after every ``n``-th training iteration counted from ``start``."""
        done = runner.iter + 1 - start
        return n > 0 and done >= 0 and done % n == 0

    @staticmethod
    def end_of_epoch(dataloader: Any, batch_idx: int) -> bool:
        """True on the last batch of ``dataloader``.

        For a train loader without a length, the train loop reads one batch
        ahead, so this is exact for the batch being trained (in an epoch-based
        run); for another loader without a length it is False.
        """
        length = loader_length(dataloader)
        if length is not None:
            return batch_idx + 1 == length
        current = running_pass(dataloader)
        return current is not None and current.exhausted and batch_idx + 1 == current.fetched

    @staticmethod
    def is_last_train_epoch(runner: Runner) -> bool:
        """True during the last training epoch.

        In an iteration-based run (``max_iters``), whose epoch stages fire once, around the
        whole run, and whose ``runner.max_epochs`` counts passes over the training data:
        True during the last pass, from iteration ``(max_epochs - 1) x len(train_dataloader)``
        on, and in the ``after_train_epoch`` that ends the run. (MMEngine's iteration-based
        loop has ``max_epochs`` 1, so it says True throughout such a run: a ported hook
        that acts "in the last epoch" acts in the last pass here.)
        """
        if runner.by_epoch:
            return runner.epoch + 1 == runner.max_epochs
        loop = runner.train_loop
        passes = runner.max_epochs
        length = loop.epoch_length if loop is not None else None
        if not passes or not length:
            return False
        return runner.iter >= (passes - 1) * length

    @staticmethod
    def is_last_train_iter(runner: Runner) -> bool:
        """True during the last training iteration (of the run, in epoch-based runs too)."""
        return runner.iter + 1 == runner.max_iters

    # -- introspection ---------------------------------------------------------------------
    def triggered_stages(self) -> list[str]:
        """The stages this hook's class overrides (or this instance sets, as mmcv's
        ``ClosureHook`` does), in run order."""
        cls = type(self)
        stages = {s for s in STAGES if getattr(cls, s) is not getattr(Hook, s)}
        for generic, concrete in GENERIC_STAGES.items():
            if getattr(cls, generic) is not getattr(Hook, generic):
                stages.update(concrete)
        own = getattr(self, "__dict__", {})
        stages.update(s for s in STAGES if s in own)
        return [s for s in STAGES if s in stages]

    def get_triggered_stages(self) -> list[str]:
        """MMEngine's and mmcv's name for :meth:`triggered_stages`."""
        return self.triggered_stages()

    def stage_callable(self, stage: str) -> StageMethod:
        """What the Runner calls for ``stage``, decided once when the hook is registered.

        The bound method, adapted when its signature takes fewer of the stage's
        keyword arguments (mmcv's ``after_train_iter(self, runner)``): those it
        does not name are not passed. Subclasses may wrap it further.
        """
        return adapt_signature(getattr(self, stage), stage, self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class StageCall:
    """A stage method called with only the keyword arguments its signature names.

    ``passes`` lists them (``()``: ``runner`` alone). ``__self__`` is the hook,
    so errors and reports name it like a bound method.
    """

    __slots__ = ("__self__", "method", "passes")

    def __init__(self, method: Callable[..., Any], hook: Any, passes: tuple[str, ...]) -> None:
        self.method = method
        self.__self__ = hook
        self.passes = passes

    def __call__(self, runner: Any, /, **kwargs: Any) -> None:
        passes = self.passes
        if not passes:
            self.method(runner)
        else:
            self.method(runner, **{k: kwargs[k] for k in passes if k in kwargs})

    def __repr__(self) -> str:
        return f"<StageCall {getattr(self.method, '__qualname__', self.method)} passes={self.passes}>"


#: how MMEngine's signatures write the stage arguments (messages)
_FULL_PARAMS = {"data_batch": "data_batch=None", "outputs": "outputs=None",
                "metrics": "metrics=None"}


def adapt_signature(method: Any, stage: str, hook: Any) -> StageMethod:
    """``method`` itself when it takes every keyword argument of ``stage`` (or ``**kwargs``),
    else a :class:`StageCall` passing only those it names. Inspected once, here."""
    unchanged: StageMethod = method
    bound = getattr(method, "__self__", None) is hook  # not so for a static- or classmethod
    expected = STAGE_KWARGS.get(stage, ())
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return unchanged if bound else StageCall(method, hook, expected)
    if not params or params[0].kind in (inspect.Parameter.KEYWORD_ONLY,
                                        inspect.Parameter.VAR_KEYWORD):
        kwargs = f", {', '.join(f'{k}=...' for k in expected)}" if expected else ""
        full = (f" or MMEngine's full def {stage}(self, runner, "
                f"{', '.join(_FULL_PARAMS.get(k, k) for k in expected)})" if expected else "")
        raise ConfigError(
            f"{type(hook).__name__}.{stage}{inspect.signature(method)} takes no runner: the "
            f"Runner calls it as {stage}(runner{kwargs}). Write def {stage}(self, runner) "
            f"(runner alone){full}")
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return unchanged if bound else StageCall(method, hook, expected)
    named = {p.name for p in params[1:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [p.name for p in params[1:] if p.name not in expected and p.default is p.empty
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if unknown:
        passes = (f"runner, then {', '.join(expected)} by keyword" if expected
                  else "runner only")
        raise ConfigError(
            f"{type(hook).__name__}.{stage} requires {', '.join(map(repr, unknown))}, which "
            f"the Runner does not pass: {stage} gets {passes} (rename the parameters so, or "
            "give them defaults)")
    if bound and set(expected) <= named:
        return unchanged
    return StageCall(method, hook, tuple(k for k in expected if k in named))
