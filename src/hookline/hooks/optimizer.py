"""mmcv's optimizer hooks, kept for configs: they configure ``runner.optim_wrapper``.

Optimization is not a hook in hookline (nor in MMEngine): the train loop runs
``runner.optim_wrapper`` before the ``after_train_iter`` hooks. mmcv configs
still name ``OptimizerHook``, ``Fp16OptimizerHook`` and
``GradientCumulativeOptimizerHook``; each one, registered with a Runner,
replaces the run's wrapper in ``before_run`` (before a checkpoint is
resumed, so AMP scaler state comes back) with the equivalent
:class:`~hookline.engine.OptimWrapper` / :class:`~hookline.engine.AmpOptimWrapper`:

=====================================  =============================================
hook argument                          wrapper argument
=====================================  =============================================
``grad_clip={"max_norm": x}``          ``clip_grad={"max_norm": x}``
``accumulate=n`` / ``cumulative_iters``  ``accumulative_counts=n``
``amp=True`` / ``Fp16OptimizerHook``   ``AmpOptimWrapper`` (``loss_scale`` as given)
=====================================  =============================================

Example::

    >>> from hookline.hooks import OptimizerHook
    >>> hook = OptimizerHook(grad_clip={"max_norm": 1.0}, accumulate=4, amp=False)
    >>> hook.wrapper_config()
    {'type': 'OptimWrapper', 'clip_grad': {'max_norm': 1.0}, 'accumulative_counts': 4}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.engine.amp_optim_wrapper import check_loss_scale
from hookline.engine.checks import positive_int
from hookline.engine.hook import Hook
from hookline.engine.optim_wrapper import OptimWrapper, check_clip_grad
from hookline.engine.registries import HOOKS, OPTIM_WRAPPERS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class OptimizerHook(Hook):
    """mmcv's optimizer hook: sets up ``runner.optim_wrapper`` with clipping, accumulation, AMP.

    Args:
        grad_clip: ``{"max_norm": x}`` (optionally ``"norm_type"``) or
            ``{"max_value": x}``; the total gradient norm (before clipping) is
            recorded as ``train/grad_norm``.
        accumulate: step every ``accumulate`` iterations, averaging the loss
            over the group (see :class:`~hookline.engine.OptimWrapper`).
        amp: mixed precision (:class:`~hookline.engine.AmpOptimWrapper`):
            float16 + GradScaler on CUDA, bfloat16 without a scaler on CPU.
        loss_scale: ``"dynamic"``, a number (static scale) or a dict of
            GradScaler arguments.

    Example::

        >>> hook = OptimizerHook(grad_clip={"max_norm": 35, "norm_type": 2})
        >>> hook.grad_clip
        {'max_norm': 35, 'norm_type': 2}
    """

    priority = "ABOVE_NORMAL"

    def __init__(self, grad_clip: Mapping[str, Any] | None = None, accumulate: int = 1,
                 amp: bool = False, loss_scale: str | float | Mapping = "dynamic") -> None:
        check_clip_grad(grad_clip)
        positive_int(accumulate, "accumulate", owner=type(self).__name__)
        check_loss_scale(loss_scale)
        self.grad_clip = dict(grad_clip) if grad_clip is not None else None
        self.accumulate = accumulate
        self.amp = bool(amp)
        self.loss_scale = loss_scale

    def wrapper_config(self) -> dict[str, Any]:
        """The ``optim_wrapper`` config (without ``optimizer``) this hook stands for."""
        cfg: dict[str, Any] = {"type": "AmpOptimWrapper" if self.amp else "OptimWrapper"}
        if self.grad_clip is not None:
            cfg["clip_grad"] = dict(self.grad_clip)
        if self.accumulate > 1:
            cfg["accumulative_counts"] = self.accumulate
        if self.amp:
            cfg["loss_scale"] = self.loss_scale
        return cfg

    def before_run(self, runner: Runner) -> None:
        """Replace the run's plain wrapper with the one this hook describes."""
        current = runner.optim_wrapper
        if current is None:
            if hasattr(runner.model, "train_step"):
                return  # the model updates itself; nothing to configure
            raise ConfigError(f"{type(self).__name__} needs an optimizer: pass optimizer= to the "
                              "Runner, or remove the hook")
        optimizer = getattr(current, "optimizer", None)
        if optimizer is None:
            raise ConfigError(f"{type(self).__name__} configures one optimizer; this run has "
                              f"several ({type(current).__name__}): set clip_grad, "
                              "accumulative_counts and AMP in optim_wrapper instead")
        wanted = self.wrapper_config()
        if type(current).__name__ == wanted["type"] and _same(current, wanted):
            return  # already configured (a second run of the same Runner)
        if type(current) is not OptimWrapper or current.clip_grad is not None \
                or current.accumulative_counts != 1:
            raise ConfigError(f"both optim_wrapper ({current!r}) and {self!r} configure the "
                              "optimizer step: keep one")
        runner.optim_wrapper = OPTIM_WRAPPERS.build({**wanted, "optimizer": optimizer})

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(grad_clip={self.grad_clip}, accumulate={self.accumulate}, "
                f"amp={self.amp}, loss_scale={self.loss_scale!r})")


def _same(wrapper: Any, cfg: dict[str, Any]) -> bool:
    return (wrapper.clip_grad == check_clip_grad(cfg.get("clip_grad"))
            and wrapper.accumulative_counts == cfg.get("accumulative_counts", 1)
            and getattr(wrapper, "loss_scale", None) == cfg.get("loss_scale"))


@HOOKS.register()
class Fp16OptimizerHook(OptimizerHook):
    """mmcv's AMP optimizer hook: :class:`OptimizerHook` with ``amp=True``.

    ``loss_scale`` defaults to mmcv's static 512.0; pass ``"dynamic"`` for a
    growing/backing-off scale, or a dict of GradScaler arguments. On CPU there
    is no GradScaler: autocast runs in bfloat16 and ``loss_scale`` is unused.
    ``coalesce``, ``bucket_size_mb`` and ``distributed`` are accepted so that
    mmcv configs load, and have no effect: DistributedDataParallel already
    all-reduces the gradients in buckets.

    Example::

        >>> hook = Fp16OptimizerHook(loss_scale="dynamic", grad_clip={"max_norm": 1.0})
        >>> hook.amp, hook.loss_scale
        (True, 'dynamic')
    """

    def __init__(self, grad_clip: Mapping[str, Any] | None = None, coalesce: bool = True,
                 bucket_size_mb: int = -1, loss_scale: str | float | Mapping = 512.0,
                 distributed: bool = True, accumulate: int = 1) -> None:
        del coalesce, bucket_size_mb, distributed  # accepted for mmcv configs (see above)
        super().__init__(grad_clip=grad_clip, accumulate=accumulate, amp=True,
                         loss_scale=loss_scale)


@HOOKS.register()
class GradientCumulativeOptimizerHook(OptimizerHook):
    """mmcv's name for :class:`OptimizerHook` with ``accumulate=cumulative_iters``.

    Example::

        >>> GradientCumulativeOptimizerHook(cumulative_iters=4).accumulate
        4
    """

    def __init__(self, cumulative_iters: int = 1, grad_clip: Mapping[str, Any] | None = None,
                 amp: bool = False, loss_scale: str | float | Mapping = "dynamic") -> None:
        super().__init__(grad_clip=grad_clip, accumulate=cumulative_iters, amp=amp,
                         loss_scale=loss_scale)
