"""Register torch module and tensor hooks as hookline handles: filters, named errors, exact undo.

Every torch hook hookline registers (``HookManager``'s and every inspect
tool's) goes through here, and gets:

* **hookline's filters**: ``every=N``, ``once=True`` and ``when=predicate``
  with their meaning on ``Event``, counted per module (or tensor): a
  registration on ``nn.Linear`` with ``every=2`` runs on every second call
  of each Linear. A call held back by a filter returns None, so torch keeps
  the value it had;
* **named errors**: an exception in the hook reaches the caller of
  ``forward``/``backward`` as a :class:`~hookline.core.HookError` naming the
  hook and the hook point ``<module name>.<kind>`` (``layer1.0.conv1.backward``),
  with the original as ``__cause__``;
* **in-place-safe backward hooks**: ``"backward"`` and ``"backward_pre"``
  are hookline's own implementation of torch's full backward hooks
  (:mod:`hookline.inspect._backward`), which works with in-place ops;
* **exact undo**: torch's ``RemovableHandle.remove()`` leaves a tensor's
  ``_backward_hooks`` / ``_post_accumulate_grad_hooks`` an empty dict where it
  was ``None``; the handles made here put ``None`` back, so after ``remove()``
  a module or tensor is as it was before hookline touched it.

Registration and removal hold one lock (torch's ``RemovableHandle`` takes its
id from a class-level counter, not atomically); hook calls take none.

Example::

    >>> import torch
    >>> from hookline.inspect._register import hook_module
    >>> lin = torch.nn.Linear(2, 2)
    >>> with hook_module(lin, lambda m, args, out: out * 0, "forward", every=2):
    ...     [float(lin(torch.ones(1, 2)).detach().abs().sum()) == 0 for _ in range(4)]
    [False, True, False, True]
    >>> len(lin._forward_hooks)
    0
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError, HookError, HookHandle
from hookline.core.event import SKIP, filtered
from hookline.core.event import check_options as check_filters

from ._backward import add_backward_hook

#: kind -> (torch method, keyword options that method accepts)
MODULE_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "forward": ("register_forward_hook", ("prepend", "with_kwargs", "always_call")),
    "forward_pre": ("register_forward_pre_hook", ("prepend", "with_kwargs")),
    "backward": ("hookline.inspect._backward", ("prepend",)),
    "backward_pre": ("hookline.inspect._backward", ("prepend",)),
}
#: kind -> (tensor method, tensor attribute holding its hooks)
TENSOR_KINDS: dict[str, tuple[str, str]] = {
    "tensor": ("register_hook", "_backward_hooks"),
    "post_accumulate_grad": ("register_post_accumulate_grad_hook", "_post_accumulate_grad_hooks"),
}
KINDS: tuple[str, ...] = (*MODULE_KINDS, *TENSOR_KINDS)
#: hookline's filters, accepted by every kind
FILTERS = ("every", "once", "when")


class _Marks:
    """Objects (by identity, weakly held) whose hook state hookline created."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def add(self, obj: Any) -> None:
        key = id(obj)

        def forget(_ref: weakref.ref[Any]) -> None:
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(obj, forget)

    def pop(self, obj: Any) -> bool:
        ref = self._refs.get(id(obj))
        if ref is None or ref() is not obj:
            return False
        del self._refs[id(obj)]
        return True


_created_dicts = _Marks()      # tensor hook dicts that were None before hookline
_LOCK = threading.RLock()


def check_kind(kind: str) -> None:
    """Raise :class:`ConfigError` unless ``kind`` is a known hook kind."""
    if kind not in KINDS:
        raise ConfigError.unknown("hook kind", kind, KINDS)


