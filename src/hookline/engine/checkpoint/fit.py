"""Whether a loaded checkpoint fits a run: checked before anything of the run changes.

:func:`check_fits` compares a checkpoint with a Runner and raises
:class:`~hookline.engine.checkpoint.CheckpointError` naming the file and the
first thing that does not fit: no ``state_dict``, another model (keys that
differ), weights of other shapes, a ``meta`` position that is not a count, a
batch beyond this run's epoch, an optimizer with other parameter groups, or
another number of parameter schedulers. What can only be checked by applying
it (the RNG state, each hook's state) is applied by
:func:`~hookline.engine.checkpoint.run.apply` with an undo.

Example::

    >>> import torch
    >>> from hookline.engine.checkpoint.fit import weights_problem
    >>> model = torch.nn.Linear(4, 2)
    >>> weights_problem(model, {"weight": torch.zeros(2, 3), "bias": torch.zeros(2)}, strict=True)
    "state_dict['weight'] has shape [2, 3]; this run's model has [2, 4]"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..schedulers_per_optimizer import scheduler_pairs
from .errors import CheckpointError

if TYPE_CHECKING:  # pragma: no cover
    from ..runner import Runner


def _names(keys: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def weights_problem(model: torch.nn.Module, weights: Any, *, strict: bool) -> str | None:
    """What keeps ``weights`` (a checkpoint's ``state_dict``) from loading into ``model``, or None.

    ``strict``: the keys and shapes must be the model's exactly (resuming);
    otherwise missing and extra keys, and weights of another shape (a new
    head when fine-tuning: :func:`other_shapes`, skipped with a warning, as
    MMEngine does) are allowed, but at least one weight must fit.
    """
    if weights is None:
        return "it has no 'state_dict' (the model's weights)"
    if not isinstance(weights, Mapping):
        return f"its 'state_dict' is a {type(weights).__name__}, not a dict of tensors"
    own = model.state_dict()
    for key, value in weights.items():
        if not isinstance(value, torch.Tensor) and isinstance(own.get(key), torch.Tensor):
            return f"state_dict[{key!r}] is a {type(value).__name__}, not a tensor"
    missing = [k for k in own if k not in weights]
    unexpected = [k for k in weights if k not in own]
    if strict and (missing or unexpected):
        parts = []
        if missing:
            parts.append(f"lacks {len(missing)} of this run's model's weights ({_names(missing)})")
        if unexpected:
            parts.append(f"has {len(unexpected)} weights this model does not ({_names(unexpected)})")
        return f"another model: its state_dict {' and '.join(parts)}"
    if own and weights and not strict and len(unexpected) == len(weights):
        return (f"another model: none of its {len(weights)} weights ({_names(unexpected)}) is one "
                "of this run's model")
    if not strict:
        reshaped = other_shapes(model, weights)
        if own and weights and len(unexpected) + len(reshaped) == len(weights):
            return (f"another model: none of its weights fits this run's model (other names: "
                    f"{_names(unexpected) or 'none'}; other shapes: {_names(reshaped)})")
        return None
    for key, value in weights.items():
        mine = own.get(key)
        if isinstance(mine, torch.Tensor) and isinstance(value, torch.Tensor) \
                and mine.shape != value.shape:
            return (f"state_dict[{key!r}] has shape {list(value.shape)}; this run's model has "
                    f"{list(mine.shape)}")
    return None


def other_shapes(model: torch.nn.Module, weights: Mapping[str, Any]) -> list[str]:
    """The keys of ``weights`` that ``model`` has with another shape."""
    own = model.state_dict()
    return [key for key, value in weights.items()
            if isinstance(value, torch.Tensor) and isinstance(own.get(key), torch.Tensor)
            and own[key].shape != value.shape]


#: key prefixes of wrappers around a model: raw DistributedDataParallel's ``module.`` and
#: ``torch.compile``'s ``_orig_mod.`` (OptimizedModule)
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")
_COMPILED = "_orig_mod."


def unwrapped_model(model: torch.nn.Module) -> torch.nn.Module:
    """The module inside ``torch.compile(model)``'s wrapper (``OptimizedModule``), else
    ``model``: what a checkpoint's ``state_dict`` is taken from, so its keys have no
    ``_orig_mod.`` prefix and load into the plain model.

    Example::

        >>> unwrapped_model(torch.nn.Linear(2, 1)).__class__.__name__
        'Linear'
    """
    inner = getattr(model, "_orig_mod", None)
    while type(model).__name__ == "OptimizedModule" and isinstance(inner, torch.nn.Module):
        model = inner
        inner = getattr(model, "_orig_mod", None)
    return model


def without_ddp_prefix(model: torch.nn.Module, checkpoint: Mapping[str, Any]
                       ) -> Mapping[str, Any]:
    """``checkpoint`` with its ``state_dict`` keys' wrapper prefixes made to match the model's.

    A checkpoint saved from a raw DistributedDataParallel wrapper (``module.``,
    as MMEngine's ``load_checkpoint`` strips) or from ``torch.compile(model)``
    (``_orig_mod.``) loads into the plain model, and a plain checkpoint into a
    compiled one; keys that every checkpoint key and every model key share
    (a submodule called ``module``) are left alone. Unchanged: ``checkpoint`` itself.

    Example::

        >>> ckpt = {"state_dict": {"module.weight": torch.zeros(2, 4), "module.bias": torch.zeros(2)}}
        >>> sorted(without_ddp_prefix(torch.nn.Linear(4, 2), ckpt)["state_dict"])
        ['bias', 'weight']
        >>> ckpt = {"state_dict": {"_orig_mod.weight": torch.zeros(2, 4), "_orig_mod.bias": torch.zeros(2)}}
        >>> sorted(without_ddp_prefix(torch.nn.Linear(4, 2), ckpt)["state_dict"])
        ['bias', 'weight']
    """
    weights = checkpoint.get("state_dict")
    if not isinstance(weights, Mapping) or not weights or not all(
            isinstance(key, str) for key in weights):
        return checkpoint
    own = list(model.state_dict())
    keys = list(weights)
    while True:  # cut the wrappers' prefixes that every saved key has and the model's do not
        cut = next((p for p in _WRAPPER_PREFIXES if all(k.startswith(p) for k in keys)
                    and not (own and all(k.startswith(p) for k in own))), None)
        if cut is None:
            break
        keys = [key[len(cut):] for key in keys]
    if own and all(k.startswith(_COMPILED) for k in own) and not all(
            k.startswith(_COMPILED) for k in keys):  # into torch.compile(model)
        keys = [_COMPILED + key for key in keys]
    if keys == list(weights):
        return checkpoint
    revised = dict(checkpoint)
    revised["state_dict"] = dict(zip(keys, weights.values()))
    return revised


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def meta_problem(meta: Mapping[str, Any], *, by_epoch: bool, epoch_length: int | None
                 ) -> str | None:
    """What makes a checkpoint's ``meta`` unusable as a resume point, or None.

    In an epoch-based run, ``batch`` must lie within ``epoch_length`` (the run's loader),
    unless ``meta`` says the checkpoint's epoch ran on a loader of another length
    (``epoch_length``: a hook switches loaders in ``before_train_epoch``); then the train loop
    checks it when the resumed epoch starts, against the loader it runs. In an
    iteration-based run (``by_epoch=False``) it counts the batches of the pass over the data
    in progress, which may go past ``len(train_dataloader)`` (an endless sampler such as
    MMEngine's ``InfiniteSampler``), never past ``iter``.

    Example::

        >>> meta_problem({"epoch": 1, "iter": "90"}, by_epoch=True, epoch_length=45)
        "meta['iter'] is '90', not a count (an int >= 0)"
    """
    for key in ("epoch", "iter", "batch"):
        if (key in meta or key != "batch") and not _count(meta.get(key)):
            return f"meta[{key!r}] is {meta.get(key)!r}, not a count (an int >= 0)"
    for key in ("stop_training", "val_pending", "val_computed"):  # absent in older files
        if key in meta and not isinstance(meta[key], bool):
            return f"meta[{key!r}] is {meta[key]!r}, not True or False"
    if "epoch_length" in meta and meta["epoch_length"] is not None \
            and not _count(meta["epoch_length"]):
        return f"meta['epoch_length'] is {meta['epoch_length']!r}, not a count (an int >= 0)"
    batch = meta.get("batch", 0)
    if not by_epoch:  # batches done of the pass over the data in progress, which may go
        # past len(train_dataloader) (an endless sampler: one pass for the whole run)
        if batch > meta["iter"]:
            return (f"it says {batch} batches of the pass over the data in progress were done "
                    f"at iteration {meta['iter']}, more than the run's iterations (a damaged "
                    "meta?)")
        return None
    saved_length = meta.get("epoch_length")
    if saved_length is not None and batch > saved_length:
        return (f"it stopped after batch {batch} of an epoch whose train_dataloader has "
                f"{saved_length} batches (len()): its sampler yields more (an endless sampler "
                "such as InfiniteSampler never ends an epoch: train by iterations, max_iters=, "
                "instead), or the meta is damaged")
    if saved_length is not None and saved_length != epoch_length:
        return None  # its epoch ran on another loader (switched in before_train_epoch): the
        # train loop checks the batch against the loader of the resumed epoch, when it starts
    if by_epoch and epoch_length is not None and batch > epoch_length:
        return (f"it stopped after batch {batch} of an epoch, and this run's epochs have "
                f"{epoch_length} batches (another data set or batch size?)")
    return None


def optimizer_layout(state: Any) -> Any:
    """Parameters per group of an optimizer state dict (a dict of them for several optimizers);
    None when ``state`` is not one.

    Example::

        >>> optimizer = torch.optim.SGD([{"params": [torch.zeros(1)]},
        ...                              {"params": [torch.zeros(1), torch.zeros(2)]}], lr=0.1)
        >>> optimizer_layout(optimizer.state_dict())
        (1, 2)
    """
    if not isinstance(state, Mapping):
        return None
    if "param_groups" in state:
        groups = state["param_groups"]
        if not isinstance(state.get("state"), Mapping) or not isinstance(groups, (list, tuple)) \
                or not all(isinstance(g, Mapping) and isinstance(g.get("params"), (list, tuple))
                           for g in groups):
            return None
        return tuple(len(g["params"]) for g in groups)
    layout = {name: optimizer_layout(inner) for name, inner in state.items()}
    return None if any(v is None for v in layout.values()) or not layout else layout


#: param-group keys torch adds or fills in itself across versions and optimizers (flags), and
#: those schedulers and hookline add: they say nothing about which optimizer wrote a state
_GROUP_FLAGS = frozenset({"params", "lr", "weight_decay", "foreach", "maximize", "capturable",
                          "differentiable", "fused", "decoupled_weight_decay", "nesterov",
                          "initial_lr", "hookline_lr_ratio"})


def _settings(state: Any) -> Any:
    """The hyperparameter names of an optimizer state dict's groups, flags left out (a dict of
    them for several optimizers): SGD's ``momentum``, ``dampening``; Adam's ``betas``, ``eps`` ...

    Example::

        >>> params = [torch.zeros(1)]
        >>> sorted(_settings(torch.optim.SGD(params, lr=0.1).state_dict()))
        ['dampening', 'momentum']
    """
    if "param_groups" in state:
        return frozenset(key for group in state["param_groups"] for key in group) - _GROUP_FLAGS
    return {name: _settings(inner) for name, inner in state.items()}


def _settings_problem(theirs: Any, ours: Any, name: str = "") -> str | None:
    if isinstance(theirs, dict) and isinstance(ours, dict):
        for key in ours:
            found = _settings_problem(theirs.get(key, frozenset()), ours[key], f"{key!r}: ")
            if found:
                return found
        return None
    if theirs == ours:
        return None
    return (f"{name}another optimizer: the checkpoint's holds {', '.join(sorted(theirs)) or 'no'} "
            f"settings, this run's optimizer takes {', '.join(sorted(ours)) or 'none of them'} "
            "(resume with the optimizer the run was saved with, or load the weights only: "
            "load_from=)")


def _describe_layout(layout: Any) -> str:
    if isinstance(layout, tuple):
        groups = "group" if len(layout) == 1 else "groups"
        return f"{len(layout)} parameter {groups} of {', '.join(map(str, layout))} parameters"
    if isinstance(layout, dict):
        return "; ".join(f"{name!r}: {_describe_layout(inner)}" for name, inner in layout.items())
    return "a malformed state"


def optimization_problem(runner: Runner, checkpoint: Mapping[str, Any]) -> str | None:
    """Whether the checkpoint's optimizer and scheduler states fit the run's, or None."""
    wrapper = runner.optim_wrapper
    if wrapper is None or "optimizer" not in checkpoint:
        return None
    theirs, ours = optimizer_layout(checkpoint["optimizer"]), optimizer_layout(wrapper.state_dict())
    if theirs is None:
        return "its 'optimizer' is not an optimizer state dict (no 'state' / 'param_groups')"
    if theirs != ours:
        return (f"another optimizer layout: the checkpoint's has {_describe_layout(theirs)}, "
                f"this run's {_describe_layout(ours)}")
    settings = _settings_problem(_settings(checkpoint["optimizer"]), _settings(wrapper.state_dict()))
    if settings:
        return settings
    schedulers = checkpoint.get("param_schedulers", [])
    if not isinstance(schedulers, (list, tuple)) or not all(isinstance(s, Mapping)
                                                            for s in schedulers):
        return "its 'param_schedulers' is not a list of scheduler state dicts"
    count = len(scheduler_pairs(runner.param_schedulers))  # a dict by optimizer name too
    if len(schedulers) != count:
        return (f"it holds {len(schedulers)} parameter scheduler state(s); this run has "
                f"{count} scheduler(s)")
    return None


def _containers_problem(checkpoint: Mapping[str, Any]) -> str | None:
    """``hooks`` must map state keys to dicts, ``rng`` must be a dict (their insides are
    checked by applying them, with an undo)."""
    hooks = checkpoint.get("hooks", {})
    if not isinstance(hooks, Mapping) or not all(isinstance(k, str) and isinstance(v, Mapping)
                                                  for k, v in hooks.items()):
        return "its 'hooks' is not a dict of hook states (state key -> dict)"
    if "rng" in checkpoint and not isinstance(checkpoint["rng"], Mapping):
        return f"its 'rng' is a {type(checkpoint['rng']).__name__}, not a dict of RNG states"
    return None


def check_fits(runner: Runner, checkpoint: Mapping[str, Any], path: str | Path, *,
               resume: bool, strict: bool = True) -> None:
    """Raise :class:`CheckpointError` naming ``path`` and what does not fit, if anything.

    ``resume``: the whole run is to be taken from the checkpoint (weights with
    ``strict`` keys, position, optimizer, schedulers); otherwise only weights.
    """
    problem = weights_problem(runner.model, checkpoint.get("state_dict"), strict=strict)
    if problem is None and resume:
        loop = runner.train_loop
        meta = checkpoint.get("meta", {})
        problem = meta_problem(meta, by_epoch=runner.by_epoch,
                               epoch_length=loop.epoch_length if loop is not None else None)
        if problem is None:
            problem = optimization_problem(runner, checkpoint)
        if problem is None:
            problem = _containers_problem(checkpoint)
    if problem is not None:
        raise CheckpointError(path, f"does not fit this run: {problem}")
