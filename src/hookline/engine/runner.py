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
    2... - hookline - INFO - hooks by stage:
    ...
    >>> runner.iter
    8
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from hookline.core import ConfigError, HookHandle

from . import distributed, loops, state
from .build import build_optimizer, build_schedulers
from .checkpoint import find_resumable, load_checkpoint_file
from .checkpoint_writer import CheckpointWriter, serialize, write_now
from .data import build_dataloader
from .environment import destroy_at_exit, resolve_device, seed_everything
from .evaluator import build_metrics
from .hook import Hook
from .hook_table import HookProfile, HookTable
from .logs import close_logger, make_logger
from .message_hub import MessageHub
from .registries import DATASETS, HOOKS, LOSSES, MODELS
from .signals import StopRequest, TrainingInterrupted
from .step import StepModule, check_contract, make_step

DEFAULT_HOOKS: dict[str, dict] = {
    "optimizer": {"type": "OptimizerHook"},
    "param_scheduler": {"type": "ParamSchedulerHook"},
    "timer": {"type": "IterTimerHook"},
    "logger": {"type": "LoggerHook"},
    "checkpoint": {"type": "CheckpointHook", "interval": 1},
    "sampler_seed": {"type": "DistSamplerSeedHook"},
    "progress": {"type": "ProgressBarHook"},
}