def check_options(kind: str, options: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` for an option torch does not take for ``kind`` (filters aside)."""
    accepted = MODULE_KINDS[kind][1] if kind in MODULE_KINDS else ()
    for option in options:
        if option not in accepted:
            if option == "prepend":
                raise ConfigError(f"hook kind {kind!r} cannot prepend: torch runs tensor hooks in "
                                  "registration order (options for it: every, once, when)")
            raise ConfigError.unknown(f"option for hook kind {kind!r}", option, (*accepted, *FILTERS))


def guarded(fn: Callable[..., Any], point: str, *, every: int = 1, once: bool = False,
            when: Callable[..., Any] | None = None, remove: Callable[[], None] = lambda: None,
            report_as: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``fn`` as torch should call it: filtered (None when held back), errors as :class:`HookError`.

    ``point`` names the hook point in the error (``"layer1.conv1.forward"``);
    ``remove`` is what ``once=True`` calls before the one call; ``report_as``
    is the callable the error names (default ``fn``: a tool's adapter names
    the user's function).
    """
    check_filters(once, every, when)
    return _Guarded(filtered(fn, once, every, when, remove), point,
                    fn if report_as is None else report_as)


class _Guarded:
    """What :func:`guarded` returns: an object, not a closure, so that a model whose hooks are
    plain module-level functions can still be pickled (``torch.save(model)``), as with
    torch's own hooks."""

    __slots__ = ("call", "point", "__hookline_fn__")

    def __init__(self, call: Callable[..., Any], point: str, named: Callable[..., Any]) -> None:
        self.call = call
        self.point = point
        self.__hookline_fn__ = named  # read back by hook_of(): errors name the user's hook

    def __call__(self, *args: Any) -> Any:
        try:
            result = self.call(*args)
        except HookError:
            raise
        except Exception as exc:
            raise HookError(self.__hookline_fn__, self.point, exc) from exc
        return None if result is SKIP else result


def _delayed_remover() -> tuple[list[Callable[[], None]], Callable[[], None]]:
    """A remover to hand to ``once`` before the real one exists: ``slot[0]`` is filled in later."""
    slot: list[Callable[[], None]] = []
    return slot, lambda: slot[0]() if slot else None


def hook_module(module: nn.Module, fn: Callable, kind: str = "forward", name: str = "", *,
                every: int = 1, once: bool = False, when: Callable[..., Any] | None = None,
                on_removed: Callable[[], None] | None = None, report_as: Callable[..., Any] | None = None,
                **options: Any) -> HookHandle:
    """Register ``fn`` on ``module`` for ``kind``; returns a handle.

    ``every``/``once``/``when`` are hookline's filters; ``options`` are
    torch's own (``prepend``, ``with_kwargs``, ``always_call``).
    ``on_removed`` is called after the hook comes off (by the handle or by
    ``once``); ``report_as`` is the callable errors name (default ``fn``).
    """
    check_kind(kind)
    if kind not in MODULE_KINDS:
        raise ConfigError(f"hook kind {kind!r} needs a tensor, got a {type(module).__name__} module")
    if isinstance(module, torch.jit.ScriptModule):
        raise ConfigError(f"{name or type(module).__name__} is a ScriptModule (torch.jit.script), "
                          "which torch cannot hook: hook the eager module before scripting it "
                          "(summary() reads scripted models)")
    check_options(kind, options)
    point = f"{name or type(module).__name__}.{kind}"
    slot, remove_once = _delayed_remover()
    hook = guarded(fn, point, every=every, once=once, when=when, remove=remove_once, report_as=report_as)
    with _LOCK:
        if kind in ("backward", "backward_pre"):
            remove_torch = add_backward_hook(module, kind, hook, bool(options.get("prepend", False)), point)
        else:
            remove_torch = getattr(module, MODULE_KINDS[kind][0])(hook, **options).remove

    def remover() -> None:
        with _LOCK:
            remove_torch()
        if on_removed is not None:
            on_removed()

    handle = HookHandle(remover, fn if report_as is None else report_as, point)
    slot.append(handle.remove)
    return handle


def hook_tensor(tensor: torch.Tensor, fn: Callable, kind: str = "tensor", name: str = "", *,
                every: int = 1, once: bool = False, when: Callable[..., Any] | None = None,
                on_removed: Callable[[], None] | None = None) -> HookHandle:
    """Register ``fn`` on ``tensor`` (``Tensor.register_hook`` or the post-accumulate-grad hook)."""
    check_kind(kind)
    if kind not in TENSOR_KINDS:
        raise ConfigError(f"hook kind {kind!r} needs a module, got a tensor")
    if not isinstance(tensor, torch.Tensor):
        raise ConfigError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise ConfigError(f"cannot hook tensor {name or tuple(tensor.shape)}: it does not require grad")
    method, attr = TENSOR_KINDS[kind]
    if kind == "post_accumulate_grad" and tensor.grad_fn is not None:
        raise ConfigError(f"hook kind 'post_accumulate_grad' needs a leaf tensor (a parameter); "
                          f"{name or 'this tensor'} has grad_fn {type(tensor.grad_fn).__name__}")
    point = f"{name or 'tensor'}.{kind}"
    slot, remove_once = _delayed_remover()
    hook = guarded(fn, point, every=every, once=once, when=when, remove=remove_once)
    with _LOCK:
        was_none = getattr(tensor, attr) is None
        handle = getattr(tensor, method)(hook)
        if was_none:
            _created_dicts.add(getattr(tensor, attr))
    tensor_ref = weakref.ref(tensor)

    def remover() -> None:
        with _LOCK:
            handle.remove()
            live = tensor_ref()
            hooks = getattr(live, attr) if live is not None else None
            if hooks is not None and not hooks and _created_dicts.pop(hooks):
                setattr(live, attr, None)
        if on_removed is not None:
            on_removed()

    result = HookHandle(remover, fn, point)
    slot.append(result.remove)
    return result
