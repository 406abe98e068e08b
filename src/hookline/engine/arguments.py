"""The Runner's arguments checked before anything is built or written: one error each.

:func:`check_runner_arguments` runs first in ``Runner.__init__``, so a wrong
argument is a :class:`ConfigError` naming it, raised before the seed is
set, the model is built or ``log.txt`` is opened. Configs (``{"type": ...}``
dicts) of the optimizer, schedulers, loss and dataloaders go through
:mod:`hookline.engine.torch_args` (built on dummies; nothing of the model).

Example::

    >>> import torch
    >>> from hookline.engine.arguments import check_runner_arguments
    >>> check_runner_arguments(model=torch.nn.Linear(2, 2), loss_fn=torch.nn.CrossEntropyLoss)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: loss_fn is the class CrossEntropyLoss; pass an instance, ...
    >>> check_runner_arguments(model=torch.nn.Linear(2, 2), hooks="EMAHook")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: hooks must be a list ... 'EMAHook'; e.g. hooks=[{'type': 'EMAHook'}]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError

from .checks import positive_int
from .configure_optimizers import wraps_model_optimizers
from .default_hooks import check_default_hooks
from .environment import check_device, check_work_dir
from .eval_loop import eval_loop_config
from .hook import Hook
from .hook_adapters import find_adapter
from .registries import MODELS
from .scheduler_args import check_schedulers, dummy_optimizer
from .schedulers_per_optimizer import per_optimizer, wrapper_names
from .torch_args import check_dataloader, check_loss, check_optim_wrapper, check_optimizer

__all__ = ["check_configure_optimizers", "check_fast_data", "check_hooks_argument",
           "check_runner_arguments", "ddp_options"]


def check_runner_arguments(*, model: Any, optimizer: Any = None, optim_wrapper: Any = None,
                           loss_fn: Any = None, param_scheduler: Any = None,
                           train_dataloader: Any = None, val_dataloader: Any = None,
                           test_dataloader: Any = None, hooks: Any = (),
                           default_hooks: Any = None, seed: Any = 0, device: Any = "auto",
                           work_dir: Any = None, resume: Any = None, load_from: Any = None,
                           fast_data: Any = True, signal_sync_interval: Any = 1,
                           find_unused_parameters: Any = False,
                           model_wrapper_cfg: Any = None, val_loop: Any = None,
                           test_loop: Any = None) -> None:
    """Raise :class:`ConfigError` for the first of the Runner's arguments it cannot use."""
    if isinstance(model, type):
        raise ConfigError(f"model is the class {model.__name__}; pass an instance, "
                          f"{model.__name__}(...) (or {{'type': '{model.__name__}'}})")
    if not isinstance(model, (torch.nn.Module, Mapping)):
        raise ConfigError(f"model must be a torch.nn.Module or a config dict, got {model!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"seed must be an int, or None (do not seed: the process's RNG state "
                          f"as it is), got {seed!r}")
    check_device(device)
    check_fast_data(fast_data)
    positive_int(signal_sync_interval, "signal_sync_interval")
    ddp_options(find_unused_parameters, model_wrapper_cfg)
    if work_dir is not None and os.environ.get("RANK", "0") == "0":  # only rank 0 writes
        check_work_dir(work_dir)
    elif work_dir is not None and not isinstance(work_dir, (str, os.PathLike)):
        raise ConfigError(f"work_dir must be a folder path (a str or a Path), got {work_dir!r}")
    for name, value in (("resume", resume), ("load_from", load_from)):
        if value is not None and not isinstance(value, (str, os.PathLike)) and not (
                name == "resume" and isinstance(value, bool)):
            raise ConfigError(f"{name} must be a checkpoint path"
                              + (", 'auto', True or False" if name == "resume" else "")
                              + f", got {value!r}")
    check_hooks_argument(hooks)
    check_default_hooks(default_hooks)
    if optimizer is not None and optim_wrapper is not None:
        raise ConfigError(both_optimizers_message(optimizer, optim_wrapper))
    dummy = check_optimizer(optimizer) if optim_wrapper is None else \
        check_optim_wrapper(optim_wrapper)
    if wraps_model_optimizers(optim_wrapper):
        check_configure_optimizers(model)
    given = optimizer if optimizer is not None else getattr(optim_wrapper, "optimizer", None)
    if dummy is None and isinstance(given, torch.optim.Optimizer):
        dummy = dummy_optimizer(given)
    names = wrapper_names(optim_wrapper)
    if names is not None and isinstance(optim_wrapper, Mapping):  # several optimizers
        for name, spec in per_optimizer(param_scheduler, names):
            child = check_optim_wrapper(optim_wrapper[name], f"optim_wrapper.{name}")
            check_schedulers(spec, child or dummy_optimizer(), f"param_scheduler.{name}")
    elif dummy is not None:
        check_schedulers(param_scheduler, dummy)
    elif optimizer is None and optim_wrapper is None and param_scheduler not in (None, [], ()):
        raise ConfigError("param_scheduler needs an optimizer: pass optimizer= (e.g. "
                          "{'type': 'SGD', 'lr': 0.01}) or optim_wrapper=")
    check_loss(loss_fn)
    for name, loader in (("train_dataloader", train_dataloader),
                         ("val_dataloader", val_dataloader), ("test_dataloader", test_dataloader)):
        check_dataloader(loader, name)
    check_eval_loops(val_loop, test_loop, val_dataloader, test_dataloader)


def check_eval_loops(val_loop: Any, test_loop: Any, val_dataloader: Any, test_dataloader: Any,
                     ) -> None:
    """``val_loop`` / ``test_loop`` must be loop names or configs, each with its dataloader.

    Example::

        >>> check_eval_loops({"fp16": True}, None, None, None)
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: val_loop configures the validation loop, but there ...
    """
    for mode, spec, loader in (("val", val_loop, val_dataloader),
                               ("test", test_loop, test_dataloader)):
        if spec is None:
            continue
        eval_loop_config(spec, mode)
        if loader is None:
            what = "validation" if mode == "val" else "test"
            raise ConfigError(f"{mode}_loop configures the {what} loop, but there is no "
                              f"{mode}_dataloader: give {mode}_dataloader= too, or drop "
                              f"{mode}_loop")


def check_fast_data(value: Any, where: str = "fast_data") -> None:
    """``fast_data`` (batches by indexing where exact) must be true or false.

    Example::

        >>> check_fast_data("no")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: fast_data must be true or false (false: every batch ...
    """
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false (false: every batch from the "
                          f"DataLoader's own iterator, never by indexing), got {value!r}")


def check_hooks_argument(hooks: Any) -> None:
    """``hooks`` must be a list (or tuple) of hooks and hook configs.

    Example::

        >>> check_hooks_argument({"type": "EMAHook"})
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: hooks must be a list ...: hooks=[{'type': 'EMAHook'}]
    """
    if isinstance(hooks, str):
        raise ConfigError(f"hooks must be a list of hooks or hook configs, got the string "
                          f"{hooks!r}; e.g. hooks=[{{'type': {hooks!r}}}]")
    if isinstance(hooks, (Hook, Mapping)):
        what = "one hook config" if isinstance(hooks, Mapping) else "one hook"
        raise ConfigError(f"hooks must be a list of hooks or hook configs, got {what}; wrap it "
                          f"in a list: hooks=[{hooks!r}]")
    if not isinstance(hooks, (list, tuple)):
        raise ConfigError(f"hooks must be a list of hooks or hook configs, got {hooks!r}")
    for i, hook in enumerate(hooks):
        if isinstance(hook, type) and issubclass(hook, Hook):
            raise ConfigError(f"hooks[{i}] is the class {hook.__name__}; pass an instance, "
                              f"{hook.__name__}(...) (or {{'type': '{hook.__name__}'}})")
        if isinstance(hook, type):  # a callback class (Keras's History, a Lightning Callback...)
            raise ConfigError(f"hooks[{i}] is the class {hook.__name__}; pass an instance, "
                              f"{hook.__name__}(...)")
        if not isinstance(hook, (Hook, Mapping)) and find_adapter(hook) is None:
            raise ConfigError(f"hooks[{i}] must be a hookline Hook, a hook config such as "
                              f"{{'type': 'EMAHook'}}, or a Keras or Lightning callback, "
                              f"got {hook!r}")


#: the DistributedDataParallel arguments ``model_wrapper_cfg`` may set: name -> accepted type
_DDP_OPTIONS: dict[str, tuple[type, ...]] = {
    "find_unused_parameters": (bool,), "broadcast_buffers": (bool,),
    "gradient_as_bucket_view": (bool,), "static_graph": (bool,), "bucket_cap_mb": (int, float)}
_WRAPPER_TYPES = ("MMDistributedDataParallel", "DistributedDataParallel")


def ddp_options(find_unused_parameters: Any = False, model_wrapper_cfg: Any = None
                ) -> dict[str, Any]:
    """The DistributedDataParallel arguments of ``find_unused_parameters`` and
    ``model_wrapper_cfg`` (MMEngine's config keys), checked; unused on one process.

    Example::

        >>> ddp_options(True, {"type": "MMDistributedDataParallel", "broadcast_buffers": False})
        {'broadcast_buffers': False, 'find_unused_parameters': True}
        >>> ddp_options(model_wrapper_cfg={"type": "MMFullyShardedDataParallel"})
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: model_wrapper_cfg type must be ... got 'MMFullyShardedDataParallel'
    """
    if not isinstance(find_unused_parameters, bool):
        raise ConfigError(f"find_unused_parameters must be True or False, got "
                          f"{find_unused_parameters!r}")
    if model_wrapper_cfg is None:
        return {"find_unused_parameters": True} if find_unused_parameters else {}
    if not isinstance(model_wrapper_cfg, Mapping):
        raise ConfigError(f"model_wrapper_cfg must be a dict such as {{'type': "
                          f"'MMDistributedDataParallel', 'find_unused_parameters': True}}, got "
                          f"{model_wrapper_cfg!r}")
    options = dict(model_wrapper_cfg)
    kind = options.pop("type", "MMDistributedDataParallel")
    if kind not in _WRAPPER_TYPES:
        raise ConfigError(f"model_wrapper_cfg type must be {' or '.join(map(repr, _WRAPPER_TYPES))} "
                          f"(hookline wraps the model in torch's DistributedDataParallel), got "
                          f"{kind!r}")
    for name, value in options.items():
        accepted = _DDP_OPTIONS.get(name)
        if accepted is None:
            raise ConfigError(f"model_wrapper_cfg got {name!r}, which hookline does not pass to "
                              f"DistributedDataParallel; accepted: type, "
                              f"{', '.join(sorted(_DDP_OPTIONS))}")
        if not isinstance(value, accepted) or (bool not in accepted and isinstance(value, bool)) \
                or (name == "bucket_cap_mb" and isinstance(value, (int, float)) and value <= 0):
            want = "True or False" if bool in accepted else "a positive number"
            raise ConfigError(f"model_wrapper_cfg {name} must be {want}, got {value!r}")
    if find_unused_parameters and options.get("find_unused_parameters") is False:
        raise ConfigError("find_unused_parameters=True and model_wrapper_cfg "
                          "find_unused_parameters=False disagree: give it once")
    if find_unused_parameters:
        options["find_unused_parameters"] = True
    return dict(sorted(options.items()))


def check_configure_optimizers(model: Any) -> None:
    """An ``optim_wrapper`` without ``optimizer`` wraps the model's ``configure_optimizers()``
    optimizers: a :class:`ConfigError` when the model (or its config's class) has none."""
    target = model
    if isinstance(model, Mapping):  # a config: its registered class
        kind = model.get("type")
        try:
            target = MODELS.get(kind) if isinstance(kind, str) else kind
        except ConfigError:  # an unknown type: that error comes when the model is built
            return
    if target is not None and not callable(getattr(target, "configure_optimizers", None)):
        name = getattr(target, "__name__", type(target).__name__)
        raise ConfigError("optim_wrapper has no 'optimizer', e.g. {type: OptimWrapper, "
                          "optimizer: {type: SGD, lr: 0.01}} (without one, the model's "
                          f"configure_optimizers() gives it, and {name} has none)")


def resume_and_load_from(resume: str | os.PathLike[str] | bool | None,
                         load_from: str | os.PathLike[str] | None
                         ) -> tuple[str | os.PathLike[str] | None, str | os.PathLike[str] | None]:
    """MMEngine's ``resume=True`` / ``False`` as hookline's ``resume`` and ``load_from``:
    True resumes ``load_from`` when given (MMEngine's rule), else the newest checkpoint of
    the work dir (``"auto"``); False is None (load ``load_from``'s weights, if any).

    Example::

        >>> resume_and_load_from(True, None), resume_and_load_from(True, "a.pth")
        (('auto', None), ('a.pth', None))
        >>> resume_and_load_from(False, "a.pth")
        (None, 'a.pth')
    """
    if resume is True:
        return ("auto", None) if load_from is None else (load_from, None)
    if resume is False:
        return None, load_from
    return resume, load_from


#: other frameworks' argument names -> what a hookline Runner takes instead
#: other runners' argument names -> what to pass hookline's Runner instead (the config check
#: of hookline.app says the same for config keys)
FOREIGN_ARGUMENTS = {
    "callbacks": "hooks=[...] (Keras and Lightning callbacks go there too)",
    "custom_hooks": "hooks=[...]",
    "train_cfg": "max_epochs= or max_iters=, val_interval=, train_loop={...}",
    "val_evaluator": "metrics={name: metric}",
    "test_evaluator": "test_metrics={name: metric} (by default the test loop uses metrics=)",
    "val_cfg": "val_loop={'type': 'ValLoop', 'fp16': True} or val_loop={'fp16': True} "
               "(validation runs from val_dataloader=; without val_loop in full precision)",
    "test_cfg": "test_loop={'type': 'TestLoop', 'fp16': True} or test_loop={'fp16': True} "
                "(test() runs test_dataloader=; without test_loop in full precision)",
    "randomness": "seed=", "default_scope": "init_default_scope(...) before building",
    # mmcv's config keys (docs/porting.md)
    "lr_config": "hooks=[{'type': 'LrUpdaterHook', 'policy': 'step', 'step': [30, 60]}] (mmcv's "
                 "lr_config keys, e.g. policy, step, warmup, warmup_iters, go into hookline's "
                 "LrUpdaterHook) or param_scheduler={'type': 'MultiStepLR', ...} (torch's "
                 "schedulers)",
    "momentum_config": "hooks=[{'type': 'MomentumUpdaterHook', 'policy': ...}] (mmcv's "
                       "momentum_config keys go into hookline's MomentumUpdaterHook)",

    "max_steps": "max_iters= (max_iters counts batches, Lightning's max_steps optimizer steps: "
                 "with gradient accumulation, max_iters = max_steps x accumulative_counts, e.g. "
                 "max_steps=1000 with accumulate_grad_batches=4 is max_iters=4000 with "
                 "optim_wrapper={'accumulative_counts': 4})",
    "epochs": "max_epochs=",
    "val_begin": "train_loop={'val_begin': n} (validation from epoch, or iteration, n on; "
                 "max_epochs= / max_iters= and val_interval= stay Runner arguments)",
    "launcher": "nothing: start the script with torchrun (e.g. torchrun --nproc_per_node 2 "
                "train.py); the Runner sets up the process group from its environment",
    "env_cfg": "nothing: under torchrun the Runner picks nccl with CUDA, else gloo; set "
               "torch.backends.cudnn.benchmark, the multiprocessing start method or "
               "OMP_NUM_THREADS yourself before building the Runner",
    "sync_bn": "a converted model: model=torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) "
               "(CUDA only)",
    "auto_scale_lr": "nothing automatic: scale the optimizer's lr yourself (MMEngine's rule: "
                     "lr x total batch size / base_batch_size) before building the Runner",
    "compile": "a compiled model: model=torch.compile(model) (or compile its train_step); "
               "hookline does not compile it for you",
    "log_level": "logging.getLogger('hookline').setLevel(...) before building the Runner",
    "experiment_name": "work_dir= (each run's files go there; a timestamped folder holds its "
                       "log and TensorBoard files)",
    "cfg": "nothing: pass the config's entries as the Runner's arguments (MMEngine's "
           "Runner.from_cfg); hookline train CONFIG builds a Runner from a config file",
    # Lightning's Trainer arguments
    "gradient_clip_val": "optim_wrapper={'clip_grad': {'max_norm': v}} (without 'optimizer' it "
                         "wraps the model's configure_optimizers() optimizer)",
    "gradient_clip_algorithm": "optim_wrapper={'clip_grad': {'max_norm': v}} ('norm') or "
                               "{'clip_grad': {'type': 'value', 'clip_value': v}} ('value')",
    "accumulate_grad_batches": "optim_wrapper={'accumulative_counts': n} (without 'optimizer' "
                               "it wraps the model's configure_optimizers() optimizer)",
    "precision": "optim_wrapper={'type': 'AmpOptimWrapper', 'dtype': 'bfloat16'} for "
                 "'bf16-mixed' ('float16' for '16-mixed'); for '64-true' or 'bf16-true' convert "
                 "the model itself (model.double(), model.bfloat16())",
    "check_val_every_n_epoch": "val_interval=n",
    "val_check_interval": "val_interval=n with max_iters= (validation every n iterations; in a "
                          "max_epochs run val_interval counts epochs)",
    "limit_train_batches": "a shorter train_dataloader (e.g. over torch.utils.data.Subset("
                           "dataset, range(n))), or max_iters=",
    "limit_val_batches": "a shorter val_dataloader (e.g. over torch.utils.data.Subset(dataset, "
                         "range(n)))",
    "deterministic": "seed= (the Runner seeds Python, NumPy and torch), plus "
                     "torch.use_deterministic_algorithms(True) before building the Runner",
    "datamodule": "its loaders: dm.prepare_data(); dm.setup('fit'); then "
                  "train_dataloader=dm.train_dataloader(), val_dataloader=dm.val_dataloader()",
    "devices": "device='cuda' / 'cuda:N' / 'cpu' ('auto' by default); for several GPUs start the "
               "script with torchrun --nproc_per_node N",
    "accelerator": "device='cuda' / 'cpu' ('auto' by default)",
    "strategy": "nothing: under torchrun the Runner wraps the model in DistributedDataParallel "
                "(its options: model_wrapper_cfg=)",
    "num_sanity_val_steps": "nothing: a hookline run has no sanity check",
    "enable_checkpointing": "default_hooks={'checkpoint': None} to turn checkpoints off, or "
                            "{'checkpoint': {'type': 'CheckpointHook', ...}} to set them",
    "logger": "default_hooks={'logger': {'type': 'LoggerHook', 'interval': n}} (None: off); "
              "scalars go to work_dir (metrics.jsonl) and runner.visualizer",
    # MMEngine's Runner arguments hookline builds itself (as app/config_check explains them)
    "visualizer": "nothing: the Runner makes runner.visualizer (a LocalVisBackend writing "
                  "work_dir/<timestamp>/vis_data) for hooks; scalars also go to metrics.jsonl; "
                  "for TensorBoard add hooks=[{'type': 'TensorboardLoggerHook'}]",
    "log_processor": "default_hooks={'logger': {'type': 'LoggerHook', 'interval': n, "
                     "'by_epoch': ...}}: log lines come from the LoggerHook, which averages "
                     "losses and times over its interval (LogProcessor's window_size) and shows "
                     "other values' latest",
}


def check_unknown_arguments(unknown: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """One :class:`ConfigError` for keyword arguments a Runner does not take, naming what to
    pass instead (MMEngine's ``train_cfg``, Lightning's ``callbacks`` ...) or the closest
    accepted names.

    Example::

        >>> try:
        ...     check_unknown_arguments({"callbacks": []}, ["hooks", "max_epochs"])
        ... except ConfigError as exc:
        ...     print(exc)  # doctest: +ELLIPSIS
        Runner got an unexpected argument 'callbacks': pass hooks=[...] (Keras and Lightning ...
    """
    for name in unknown:
        if name in FOREIGN_ARGUMENTS:
            raise ConfigError(f"Runner got an unexpected argument {name!r}: pass "
                              f"{FOREIGN_ARGUMENTS[name]}")
        raise ConfigError.unknown("Runner argument", name, accepted)


def both_optimizers_message(optimizer: Any, optim_wrapper: Any) -> str:
    """The error for ``optimizer=`` given with ``optim_wrapper=``: for wrapper options
    (``clip_grad``, ``accumulative_counts`` ...) without an optimizer, the form that works."""
    message = "give optimizer= or optim_wrapper= (which holds its own optimizer), not both"
    if isinstance(optim_wrapper, Mapping) and "optimizer" not in optim_wrapper:
        shown = "<your optimizer>" if isinstance(optimizer, torch.optim.Optimizer) \
            else repr(optimizer)
        options = ", ".join(f"{k!r}: ..." for k in optim_wrapper)
        message += (f": to use wrapper options ({options}) put the optimizer inside the "
                    f"wrapper: optim_wrapper={{'optimizer': {shown}, {options}}} and no "
                    "optimizer=")
    return message