class Runner:
    """Runs training (``train``), validation (``val``) and test (``test``) loops with hooks.

    See docs/engine.md for every argument; the short version: give a model,
    an optimizer (object or ``{"type": "SGD", "lr": 0.1}``), a loss function
    (unless the model has ``training_step``), dataloaders, and exactly one of
    ``max_epochs`` / ``max_iters``.
    """

    def __init__(self, model: torch.nn.Module | Mapping, *, optimizer: Any = None,
                 loss_fn: Callable | None = None, param_scheduler: Any = None,
                 train_dataloader: Any = None, val_dataloader: Any = None,
                 test_dataloader: Any = None, metrics: Mapping[str, Any] | None = None,
                 max_epochs: int | None = None, max_iters: int | None = None,
                 val_interval: int | None = None, work_dir: str | Path | None = None,
                 hooks: Sequence[Hook | Mapping] = (),
                 default_hooks: Mapping[str, Any] | None = None, seed: int = 0,
                 device: str | torch.device = "auto", resume: str | Path | None = None,
                 load_from: str | Path | None = None, config: Mapping | None = None) -> None:
        self._check_lengths(max_epochs, max_iters, val_interval)
        self.config = dict(config) if config is not None else None
        self.seed = seed
        seed_everything(seed)
        if distributed.init_from_env(str(device)):
            destroy_at_exit(self)
        self.rank, self.world_size = distributed.get_rank(), distributed.get_world_size()
        self.device = resolve_device(device)
        if self.device.type == "cuda" and self.world_size > 1:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.work_dir = Path(work_dir) if work_dir is not None else Path("work_dirs") / "run"
        self.logger = make_logger(self.work_dir, main_process=self.rank == 0)
        weakref.finalize(self, close_logger, self.logger)
        self.message_hub = MessageHub()
        self._setup_model(model, loss_fn)
        self.optimizer = build_optimizer(optimizer, self.model)
        self.param_schedulers = build_schedulers(param_scheduler, self.optimizer)
        self.metrics = build_metrics(metrics)
        loader_args = dict(seed=seed, rank=self.rank, world_size=self.world_size,
                           logger=self.logger, datasets_registry=DATASETS)
        self.train_dataloader = build_dataloader(train_dataloader, name="train_dataloader",
                                                 **loader_args)
        # evaluation shards are not padded: every sample counts once in the metrics
        self.val_dataloader = build_dataloader(val_dataloader, name="val_dataloader",
                                               shuffle_default=False, pad=False, **loader_args)
        self.test_dataloader = build_dataloader(test_dataloader, name="test_dataloader",
                                                shuffle_default=False, pad=False, **loader_args)
        self.max_epochs, self.max_iters = max_epochs, max_iters
        self.val_interval = val_interval or (1 if max_iters is None else
                                             len(self.train_dataloader or [None]))
        self.epoch = self.iter = 0
        self.outputs: dict | None = None
        self.stop_training = False
        self.autocast: Callable[[], Any] | None = None
        self.grad_scaler: Any = None
        self.grad_sync = True  # False: this iteration's backward skips the DDP all-reduce
        self._resume_batch = 0
        self._position = (0, 0, 0)
        self._resume, self._load_from, self._loaded = resume, load_from, False
        self._writer = CheckpointWriter()
        self._steps: dict[str, Callable[[Any], dict]] = {}
        self._stop: StopRequest | None = None
        self.hooks = HookTable()
        self._register_default_hooks(default_hooks)
        for hook in hooks:
            self.register_hook(hook)

    # -- setup ----------------------------------------------------------------
    @staticmethod
    def _check_lengths(max_epochs: Any, max_iters: Any, val_interval: Any) -> None:
        if max_epochs is not None and max_iters is not None:
            raise ConfigError("give max_epochs or max_iters, not both")
        for name, value in (("max_epochs", max_epochs), ("max_iters", max_iters),
                            ("val_interval", val_interval)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise ConfigError(f"{name} must be a positive int, got {value!r}")

    def _setup_model(self, model: Any, loss_fn: Any) -> None:
        if isinstance(model, Mapping):
            model = MODELS.build(model)
        if not isinstance(model, torch.nn.Module):
            raise ConfigError(f"model must be a torch.nn.Module or a config dict, got {model!r}")
        self.model = model.to(self.device)
        if isinstance(loss_fn, Mapping):  # {"type": "CrossEntropyLoss", ...}: any torch.nn loss
            loss_fn = LOSSES.build(loss_fn)
        self.loss_fn = loss_fn
        self._ddp = None
        self._stop_group: Any = None  # the gloo group that shares stop flags (_should_stop)
        if self.world_size > 1:
            self._ddp = distributed.wrap_ddp(StepModule(self.model, loss_fn), self.device)
            self._stop_group = distributed.control_group()

    def _register_default_hooks(self, overrides: Mapping[str, Any] | None) -> None:
        specs = dict(DEFAULT_HOOKS)
        for key, value in (overrides or {}).items():
            specs[key] = value
        for key, spec in specs.items():
            if spec is not None:
                self.register_hook(spec, _default_key=key)

    @classmethod
    def from_config(cls, cfg: Mapping | str | Path, *, work_dir: str | Path | None = None,
                    resume: str | Path | None = None, overrides: Sequence[str] = ()) -> Runner:
        """A Runner from a config dict or a YAML/JSON file (see docs/cli.md).

        Validates the whole config first (unknown keys, types and arguments are
        :class:`ConfigError` s with suggestions), applies ``overrides`` such as
        ``"optimizer.lr=0.05"``, and saves the resolved config as
        ``work_dir/config.yaml``. Delegates to :func:`hookline.engine.config.build_runner`.
        """
        from .config import build_runner

        return build_runner(cfg, work_dir=work_dir, resume=resume, overrides=overrides,
                            runner_cls=cls)

    # -- hooks --------------------------------------------------------------------
    def register_hook(self, hook: Hook | Mapping, priority: Any = None, *,
                      _default_key: str | None = None) -> HookHandle:
        """Add a hook (an instance or a ``{"type": ...}`` config); returns its handle.

        Priority comes from the argument, then the config's ``priority``, then
        the class; equal priorities keep registration order, defaults first.
        """
        if isinstance(hook, Mapping):
            cfg = dict(hook)
            cfg_priority = cfg.pop("priority", None)
            priority = priority if priority is not None else cfg_priority
            hook = HOOKS.build(cfg)
        return self.hooks.add(hook, priority, is_default=_default_key is not None,
                              key=_default_key)

    def hook_table(self) -> str:
        """The stage-by-hook call order, as text."""
        return self.hooks.table()

    def hook_profile(self) -> HookProfile:
        """Calls and seconds per hook and stage since ``runner.hooks.start_profiling()``.

        A list of ``HookTiming(hook, stage, calls, total_s)``, slowest first;
        ``print(runner.hook_profile())`` shows a table (see docs/logging.md).
        """
        return self.hooks.profile_report()

    def call_hook(self, stage: str, **kwargs: Any) -> None:
        """Call ``stage`` on the hooks that override it (MMEngine's name)."""
        self.hooks.call(self, stage, **kwargs)

    def on(self, stage: str, fn: Callable[..., Any] | None = None, *, priority: Any = None,
           every: int = 1, once: bool = False, when: Callable[..., bool] | None = None) -> Any:
        """Run a plain function at ``stage``; returns its :class:`HookHandle` (``.remove()``).

        ``fn(runner, **stage_kwargs)`` gets the stage's arguments; ``every``,
        ``once`` and ``when`` filter like everywhere in hookline (see
        :class:`hookline.hooks.ClosureHook`). Without ``fn`` it is a decorator::

            @runner.on("after_train_iter", every=100)
            def log(runner, batch_idx, data_batch=None, outputs=None): ...
        """
        from hookline.hooks.closure import ClosureHook  # hooks import the engine, not back

        if fn is None:
            return lambda f: self.on(stage, f, priority=priority, every=every, once=once,
                                     when=when)
        hook = ClosureHook(stage, fn, priority=priority, every=every, once=once, when=when)
        hook.handle = self.register_hook(hook)
        return hook.handle

    # -- running --------------------------------------------------------------------
    def train(self) -> torch.nn.Module:
        """Train for ``max_epochs`` or ``max_iters``; returns the model."""
        if self.max_epochs is None and self.max_iters is None:
            raise ConfigError("train() needs max_epochs or max_iters")
        if self.train_dataloader is None:
            raise ConfigError("train() needs train_dataloader")
        check_contract(self.model, self.loss_fn)
        with self._running(), StopRequest() as self._stop:
            self._load_or_resume()
            self.logger.info("hooks by stage:\n%s", self.hook_table())
            self.model.train()
            if self.max_epochs is not None:
                loops.train_by_epoch(self)
            else:
                loops.train_by_iter(self)
        self._stop = None
        return self.model

    def val(self) -> dict[str, float]:
        """Run the validation loop once; returns the metrics."""
        return self._evaluate("val", self.val_dataloader)

    def test(self) -> dict[str, float]:
        """Run the test loop once; returns the metrics."""
        return self._evaluate("test", self.test_dataloader)

    def _evaluate(self, mode: str, loader: Any) -> dict[str, float]:
        if loader is None:
            raise ConfigError(f"{mode}() needs {mode}_dataloader")
        with self._running():
            self._load_or_resume()
            return loops.evaluate(self, mode, loader)

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        self._steps = {}  # the model may have changed between runs
        self.hooks.call(self, "before_run")
        try:
            yield
            self._writer.flush()
        except BaseException as exc:
            try:
                self._writer.flush()
            except Exception:  # the original error matters more; still tell the user
                self.logger.exception("a background checkpoint write failed")
            self.hooks.call_on_exception(self, exc, self.logger)
            if isinstance(exc, TrainingInterrupted):
                self.logger.warning("%s", exc.message)
            raise
        self.hooks.call(self, "after_run")

    def _step(self, batch: Any, mode: str) -> dict:
        if self._ddp is not None and mode == "train":
            if self.grad_sync:
                return self._ddp(batch, mode)
            with self._ddp.no_sync():  # a micro-batch of an accumulation group (OptimizerHook)
                return self._ddp(batch, mode)
        step = self._steps.get(mode)
        if step is None:  # resolved once per run (see _running), not every iteration
            step = self._steps[mode] = make_step(self.model, self.loss_fn, mode)
        return step(batch)

    def _should_stop(self) -> bool:
        """After an iteration: stop on ``stop_training``, or checkpoint and exit on a signal."""
        signalled = self._stop is not None and self._stop.signum is not None
        if self._stop_group is not None:
            signalled = distributed.any_rank(signalled, self._stop_group)
        if signalled:
            signum = self._stop.signum or 15
            path = self.save_checkpoint(f"iter_{self.iter}.pth")
            epoch, batch, _ = self._position
            where = (f"epoch {epoch + 1}, batch {batch}, iteration {self.iter}"
                     if self.max_epochs is not None else f"iteration {self.iter}")
            raise TrainingInterrupted(signum, path, (
                f"stopped by {self._stop.name or 'a signal on another rank'} at {where}; "
                f"checkpoint saved to {path}. Resume with resume='auto' "
                f"(hookline train ... --resume auto) or resume='{path}'"))
        return self.stop_training

    # -- checkpoints ------------------------------------------------------------------
    def save_checkpoint(self, path: str | Path, *, save_optimizer: bool = True,
                        background: bool = False) -> Path:
        """Write the run's state to ``path`` (relative paths go in ``work_dir``) atomically.

        The state is serialised at once. With ``background=True`` the file is
        then written and fsynced by a writer thread while training goes on
        (in order with other background writes; ``flush_checkpoints()`` waits,
        and the Runner flushes before it loads a checkpoint and when a run
        ends). Multi-process runs always write in the foreground, so every
        rank finds the file after the barrier that follows a save.
        """
        path = Path(path)
        if not path.is_absolute() and path.parent == Path("."):
            path = self.work_dir / path
        checkpoint = state.collect(self, save_optimizer=save_optimizer)
        self.hooks.call(self, "before_save_checkpoint", checkpoint=checkpoint)
        if self.rank == 0:
            payload = serialize(checkpoint)
            if background and self.world_size == 1:
                self._writer.write(path, payload)
            else:
                self._writer.flush()
                write_now(path, payload)
        distributed.barrier()
        return path

    def remove_checkpoint(self, path: str | Path) -> None:
        """Delete a checkpoint file (main process only), after every pending background write."""
        if self.rank == 0:
            self._writer.remove(Path(path))

    def flush_checkpoints(self) -> None:
        """Wait for background checkpoint writes; re-raise the first failure."""
        self._writer.flush()

    def load_checkpoint(self, path: str | Path, resume: bool = True, *,
                        checkpoint: dict | None = None) -> dict:
        """Load ``path``: the whole run when ``resume``, else the weights only."""
        if checkpoint is None:
            self._writer.flush()
            checkpoint = load_checkpoint_file(path, map_location="cpu")
        self.hooks.call(self, "after_load_checkpoint", checkpoint=checkpoint)
        state.apply(self, checkpoint, resume=resume, strict=resume)
        what = "resumed" if resume else "loaded weights"
        self.logger.info("%s from %s (epoch %d, iter %d)", what, path,
                         checkpoint["meta"]["epoch"], checkpoint["meta"]["iter"])
        return checkpoint

    def _load_or_resume(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._resume == "auto":
            found = find_resumable(self.work_dir, logger=self.logger)
            if found is None:
                self.logger.info("resume='auto': no checkpoint in %s, starting fresh",
                                 self.work_dir)
            else:
                self.load_checkpoint(found[0], checkpoint=found[1])
        elif self._resume is not None:
            self.load_checkpoint(self._resume)
        elif self._load_from is not None:
            self.load_checkpoint(self._load_from, resume=False)

    # -- info ----------------------------------------------------------------------------
    @property
    def is_main_process(self) -> bool:
        return self.rank == 0

    def __repr__(self) -> str:
        length = f"max_epochs={self.max_epochs}" if self.max_epochs else f"max_iters={self.max_iters}"
        return f"<Runner {type(self.model).__name__} {length} epoch={self.epoch} iter={self.iter}>"
