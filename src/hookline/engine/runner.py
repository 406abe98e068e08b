"""``Runner``: trains, validates and tests a PyTorch model, calling hooks at MMEngine's stages.

Example::

    >>> import tempfile, torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline import Runner
    >>> data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    >>> runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2,
    ...                 train_dataloader=DataLoader(data, batch_size=16, shuffle=True),
    ...                 val_dataloader=DataLoader(data, batch_size=32), metrics={"acc": "accuracy"},
    ...                 work_dir=tempfile.mkdtemp(), default_hooks={"logger": None})
    >>> model = runner.train()  # doctest: +ELLIPSIS
    2... - hookline - INFO - model: Linear, 10 parameters (10 trainable); ...
    ...
    >>> runner.iter
    8
"""

from __future__ import annotations

import inspect
import logging
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

from . import distributed
from .arguments import (
    check_runner_arguments,
    check_unknown_arguments,
    ddp_options,
    resume_and_load_from,
)
from .checkpoint import CheckpointWriter
from .checks import positive_int
from .config_dict import ConfigDict, plain_arguments
from .data import build_dataloader, check_has_batches, loader_length
from .environment import release_at_exit, resolve_device, seed_everything
from .eval_loop import build_eval_loop
from .hook import Hook
from .hook_table import HookTable
from .logs import close_logger, make_logger, set_current_logger
from .loops import TrainLoop, ValLoop, train_loop_config
from .message_hub import MessageHub
from .metric_names import check_monitored_names
from .metrics import build_metrics
from .optimization import build_run_optimization
from .optimizer_coverage import check_optimizer_coverage, check_training_wrapper
from .registries import DATASETS, LOOPS, LOSSES, MODELS
from .run_header import log_run_header
from .run_state import RunState
from .runner_attributes import RunnerAttributes
from .runner_checkpoints import RunnerCheckpoints
from .runner_hooks import RunnerHooks
from .runner_lifetime import RunnerLifetime
from .samplers import check_epochs_end
from .schedulers_per_optimizer import with_by_epoch
from .signals import StopRequest
from .step import check_contract, make_step, make_train_step, trainable, wrap_for_training
from .visualizer import Visualizer

if TYPE_CHECKING:  # pragma: no cover
    from .optim_wrapper import OptimWrapperLike


def _weak_method(method: Callable[..., Any], dead: Any) -> Callable[..., Any]:
    """``method`` (a bound method) called through a weak reference to its object: ``dead``
    once the object is gone.

    Example::

        >>> class Box:
        ...     def value(self): return 1
        >>> box = Box(); call = _weak_method(box.value, None)
        >>> call(), (box := None), call()
        (1, None, None)
    """
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> Any:
        bound = ref()
        return dead if bound is None else bound(*args)

    return call


