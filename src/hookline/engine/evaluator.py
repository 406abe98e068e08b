"""Validation and test metrics: exact over the whole epoch, reduced across ranks.

``metrics`` maps a name to ``callable(preds, targets)`` (computed once on
the predictions of the whole epoch, so any metric is exact) or to a
torchmetrics ``Metric`` (updated per batch, computed at the end). A
``loss`` entry in the step outputs is averaged over samples.

A step may instead return a list of data samples (MMEngine's ``val_step``):
each metric is then called once with every sample of the epoch (gathered
from all ranks, in dataset order) and returns a number or a dict of numbers.

What a metric returns reaches the hooks as MMEngine passes it on: numbers
as Python numbers (an int stays an int; a one-element tensor or NumPy
array becomes its number), a larger tensor or array as a nested list,
strings, lists and dicts as they are, and ``None`` dropped. Two metrics
reporting the same key, or a metric reporting a key the step's outputs
average (``loss``), is a :class:`ConfigError` naming both.

Example::

    >>> import torch
    >>> from hookline.engine.evaluator import Evaluator
    >>> from hookline.engine.metrics import accuracy
    >>> ev = Evaluator({"acc": accuracy})
    >>> ev.process({"preds": torch.tensor([[0.1, 0.9], [0.8, 0.2]]), "targets": torch.tensor([1, 1]),
    ...             "loss": torch.tensor(0.5)})
    >>> ev.compute()
    {'loss': 0.5, 'acc': 0.5}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from hookline.core import ConfigError

from . import distributed
from .message_hub import plain_number
from .metric_values import STEP_SOURCE, add_result
from .metrics import is_torchmetric

#: (trailing shape, dtype) of the collected predictions, and of the targets
_Layout = tuple[tuple[tuple[int, ...], torch.dtype], tuple[tuple[int, ...], torch.dtype]]


class Evaluator:
    """Accumulates one epoch of step outputs and turns them into metrics.

    ``metrics`` is MMEngine's: the list of metric objects, in the order given
    (a hook may set a flag on ``runner.val_evaluator.metrics[0]``);
    ``named_metrics`` maps each name to its metric.

    Example::

        >>> from hookline.engine.metrics import accuracy, mse
        >>> evaluator = Evaluator({"acc": accuracy, "mse": mse})
        >>> evaluator.metrics[0] is accuracy, list(evaluator.named_metrics)
        (True, ['acc', 'mse'])
    """

    def __init__(self, metrics: Mapping[str, Any]) -> None:
        #: name -> metric callable or torchmetrics metric
        self.named_metrics: dict[str, Any] = dict(metrics)
        #: the metrics as MMEngine's ``Evaluator.metrics`` lists them
        self.metrics: list[Any] = list(self.named_metrics.values())
        #: True when the latest :meth:`compute` found no data on any rank (see there)
        self.processed_nothing = False
        self.reset()

    def reset(self) -> None:
        self._preds: list[torch.Tensor] = []
        self._targets: list[torch.Tensor] = []
        self._sums: dict[str, torch.Tensor] = {}
        self._count = 0
        #: data samples of steps that return lists (MMEngine's ``val_step``)
        self._samples: list[Any] = []
        for metric in self.metrics:
            if is_torchmetric(metric):
                metric.reset()

    def process(self, outputs: Mapping[str, Any] | Sequence[Any] | None = None,
                data_batch: Any = None, *, data_samples: Sequence[Any] | None = None) -> None:
        """Take one batch's outputs (``preds``, ``targets`` and scalar entries), or its list
        of data samples (MMEngine's call, ``process(data_samples=..., data_batch=...)``, too).

        Scalar entries are weighted by the batch's size: the length of ``targets``, else of
        ``preds``, else of ``data_batch``'s first tensor, else 1. With metrics, the outputs
        must hold ``preds`` and ``targets`` (or Hugging Face's names ``logits`` and
        ``labels``, used when the first name is absent); a :class:`ConfigError` otherwise.

            >>> ev = Evaluator({"n": lambda samples: len(samples)})
            >>> ev.process(data_samples=[{"ok": 1}, {"ok": 0}], data_batch=None)
            >>> ev.evaluate(2)
            {'n': 2}
        """
        if data_samples is not None:
            if outputs is not None:
                raise TypeError("Evaluator.process() got both outputs and data_samples: "
                                "give one (they are the same argument)")
            outputs = data_samples
        if outputs is None:
            raise TypeError("Evaluator.process() needs the batch's outputs: a dict, or a list "
                            "of data samples (data_samples=)")
        if not isinstance(outputs, Mapping):
            if not isinstance(outputs, (list, tuple)):
                raise TypeError(f"a validation or test step must return a dict or a list of "
                                f"data samples, got {type(outputs).__name__}")
            self._samples.extend(outputs)
            return
        preds, targets = outputs.get("preds"), outputs.get("targets")
        skip: tuple[str, ...] = ("preds", "targets")
        if self.named_metrics and (preds is None or targets is None):
            preds, targets, skip = self._metric_inputs(outputs)
        size = batch_size(targets, preds, data_batch)
        for key, value in outputs.items():
            if key in skip:
                continue
            if not isinstance(value, torch.Tensor):  # a Python or NumPy number counts too
                number = value if isinstance(value, (int, float)) and not isinstance(
                    value, bool) else plain_number(value)
                if number is None:
                    continue
                value = torch.tensor(float(number))
            elif value.numel() != 1:
                continue
            total = value.detach().double().reshape(()) * size
            self._sums[key] = self._sums[key] + total if key in self._sums else total
        self._count += size
        if preds is None or targets is None or not self.named_metrics:
            return
        for metric in self.metrics:
            if is_torchmetric(metric):
                metric.to(preds.device)
                metric.update(preds, targets)
        if any(not is_torchmetric(m) for m in self.metrics):
            if self._preds:
                self._check_same_layout(preds, targets)
            self._preds.append(preds.detach())
            self._targets.append(targets.detach())

    def _metric_inputs(self, outputs: Mapping[str, Any]) -> tuple[Any, Any, tuple[str, ...]]:
        """``(preds, targets, keys that are not scalars to average)`` of outputs that lack
        ``preds`` or ``targets``: Hugging Face's ``logits`` / ``labels`` stand in; a
        :class:`ConfigError` naming what is missing when they do not."""
        preds_key = "preds" if "preds" in outputs else "logits"
        targets_key = "targets" if "targets" in outputs else "labels"
        preds, targets = outputs.get(preds_key), outputs.get(targets_key)
        if preds is None or targets is None:
            missing = [name for name, value in (("preds", preds), ("targets", targets))
                       if value is None]
            raise ConfigError(
                f"metrics {list(self.named_metrics)} need 'preds' and 'targets' from every "
                f"validation/test batch, but the step returned keys {list(outputs)} (missing: "
                f"{' and '.join(repr(m) for m in missing)}). Return e.g. {{'loss': loss, "
                "'preds': logits, 'targets': batch['labels']} (Hugging Face's names 'logits' "
                "and 'labels' are accepted too), or drop metrics=")
        return preds, targets, ("preds", "targets", preds_key, targets_key)

    def _check_same_layout(self, preds: torch.Tensor, targets: torch.Tensor) -> None:
        """A :class:`ConfigError` when a batch's predictions cannot be concatenated with the
        first batch's (another shape after dim 0: e.g. sequences padded per batch)."""
        first_p, first_t = self._preds[0], self._targets[0]
        if preds.shape[1:] == first_p.shape[1:] and targets.shape[1:] == first_t.shape[1:]:
            return
        raise ConfigError(_layout_message(
            [name for name, m in self.named_metrics.items() if not is_torchmetric(m)],
            f"this batch's preds {tuple(preds.shape)} / targets {tuple(targets.shape)} and "
            f"the first batch's {tuple(first_p.shape)} / {tuple(first_t.shape)}"))

    def evaluate(self, size: int | None = None) -> dict[str, Any]:  # noqa: ARG002  (MMEngine's signature)
        """MMEngine's name: :meth:`compute` the metrics, then :meth:`reset` for the next
        pass (``size``, the dataset length, is not needed: every sample is counted once)."""
        metrics = self.compute()
        self.reset()
        return metrics

    def offline_evaluate(self, data_samples: Sequence[Any], data: Sequence[Any] | None = None,
                         chunk_size: int = 1) -> dict[str, Any]:
        """MMEngine's: the metrics of ``data_samples`` saved earlier (a model's predictions
        as data samples), processed ``chunk_size`` at a time (with the matching slices of
        ``data``, when given), as one evaluation pass would; this evaluator starts afresh.

            >>> Evaluator({"n": lambda samples: len(samples)}).offline_evaluate(
            ...     [{"ok": 1}, {"ok": 0}, {"ok": 1}], chunk_size=2)
            {'n': 3}
        """
        if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
            raise ConfigError(f"offline_evaluate chunk_size must be an int >= 1, got "
                              f"{chunk_size!r}")
        if data is not None and len(data) != len(data_samples):
            raise ConfigError(f"offline_evaluate: data has {len(data)} entries and "
                              f"data_samples {len(data_samples)}; give one per sample")
        self.reset()
        for start in range(0, len(data_samples), chunk_size):
            chunk = list(data_samples[start:start + chunk_size])
            self.process(data_samples=chunk, data_batch=None if data is None
                         else list(data[start:start + chunk_size]))
        return self.evaluate(len(data_samples))

    def compute(self) -> dict[str, Any]:
        """The epoch's metrics, reduced over ranks (one sync, at the end).

        Averaged step entries are floats; what metrics return is made plain
        (see the module's doc). On several ranks, scalar entries are summed with
        one all-reduce and predictions are all-gathered (shards may differ in
        length) and interleaved back into the order the strided shards were cut
        from (the dataset's order for an unshuffled loader), so metrics equal
        those of one process seeing the whole set, order included. A rank whose
        shard was empty still joins every collective. When no rank processed any
        data, no metric is called and :attr:`processed_nothing` is True.
        """
        results: dict[str, Any] = {}
        keys = sorted(self._sums)
        layout = _layout(self._preds, self._targets)
        has_samples = bool(self._samples)
        has_data = has_samples or self._count > 0
        if distributed.get_world_size() > 1:
            # which scalar keys and which prediction shapes exist on any rank
            everyone = distributed.all_gather_object((keys, layout, has_samples, has_data))
            keys = sorted({key for rank_keys, _, _, _ in everyone for key in rank_keys})
            layouts = {rank_layout for _, rank_layout, _, _ in everyone if rank_layout}
            if len(layouts) > 1:
                raise ConfigError(_layout_message(
                    [n for n, m in self.named_metrics.items() if not is_torchmetric(m)],
                    "the ranks' preds / targets (trailing shapes, dtypes) "
                    + ", ".join(str(one) for one in sorted(layouts, key=str))))
            layout = next((rank_layout for _, rank_layout, _, _ in everyone if rank_layout),
                          None)
            has_samples = any(flag for _, _, flag, _ in everyone)
            has_data = any(flag for _, _, _, flag in everyone)
        #: True when the latest :meth:`compute` found no data on any rank (no batch, or
        #: steps that returned no data samples): no metric was called
        self.processed_nothing = not has_data
        if not has_data:
            return results
        if has_samples:
            return self._compute_on_samples()
        sources: dict[str, str] = {}  # key -> who reported it, for the collision error
        if keys:
            device = self._sums[keys[0]].device if self._sums else distributed.collective_device()
            zero = torch.zeros((), dtype=torch.float64, device=device)
            count = torch.tensor(float(self._count), dtype=torch.float64, device=device)
            packed = torch.stack([self._sums.get(k, zero).to(device) for k in keys] + [count])
            packed = distributed.all_reduce_sum(packed)
            for key, value in zip(keys, (packed[:-1] / packed[-1]).tolist()):
                results[key] = value
                sources[key] = STEP_SOURCE
        preds = targets = None
        if layout is not None:
            preds = distributed.all_gather_interleave(_cat_or_empty(self._preds, *layout[0]))
            targets = distributed.all_gather_interleave(_cat_or_empty(self._targets, *layout[1]))
        for name, metric in self.named_metrics.items():
            if is_torchmetric(metric):
                value = metric.compute()
            elif preds is not None and targets is not None:  # both gathered, or neither
                value = _call_metric(name, metric, preds, targets)
            else:
                value = None
            add_result(results, sources, name, value)
        return results

    def _compute_on_samples(self) -> dict[str, Any]:
        samples = distributed.interleave(distributed.all_gather_object(self._samples))
        results: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name, metric in self.named_metrics.items():
            if is_torchmetric(metric):
                raise ConfigError(f"metric {name!r} is a torchmetrics metric, but the step returns "
                                  f"data samples: give a callable(samples) instead")
            try:
                value = metric(samples)
            except Exception as exc:
                raise RuntimeError(f"metric {name!r} failed on {len(samples)} data samples "
                                   f"(of types {_kinds(samples)}): {type(exc).__name__}: "
                                   f"{exc}") from exc
            add_result(results, sources, name, value)
        return results


def _kinds(samples: list[Any]) -> str:
    """The type names of ``samples``, at most three: ``dict`` / ``DetDataSample, dict``."""
    names = list(dict.fromkeys(type(s).__name__ for s in samples))
    return ", ".join(names[:3]) + (" ..." if len(names) > 3 else "") if names else "none"


def batch_size(targets: Any, preds: Any, data_batch: Any = None) -> int:
    """How many samples a batch holds: the length of ``targets``, else of ``preds``, else
    of the first tensor of ``data_batch`` (a tensor, or one in a dict, list or tuple), else 1.

    Example::

        >>> batch_size(None, None, {"input_ids": torch.zeros(3, 7, dtype=torch.long)})
        3
    """
    for value in (targets, preds):
        if isinstance(value, torch.Tensor) and value.dim():
            return len(value)
    values = (data_batch.values() if isinstance(data_batch, Mapping) else data_batch
              if isinstance(data_batch, (list, tuple)) else (data_batch,))
    for value in values:
        if isinstance(value, torch.Tensor):
            return len(value) if value.dim() else 1
    return 1


def _layout_message(names: list[str], shapes: str) -> str:
    """The error for predictions whose shapes differ between batches (or ranks)."""
    return (f"metrics {names} are computed once on the whole epoch's preds and targets, "
            f"concatenated along dim 0, but their shapes after dim 0 differ: {shapes}. "
            "Batches padded to their own length (variable-length sequences) do not "
            "concatenate; nothing is padded for you. Either flatten each batch in "
            "validation_step and drop the padding (e.g. keep = labels != -100; return "
            "{'preds': logits[keep], 'targets': labels[keep], ...}, shifted for a causal LM), "
            "or use a torchmetrics Metric, which accumulates per batch")


def _layout(preds: list[torch.Tensor], targets: list[torch.Tensor]) -> _Layout | None:
    """(trailing shape, dtype) of the collected predictions and targets, None if none."""
    if not preds:
        return None
    return ((tuple(preds[0].shape[1:]), preds[0].dtype),
            (tuple(targets[0].shape[1:]), targets[0].dtype))


def _cat_or_empty(chunks: list[torch.Tensor], shape: tuple[int, ...], dtype: torch.dtype
                  ) -> torch.Tensor:
    if chunks:
        return torch.cat(chunks)
    return torch.empty((0, *shape), dtype=dtype, device=distributed.collective_device())


def _call_metric(name: str, metric: Callable[..., Any], preds: torch.Tensor,
                 targets: torch.Tensor) -> Any:
    try:
        return metric(preds, targets)
    except Exception as exc:
        raise RuntimeError(f"metric {name!r} failed on preds {tuple(preds.shape)} and "
                           f"targets {tuple(targets.shape)}: {exc}") from exc
