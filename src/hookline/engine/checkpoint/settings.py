"""An optimizer's settings as a run configured them, and what a resume finds changed.

A checkpoint keeps the settings its run configured (``meta["optimizer_settings"]``); a
resume compares them with its own (:func:`changed_settings`) and says which differ, since
the optimizer is resumed as saved. The starting rate (``initial_lr``) stands for ``lr``, so
a rate a schedule or a callback moved is not taken for another configuration.

Example::

    >>> saved = optimizer_settings({"param_groups": [{"params": [0], "lr": 0.1}]})
    >>> changed_settings(saved, {"param_groups": [{"lr": 0.05}]})
    ['lr 0.1 (not 0.05)']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["changed_settings", "optimizer_settings"]


def optimizer_settings(state: Any) -> dict[str, Any]:
    """The settings of an optimizer's ``state_dict()`` (or of several, by name) as the run
    configured them: each group's numbers and flags, with the starting rate (``initial_lr``,
    where a scheduler set it) as ``lr``, so neither a schedule nor a callback that moved the
    rate since counts as another configuration.

        >>> optimizer_settings({"state": {}, "param_groups": [
        ...     {"params": [0], "lr": 0.01, "initial_lr": 0.1, "nesterov": False}]})
        {'param_groups': [{'lr': 0.1, 'nesterov': False}]}
    """
    if not isinstance(state, Mapping):
        return {}
    if "param_groups" not in state:  # several optimizers by name
        return {name: optimizer_settings(each) for name, each in state.items()
                if isinstance(each, Mapping)}
    groups = []
    for group in state["param_groups"]:
        settings = {k: v for k, v in group.items() if k not in ("params", "initial_lr")
                    and isinstance(v, (int, float, str, tuple, list)) or v is None}
        if isinstance(group.get("initial_lr"), (int, float)):
            settings["lr"] = group["initial_lr"]
        groups.append(settings)
    return {"param_groups": groups}


def changed_settings(saved: Any, current: Any, prefix: str = "") -> list[str]:
    """The optimizer settings (``lr``, ``momentum``, ``weight_decay`` ...) whose saved value
    differs from this run's before the resume: ``"lr 0.003 (not 0.1)"``. The starting rate
    (``initial_lr``) stands for ``lr`` when a scheduler moved it.

    Example::

        >>> saved = {"state": {}, "param_groups": [{"params": [0], "lr": 0.003, "momentum": 0.9}]}
        >>> now = {"state": {}, "param_groups": [{"params": [0], "lr": 0.1, "momentum": 0.9}]}
        >>> changed_settings(saved, now)
        ['lr 0.003 (not 0.1)']
    """
    if not isinstance(saved, Mapping) or not isinstance(current, Mapping):
        return []
    if "param_groups" not in saved:  # several optimizers by name
        return [line for name in saved if name in current
                for line in changed_settings(saved[name], current[name], f"{name}: ")]
    found: dict[str, str] = {}  # the first group where a setting differs names it
    for index, (theirs, ours) in enumerate(zip(saved["param_groups"], current["param_groups"])):
        group = f" (group {index})" if len(current["param_groups"]) > 1 else ""
        for key in sorted(set(theirs) & set(ours) - {"params", "initial_lr"} - set(found)):
            if key == "lr" and "initial_lr" in theirs and "initial_lr" in ours:
                was, now = theirs["initial_lr"], ours["initial_lr"]
            else:
                was, now = theirs[key], ours[key]
            if isinstance(now, (int, float, tuple, list)) and not isinstance(now, bool) \
                    and was != now:
                found[key] = f"{prefix}{key} {was} (not {now}){group}"
    return list(found.values())[:4]