class Runner(RunnerAttributes, RunnerCheckpoints, RunnerHooks, RunnerLifetime):
    """Runs training (``train``), validation (``val``) and test (``test``) loops with hooks.

    See docs/engine.md for every argument; the short version: give a model,
    an optimizer (object or ``{"type": "SGD", "lr": 0.1}``) or an
    ``optim_wrapper`` config, a loss function (unless the model has
    ``training_step``), dataloaders, and exactly one of ``max_epochs`` / ``max_iters``.
    ``seed`` (default 0): every Runner seeds Python's, NumPy's and torch's global RNGs
    with it as it is built (so a sweep that varies ``torch.manual_seed`` before building
    Runners must vary ``seed=`` instead, or pass ``seed=None``); ``seed=None``: nothing is
    seeded, the process's RNG state is used as it is (the data order of the loaders
    hookline rebuilds is still fixed by seed 0 and the epoch, so resumes stay exact).
    ``fast_data=False``: batches from the DataLoader's iterator, never by indexing.
    ``find_unused_parameters`` and ``model_wrapper_cfg`` (MMEngine's keys) configure the
    DistributedDataParallel wrapper of multi-process runs (unused on one process).
    ``test_metrics`` (default: ``metrics``) are the test loop's metrics; ``val_loop`` /
    ``test_loop`` configure the evaluation loops as ``train_loop`` the training one (a
    ``LOOPS`` name or a config, e.g. ``{"fp16": True}``, MMEngine's ``val_cfg``).
    """

    def __init__(self, model: torch.nn.Module | Mapping[str, Any], *, optimizer: Any = None,
                 optim_wrapper: Any = None, loss_fn: Callable[..., Any] | None = None,
                 param_scheduler: Any = None, train_dataloader: Any = None,
                 val_dataloader: Any = None, test_dataloader: Any = None,
                 metrics: Mapping[str, Any] | None = None,
                 test_metrics: Mapping[str, Any] | None = None, max_epochs: int | None = None,
                 max_iters: int | None = None, val_interval: int | None = None,
                 train_loop: str | Mapping[str, Any] | None = None,
                 val_loop: str | Mapping[str, Any] | None = None,
                 test_loop: str | Mapping[str, Any] | None = None,
                 work_dir: str | Path | None = None, hooks: Sequence[Hook | Mapping[str, Any]] = (),
                 default_hooks: Mapping[str, Any] | None = None, seed: int | None = 0,
                 device: str | torch.device = "auto", resume: str | Path | bool | None = None,
                 load_from: str | Path | None = None, config: Mapping[str, Any] | None = None,
                 fast_data: bool = True, signal_sync_interval: int = 1,
                 find_unused_parameters: bool = False,
                 model_wrapper_cfg: Mapping[str, Any] | None = None,
                 **unknown: Any) -> None:
        if unknown:  # one clear error, naming what to pass instead (not Python's TypeError)
            check_unknown_arguments(unknown, [name for name, p in inspect.signature(Runner)
                                              .parameters.items() if p.kind is not p.VAR_KEYWORD])
        check_runner_arguments(  # before anything is built or written
            model=model, optimizer=optimizer, optim_wrapper=optim_wrapper, loss_fn=loss_fn,
            param_scheduler=param_scheduler, train_dataloader=train_dataloader,
            val_dataloader=val_dataloader, test_dataloader=test_dataloader, hooks=hooks,
            default_hooks=default_hooks, seed=seed, device=device, work_dir=work_dir,
            resume=resume, load_from=load_from, fast_data=fast_data,
            signal_sync_interval=signal_sync_interval,
            find_unused_parameters=find_unused_parameters, model_wrapper_cfg=model_wrapper_cfg,
            val_loop=val_loop, test_loop=test_loop)
        if max_epochs is not None and max_iters is not None:
            raise ConfigError("give max_epochs or max_iters, not both")
        for name, value in (("max_epochs", max_epochs), ("max_iters", max_iters),
                            ("val_interval", val_interval)):
            positive_int(value, name, allow_none=True)
        self.config = dict(config) if config is not None else None
        #: the run's config with attribute access (MMEngine's ``runner.cfg``): ``config``, or
        #: the plain-data arguments this Runner was given
        self.cfg = ConfigDict(self.config if self.config is not None else plain_arguments(
            model=model, optimizer=optimizer, optim_wrapper=optim_wrapper,
            param_scheduler=param_scheduler, train_dataloader=train_dataloader,
            val_dataloader=val_dataloader, test_dataloader=test_dataloader,
            max_epochs=max_epochs, max_iters=max_iters, val_interval=val_interval,
            train_loop=train_loop, val_loop=val_loop, test_loop=test_loop,
            work_dir=None if work_dir is None else str(work_dir),
            default_hooks=default_hooks, seed=seed))
        #: the data order's seed: ``seed``, 0 with ``seed=None`` (orders stay replayable)
        self.seed: int = 0 if seed is None else seed
        #: whether this Runner seeded Python's, NumPy's and torch's global RNGs (``seed=None``:
        #: it did not; the process's RNG state is used as it is)
        self.seeded = seed is not None
        self.fast_data = fast_data  # batches by indexing where exact (docs/engine.md, fast data path)
        #: iterations between the ranks' agreement on a stop signal (see :meth:`check_stop`)
        self.signal_sync_interval = signal_sync_interval
        if seed is not None:
            seed_everything(seed)
        #: whether this Runner started the process group (it then destroys it at exit)
        self._owns_process_group = distributed.init_from_env(str(device))
        self.rank, self.world_size = distributed.get_rank(), distributed.get_world_size()
        self.device = resolve_device(device)
        if self.device.type == "cuda" and self.world_size > 1:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.work_dir = Path(work_dir) if work_dir is not None else Path("work_dirs") / "run"
        self.logger = make_logger(self.work_dir, main_process=self.rank == 0)
        set_current_logger(self.logger)
        weakref.finalize(self, close_logger, self.logger)
        #: when the run started, ``%Y%m%d_%H%M%S`` (rank 0's on every rank)
        self.timestamp: str = distributed.all_gather_object(
            time.strftime("%Y%m%d_%H%M%S", time.localtime()))[0]
        #: the run's name (MMEngine's): ``experiment_name`` from the config, else
        #: ``<work_dir name>_<timestamp>``; assignable
        self.experiment_name: str = str(self.cfg.get("experiment_name")
                                        or f"{self.work_dir.name}_{self.timestamp}")
        self.message_hub = MessageHub()
        # weakly: the hub is the Runner's, and a bound method would hold the Runner in a cycle
        self.message_hub.live_info = _weak_method(self._live_info, {})
        self.message_hub.live_scalar = _weak_method(self._live_scalar, None)
        #: scalars, images and the config to ``work_dir/<timestamp>/vis_data`` (written on use;
        #: the Visualizer adds ``vis_data``, as MMEngine's)
        self.visualizer = Visualizer(name=self.experiment_name,
                                     save_dir=self.work_dir / self.timestamp)
        if self.config:  # MMEngine's vis_data/config.py, with the first scalar or image
            self.visualizer.add_config_with_first_record(self.config)
        self._setup_model(model, loss_fn, ddp_options(find_unused_parameters, model_wrapper_cfg))
        self._optim_wrapper: OptimWrapperLike | None = None
        self.metrics = build_metrics(metrics)  # with neither optimizer: configure_optimizers()
        #: the test loop's metrics (``test_metrics=``, by default the same as ``metrics``)
        self.test_metrics = self.metrics if test_metrics is None else build_metrics(test_metrics)
        self.outputs: dict[str, Any] | None = None
        self.state = RunState()
        self._build_loops(train_dataloader, val_dataloader, test_dataloader,
                          max_epochs, max_iters, val_interval, train_loop, (val_loop, test_loop))
        self.hooks = HookTable()
        # after the loops: configure_optimizers() and scheduler lengths may need the run length
        self.optim_wrapper, pairs = build_run_optimization(
            self, optimizer, optim_wrapper, param_scheduler)
        #: MMEngine's shape: the schedulers, each with ``by_epoch`` (see ``scheduler_pairs``)
        self.param_schedulers: list[Any] = with_by_epoch(pairs)
        self._resume, self._load_from = resume_and_load_from(resume, load_from)
        self._loaded = False
        #: True once a checkpoint was loaded (``load_from``, ``resume``, ``load_checkpoint``);
        #: MMEngine's hooks read it as ``runner._has_loaded``
        self.has_loaded = False
        #: writes checkpoints in order on a background thread (``save_checkpoint(background=True)``)
        self.checkpoint_writer = CheckpointWriter()
        self._train_step: Callable[..., dict[str, Any]] | None = None
        self._eval_steps: dict[str, Callable[..., Any]] = {}
        self._stop: StopRequest | None = None
        self._coverage_warned = False  # parameters no optimizer updates: said once per Runner
        self._closed = False  # see close()
        #: the run in progress, ``"train"``, ``"val"`` or ``"test"`` (None between runs): what
        #: hooks read when a checkpoint is loaded as a run starts, before its first stage
        self.running: str | None = None
        self._register_default_hooks(default_hooks)
        for hook in hooks:
            self.register_hook(hook)
        # a save_best / monitor typo, or save_best with no validation: now, not after an epoch
        check_monitored_names(self)

    # -- setup ----------------------------------------------------------------
    def _setup_model(self, model: torch.nn.Module | Mapping[str, Any],
                     loss_fn: Callable[..., Any] | Mapping[str, Any] | None,
                     ddp_kwargs: Mapping[str, Any] | None = None) -> None:
        if isinstance(model, Mapping):
            model = MODELS.build(model)
        if not isinstance(model, torch.nn.Module):
            raise ConfigError(f"model must be a torch.nn.Module or a config dict, got {model!r}")
        # a model the user wrapped in (MM)DistributedDataParallel: the bare model, wrapped once
        self.model = distributed.unwrap_model(model).to(self.device)
        # {"type": "CrossEntropyLoss", ...}: any torch.nn loss
        self.loss_fn: Callable[..., Any] | None = (
            LOSSES.build(loss_fn) if isinstance(loss_fn, Mapping) else loss_fn)
        #: what training runs through on several processes (None on one): the
        #: DistributedDataParallel wrapper, or an OwnStepSync for an own train_step
        self.ddp_model: torch.nn.Module | None = None
        self._stop_group: Any = None  # the gloo group that shares stop flags (check_stop)
        self._ddp_kwargs = ddp_kwargs  # the wrapper is built again when trainability changes
        self._ddp_trainable = trainable(self.model)
        if self.world_size > 1:
            self.ddp_model = wrap_for_training(self.model, self.loss_fn, self.device, ddp_kwargs)
            distributed.warn_frozen_under_ddp(self.ddp_model, self.model, self.logger)
            self._stop_group = distributed.control_group()
            release_at_exit(self, destroy=self._owns_process_group)

    def _build_loops(self, train: Any, val: Any, test: Any, max_epochs: int | None,
                     max_iters: int | None, val_interval: int | None,
                     train_loop: str | Mapping[str, Any] | None,
                     eval_loops: tuple[Any, Any] = (None, None)) -> None:
        loader_args: dict[str, Any] = dict(seed=self.seed, rank=self.rank,
                                           world_size=self.world_size, logger=self.logger,
                                           datasets_registry=DATASETS)
        train = build_dataloader(train, name="train_dataloader", **loader_args)
        check_has_batches(train, "train_dataloader", training=True)
        # evaluation shards are not padded: every sample counts once in the metrics
        val, test = (build_dataloader(loader, name=name, shuffle_default=False, pad=False,
                                      **loader_args)
                     for loader, name in ((val, "val_dataloader"), (test, "test_dataloader")))
        check_has_batches(val, "val_dataloader", training=False)
        check_has_batches(test, "test_dataloader", training=False)
        # MMEngine's ValLoop / TestLoop, or the val_loop / test_loop config (fp16, a subclass)
        self.val_loop: ValLoop | None = None if val is None else build_eval_loop(
            eval_loops[0], "val", self, val)
        self.test_loop: ValLoop | None = None if test is None else build_eval_loop(
            eval_loops[1], "test", self, test)
        self._train_dataloader = train
        self.train_loop: TrainLoop | None = None
        cfg = train_loop_config(train_loop, max_epochs=max_epochs, max_iters=max_iters,
                                val_interval=val_interval)
        if train is None or cfg is None:
            return
        named = isinstance(train_loop, str) or (isinstance(train_loop, Mapping)
                                                 and train_loop.get("type") is not None)
        if cfg["type"] == "IterBasedTrainLoop" and "val_interval" not in cfg and not named:
            # one pass (a loop config that names IterBasedTrainLoop keeps MMEngine's 1000)
            cfg["val_interval"] = loader_length(train) or 1000
        self.train_loop = LOOPS.build(cfg, runner=self, dataloader=train)
        if self.train_loop.by_epoch:
            check_epochs_end(train)  # an InfiniteSampler: the first epoch would never end
        self.state.by_epoch = self.train_loop.by_epoch

    @staticmethod
    def build_dataloader(dataloader: Any, seed: int | None = None) -> Any:
        """A DataLoader from ``dataloader`` (a DataLoader or a config dict, see the
        ``train_dataloader`` argument), sharded for this process (MMEngine's
        ``Runner.build_dataloader``). A hook may assign the result to
        ``runner.train_loop.dataloader``."""
        return build_dataloader(dataloader, seed=0 if seed is None else seed,
                               rank=distributed.get_rank(),
                               world_size=distributed.get_world_size(),
                               logger=logging.getLogger("hookline"), datasets_registry=DATASETS)

    # -- running --------------------------------------------------------------------
    def train(self) -> torch.nn.Module:
        """Train for ``max_epochs`` or ``max_iters``; returns the model."""
        if self.train_loop is None:
            raise ConfigError("train() needs train_dataloader and one of max_epochs / max_iters")
        check_contract(self.model, self.loss_fn)
        if self._optim_wrapper is None and not hasattr(self.model, "train_step"):
            raise ConfigError("train() needs an optimizer: pass optimizer= (e.g. {'type': 'SGD', "
                              "'lr': 0.01}) or optim_wrapper=, or give the model configure_optimizers()")
        self._check_optimizer_coverage()
        with self._work_dir_locked(), self._running("train"), \
                StopRequest(self.work_dir) as self._stop:
            self._load_or_resume(training=True)
            log_run_header(self)  # the hook table goes to log.txt only
            self.model.train()
            self.train_loop.run()
            # the last checkpoint's write ends while a signal still only asks to stop: one
            # that came meanwhile stops the run as at any other point (a checkpoint, exit 143)
            self.checkpoint_writer.flush()
            self.check_stop()
        self._stop = None
        return self.model

    def _check_optimizer_coverage(self) -> None:
        """The optimizer updates ``runner.model`` (a model assigned since the Runner was built
        is refused), and a warning, once per Runner, names trainable parameters it leaves out
        (see :mod:`~hookline.engine.optimizer_coverage`)."""
        check_training_wrapper(self.model, self.ddp_model)
        missing = check_optimizer_coverage(self.model, self._optim_wrapper, self.logger,
                                           warn=not self._coverage_warned, extra=self.loss_fn)
        self._coverage_warned = self._coverage_warned or bool(missing)

    def val(self) -> dict[str, Any]:
        """Run the validation loop once; returns the metrics."""
        return self._evaluate("val", self.val_loop)

    def test(self) -> dict[str, Any]:
        """Run the test loop once; returns the metrics (of ``test_metrics``)."""
        return self._evaluate("test", self.test_loop)

    def _evaluate(self, mode: str, loop: ValLoop | None) -> dict[str, Any]:
        if loop is None:
            raise ConfigError(f"{mode}() needs {mode}_dataloader")
        with self._running(mode):
            self._load_or_resume()
            return loop.run()

    def train_step(self, batch: Any, batch_idx: int = 0) -> dict[str, Any]:
        """One training step on a device batch (``batch_idx``: its index in the epoch)."""
        step = self._train_step
        if step is None:  # resolved once per run (see _running), not every iteration
            step = self._train_step = make_train_step(self.model, self.loss_fn,
                                                      self._optim_wrapper, self.ddp_model)
        return step(batch, batch_idx)

    def eval_step(self, batch: Any, mode: str = "val", batch_idx: int = 0) -> Any:
        """One ``val`` / ``test`` step (no gradients are taken by the loop around it): its
        outputs dict, or the list of data samples the model's step returned. It runs in the
        precision it is called in: full precision unless the loop has ``fp16=True`` (as
        MMEngine's ValLoop / TestLoop), whatever the optimizer wrapper trains in."""
        step = self._eval_steps.get(mode)
        if step is None:
            step = self._eval_steps[mode] = make_step(self.model, self.loss_fn, mode)
        return step(batch, batch_idx)

    @classmethod
    def from_cfg(cls, cfg: Any) -> Runner:  # noqa: ARG003  (MMEngine's name, refused)
        """MMEngine's ``Runner.from_cfg(cfg)``: hookline's Runner takes its arguments directly
        (a ``ConfigError`` says how); ``hookline.app.build_runner(cfg)`` builds one from a
        hookline config (docs/cli.md, docs/porting.md for MMEngine's keys)."""
        raise ConfigError(
            "Runner.from_cfg is MMEngine's: hookline's Runner takes the config's entries as "
            "its arguments, Runner(**cfg) (MMEngine's keys train_cfg, val_evaluator, "
            "custom_hooks ... each get an error naming hookline's), or build it from a config "
            "file or dict with hookline.app.build_runner(cfg) (what `hookline train CONFIG` "
            "does; docs/cli.md)")

    def __repr__(self) -> str:
        length = f"max_epochs={self.max_epochs}" if self.by_epoch else f"max_iters={self.max_iters}"
        return f"<Runner {type(self.model).__name__} {length} epoch={self.epoch} iter={self.iter}>"

