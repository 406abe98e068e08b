"""The short header a Runner logs when ``train()`` starts: model, parameters, device and
precision, data sizes and where the outputs go; the hook table goes to ``log.txt`` only.

Everything is read from the Runner's public attributes.

Example::

    >>> import tempfile, torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline.engine import Runner
    >>> from hookline.engine.run_header import run_header
    >>> data = TensorDataset(torch.randn(40, 4), torch.randint(0, 2, (40,)))
    >>> runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, device="cpu",
    ...                 train_dataloader=DataLoader(data, batch_size=8),
    ...                 work_dir=tempfile.mkdtemp(), default_hooks={"logger": None})
    >>> print("\\n".join(run_header(runner)[:3]))
    model: Linear, 10 parameters (10 trainable); cpu, float32
    data: train 40 samples, 5 batches per epoch; val none; test none
    batches: train fast path (indexing a TensorDataset); val none; test none
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import IterableDataset

from .amp_optim_wrapper import AmpOptimWrapper
from .data import loader_length
from .fast_batches import data_path
from .logs import FILE_ONLY
from .schedulers_per_optimizer import scheduler_pairs

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def human_count(number: int) -> str:
    """``12345`` -> ``'12.3 K'`` (K, M, B, T; plain below 1,000), as Lightning's summary.

    >>> human_count(999), human_count(12_345), human_count(3_400_000), human_count(999_999)
    ('999', '12.3 K', '3.4 M', '1.0 M')
    """
    if number < 1000:
        return str(number)
    value = float(number)
    for unit in ("K", "M", "B"):
        value /= 1000
        if round(value, 1) < 1000:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} T"


def _parameters(model: torch.nn.Module) -> str:
    params = list(model.parameters())
    if any(torch.nn.parameter.is_lazy(p) for p in params):
        return "parameters not yet known (lazy modules)"
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    return f"{human_count(total)} parameters ({human_count(trainable)} trainable)"


def _precision(runner: Runner) -> str:
    wrapper: Any = runner.optim_wrapper
    wrappers = list(wrapper.values()) if hasattr(wrapper, "values") else [wrapper]
    amp = sorted({str(w.dtype).removeprefix("torch.") for w in wrappers
                  if isinstance(w, AmpOptimWrapper)})
    if amp:
        return "AMP " + "/".join(amp)
    dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in runner.model.parameters()
                     if p.is_floating_point()})
    return "/".join(dtypes) or str(torch.get_default_dtype()).removeprefix("torch.")


def _samples(loader: Any) -> str:
    if loader is None:
        return "none"
    dataset = getattr(loader, "dataset", None)
    try:
        return f"{len(dataset)} samples"  # type: ignore[arg-type]
    except TypeError:  # no dataset, or an iterable one without a length
        return "size unknown" + (" (IterableDataset)" if isinstance(dataset, IterableDataset)
                                 else "")


def schedulers_line(schedulers: Any) -> str | None:
    """``schedulers: LambdaLR steps per epoch, ...`` for the run's parameter schedulers
    (None without any), with how to make an epoch-stepped one step every iteration.

    Example::

        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
        >>> warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
        >>> schedulers_line([warmup]).split(" (")[0]
        'schedulers: LambdaLR steps per epoch'
        >>> warmup.by_epoch = False
        >>> schedulers_line([warmup])
        'schedulers: LambdaLR steps per iteration'
    """
    pairs = scheduler_pairs(schedulers)
    if not pairs:
        return None
    line = "schedulers: " + ", ".join(
        f"{type(s).__name__} steps per {'epoch' if by_epoch else 'iteration'}"
        for s, by_epoch in pairs)
    if any(by_epoch for _, by_epoch in pairs):
        line += (" (a scheduler object steps per epoch unless it has by_epoch = False; "
                 "a config: 'by_epoch': False)")
    return line


def run_header(runner: Runner) -> list[str]:
    """The header lines: model and parameters; device and precision; dataset sizes and
    batches per epoch; how each loader's batches are made (the fast path or the
    DataLoader's iterator, and why); the parameter schedulers and whether each steps
    per epoch or per iteration (when there are any); work_dir."""
    device = str(runner.device)
    if runner.world_size > 1:
        device += f" x {runner.world_size} processes"
    length = loader_length(runner.train_dataloader)
    batches = "batches per epoch unknown" if length is None else f"{length} batches per epoch"
    lines = [
        f"model: {type(runner.model).__name__}, {_parameters(runner.model)}; "
        f"{device}, {_precision(runner)}",
        f"data: train {_samples(runner.train_dataloader)}, {batches}; "
        f"val {_samples(runner.val_dataloader)}; test {_samples(runner.test_dataloader)}",
        "batches: " + "; ".join(
            f"{mode} {data_path(loader, enabled=runner.fast_data, device=runner.device).describe()}"
            for mode, loader in (("train", runner.train_dataloader),
                                 ("val", runner.val_dataloader), ("test", runner.test_dataloader))),
    ]
    schedulers = schedulers_line(runner.param_schedulers)
    if schedulers is not None:
        lines.append(schedulers)
    return [*lines, f"work_dir: {runner.work_dir}"]


def log_run_header(runner: Runner) -> None:
    """Log :func:`run_header` (console and ``log.txt``) and the hook table (``log.txt`` only;
    ``hookline hooks CONFIG`` prints it)."""
    for line in run_header(runner):
        runner.logger.info("%s", line)
    runner.logger.info("hooks by stage:\n%s", runner.hook_table(), extra=FILE_ONLY)
