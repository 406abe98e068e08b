"""Module backward hooks that work when in-place ops follow the module, or run inside it.

torch's ``register_full_backward_hook`` passes a module's inputs and outputs
through ``BackwardHookFunction``, which returns them as they are. Autograd then
treats them as views made by a custom Function, and any in-place op on them
raises ("Output 0 of BackwardHookFunctionBackward is a view and is being
modified inplace", pytorch#61519): a ``ReLU(inplace=True)`` after a hooked
BatchNorm, ``out += identity`` after a hooked conv, or the hooked module being
an in-place ReLU itself. Most CNNs have such ops.

hookline keeps torch's contract, ``hook(module, grad_input, grad_output)`` and
``pre_hook(module, grad_output)`` with the same tuples, the same values and the
same replacement rules, and builds the two capture points differently:

* **Outputs.** A forward hook passes the module's output tensors through
  ``_Outputs``, an identity Function whose outputs are *aliases*: new tensors
  sharing the storage (and the version counter) of the originals, with the
  Function as their ``grad_fn``. They are not views, so later in-place ops are
  allowed and autograd records them on top of the alias. Its backward receives
  ``grad_output`` (the gradient with respect to the output as the module
  returned it, before any later in-place op), runs the backward pre-hooks
  (which may replace it), and stores it for the call.
* **Inputs.** A forward pre-hook passes the input tensors that require grad
  through ``_Inputs``, the same kind of identity. The module sees the
  aliases, so the gradient that reaches ``_Inputs`` in backward is the one
  that flowed through this module call only (not through other users of the
  same tensor): ``grad_input``. ``_Inputs.backward`` calls the hooks with it
  and the stored ``grad_output``, and returns what they return instead.
* **A module that changes its input in place** (``ReLU(inplace=True)``)
  changes the alias, so the caller's tensor holds the new values but its
  autograd history does not know. The forward hook sees the (shared) version
  counter move and rebases the caller's tensor on the module's output
  (``_Rebase``, an in-place identity; the counter is set back afterwards, so
  it moved once, as the in-place op moved it): the caller's tensor then has
  the history it would have without hooks. Version counters are shared as
  without hooks, so torch still detects an in-place change of a tensor an
  op saved for backward. (On a torch without
  ``torch._C._autograd._unsafe_set_version_counter`` the input aliases get
  counters of their own instead: the gradients are the same, but an in-place
  change of an output that *is* a module's input, such as ``nn.Identity``'s,
  no longer invalidates what the input's producer saved.)

Limits: only top-level tensors of the positional inputs and of the output
(a tensor or a tuple) are captured, as torch does; an output of another type
(a dict, a dataclass) gets a warning and no hook call. A forward pre-hook
registered on the module *after* the backward hook that replaces the inputs
makes ``grad_input`` the gradient of what it received. Under
``torch.compile`` use torch's own hooks.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect._backward import add_backward_hook
    >>> bn, relu = nn.BatchNorm1d(3), nn.ReLU(inplace=True)
    >>> seen = []
    >>> handle = add_backward_hook(bn, "backward", lambda m, gin, gout: seen.append(gout[0].shape))
    >>> relu(bn(torch.randn(4, 3, requires_grad=True))).sum().backward()   # torch's own hook raises here
    >>> seen
    [torch.Size([4, 3])]
    >>> handle()
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookline.core import HookError
from hookline.core.event import hook_of

_Grads = tuple[Any, ...]
# Resets a version counter after _Rebase (torch's functionalization uses it; torch >= 2.4 has it).
# Without it, the input aliases get version counters of their own instead (see _alias).
_set_versions = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)  # noqa: SLF001


def _alias(tensor: torch.Tensor, own_version: bool = False) -> torch.Tensor:
    """A new tensor on ``tensor``'s storage: not a view; a version counter of its own if asked."""
    if own_version and tensor.layout == torch.strided and type(tensor) is torch.Tensor:
        return tensor.new_empty(0).set_(tensor.untyped_storage(), tensor.storage_offset(), tensor.size(),
                                        tensor.stride())
    return tensor.detach()


def _rebase(tensor: torch.Tensor, onto: torch.Tensor) -> None:
    """Give ``tensor`` the history of ``onto``, bumping its version counter once (as the in-place op did).

    The input aliases share the caller's version counter, which the in-place op
    inside the module has bumped already: the counter is put back after
    ``mark_dirty``'s own bump, so saved tensors (ReLU's output) stay valid.
    """
    if _set_versions is None:
        _Rebase.apply(tensor, onto)
        return
    version = tensor._version  # noqa: SLF001 - the version counter
    _Rebase.apply(tensor, onto)
    _set_versions((tensor,), (version,))


class _Entry:
    """One registered hook on a module; ``active`` turns False when it is removed."""

    __slots__ = ("call", "point", "active")

    def __init__(self, call: Callable[..., Any], point: str) -> None:
        self.call = call
        self.point = point
        self.active = True

    def checked(self, result: Any, expected: int, what: str) -> _Grads:
        """The hook's replacement grads; a wrong number is torch's RuntimeError, as a HookError."""
        if isinstance(result, (tuple, list)) and len(result) == expected:
            return tuple(result)
        got = len(result) if isinstance(result, (tuple, list)) else type(result).__name__
        problem = RuntimeError(f"Backward {'pre hook' if what == 'output' else 'hook'} returned an invalid "
                               f"number of grad_{what}, got {got}, but expected {expected}")
        raise HookError(hook_of(self.call), self.point, problem) from problem


class _Call:
    """One forward call of a hooked module: what its backward needs to pair grad_input with grad_output."""

    __slots__ = ("module", "hooks", "pre_hooks", "n_inputs", "input_index", "n_outputs", "output_index",
                 "grad_outputs", "inputs")

    def __init__(self, module: nn.Module, hooks: tuple[_Entry, ...], pre_hooks: tuple[_Entry, ...],
                 n_inputs: int) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.n_inputs = n_inputs
        self.input_index: list[int] | None = None
        self.n_outputs = 0
        self.output_index: list[int] = []
        self.grad_outputs: _Grads | None = None
        self.inputs: list[tuple[torch.Tensor, torch.Tensor, int]] = []  # (caller's, alias, version)


def _pack(index: list[int], values: _Grads, size: int) -> _Grads:
    packed: list[Any] = [None] * size
    for i, value in zip(index, values):
        packed[i] = value
    return tuple(packed)


class _Inputs(torch.autograd.Function):
    """Identity on the inputs that require grad; its backward runs the full backward hooks."""

    @staticmethod
    def forward(ctx: Any, call: _Call, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.call = call
        return tuple(_alias(t, own_version=_set_versions is None) for t in tensors)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        call: _Call = ctx.call
        grad_outputs = call.grad_outputs
        if grad_outputs is None or call.input_index is None:
            # The gradient reached the inputs without passing through the outputs (torch: no call).
            return (None, *grads)
        grad_inputs = _pack(call.input_index, grads, call.n_inputs)
        for entry in call.hooks:
            if entry.active:
                result = entry.call(call.module, grad_inputs, grad_outputs)
                if result is not None:
                    grad_inputs = entry.checked(result, len(grad_inputs), "input")
        call.grad_outputs = None
        return (None, *(grad_inputs[i] for i in call.input_index))


class _Outputs(torch.autograd.Function):
    """Identity on the outputs that require grad; its backward captures grad_output and runs pre-hooks."""

    @staticmethod
    def forward(ctx: Any, call: _Call, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.call = call
        return tuple(_alias(t) for t in tensors)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        call: _Call = ctx.call
        grad_outputs = _pack(call.output_index, grads, call.n_outputs)
        for entry in call.pre_hooks:
            if entry.active:
                result = entry.call(call.module, grad_outputs)
                if result is not None:
                    grad_outputs = entry.checked(result, len(grad_outputs), "output")
        if call.input_index is None:  # no input requires grad: the hooks run now, as torch's do
            no_inputs: _Grads = (None,) * call.n_inputs
            for entry in call.hooks:
                if entry.active:
                    result = entry.call(call.module, no_inputs, grad_outputs)
                    all_none = isinstance(result, tuple) and all(g is None for g in result)
                    if result is not None and not all_none:
                        problem = RuntimeError("Backward hook for Modules where no input requires gradient "
                                               "should always return None or None for all gradients.")
                        raise HookError(hook_of(entry.call), entry.point, problem) from problem
        else:
            call.grad_outputs = grad_outputs
        return (None, *(grad_outputs[i] for i in call.output_index))


class _Rebase(torch.autograd.Function):
    """In-place identity: the caller's tensor takes the history of the alias a module changed in place."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, alias: torch.Tensor) -> torch.Tensor:  # noqa: ARG004
        ctx.mark_dirty(tensor)  # ``alias`` is an input only so that the gradient goes to it
        return tensor

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:  # noqa: ARG004 - autograd's API
        return None, grad


class _ModuleHooks:
    """The backward and backward-pre hooks of one module, and the forward hooks that run them."""

    def __init__(self, module: nn.Module) -> None:
        # No reference to the module: the module holds this table (through its forward hooks).
        self.hooks: tuple[_Entry, ...] = ()
        self.pre_hooks: tuple[_Entry, ...] = ()
        self.pending: dict[int, list[_Call]] = {}  # thread id -> calls between pre-hook and hook
        self.handles = (module.register_forward_pre_hook(self.before),
                        module.register_forward_hook(self.after, always_call=True))

    def before(self, module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        hooks, pre_hooks = self.hooks, self.pre_hooks
        if not torch.is_grad_enabled() or not (hooks or pre_hooks):
            return None
        call = _Call(module, hooks, pre_hooks, len(args))
        self.pending.setdefault(threading.get_ident(), []).append(call)
        index = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
        if not index or not hooks:  # backward_pre hooks alone need no grad_input
            return None
        aliases = _Inputs.apply(call, *(args[i] for i in index))
        call.input_index = index
        new_args = list(args)
        for i, alias in zip(index, aliases):
            call.inputs.append((args[i], alias, alias._version))  # noqa: SLF001 - the version counter
            new_args[i] = alias
        return tuple(new_args)

    def after(self, module: nn.Module, _args: tuple[Any, ...], output: Any) -> Any:
        thread = threading.get_ident()
        stack = self.pending.get(thread)
        if not stack or not torch.is_grad_enabled():
            return None  # the hooks were added during this forward call, or before() did nothing
        call = stack.pop()
        if not stack:
            del self.pending[thread]
        inputs, call.inputs = call.inputs, []
        wrapped = self._wrap_outputs(call, module, output)
        for tensor, alias, version in inputs:
            if alias._version != version:  # noqa: SLF001 - the module changed its input in place
                # The caller's tensor now holds the module's output: it takes the output's history
                # (through _Outputs, so grad_output sees its uses) or, if not returned, the alias's.
                _rebase(tensor, wrapped.get(id(alias), alias))
        return None if not wrapped else wrapped[0]

    def _wrap_outputs(self, call: _Call, module: nn.Module, output: Any) -> dict[int, Any]:
        """``{0: new output, id(original tensor): its alias, ...}``; empty when nothing is wrapped."""
        if output is None:
            return {}
        is_tuple = isinstance(output, tuple)
        items = output if is_tuple else (output,)
        if not is_tuple and not isinstance(output, torch.Tensor):
            warnings.warn(f"backward hooks of {type(module).__name__} are not called: its output is a "
                          f"{type(output).__name__}, not a tensor or a tuple of tensors", stacklevel=3)
            return {}
        index = [i for i, t in enumerate(items) if isinstance(t, torch.Tensor) and t.requires_grad]
        if not index:
            return {}  # nothing to differentiate: the hooks will not fire (as with torch)
        call.n_outputs, call.output_index = len(items), index
        aliases = _Outputs.apply(call, *(items[i] for i in index))
        new_items = list(items)
        wrapped: dict[int, Any] = {}
        for i, alias in zip(index, aliases):
            wrapped[id(items[i])] = alias
            new_items[i] = alias
        if not is_tuple:
            wrapped[0] = new_items[0]
        else:
            wrapped[0] = tuple(new_items) if type(output) is tuple else type(output)(*new_items)
        return wrapped

    def add(self, kind: str, call: Callable[..., Any], prepend: bool, point: str) -> _Entry:
        entry = _Entry(call, point)
        current = self.pre_hooks if kind == "backward_pre" else self.hooks
        updated = (entry, *current) if prepend else (*current, entry)
        if kind == "backward_pre":
            self.pre_hooks = updated
        else:
            self.hooks = updated
        return entry

    def discard(self, entry: _Entry) -> bool:
        """Remove ``entry``; True when the module has no hook left (the forward hooks are removed)."""
        entry.active = False
        self.hooks = tuple(e for e in self.hooks if e is not entry)
        self.pre_hooks = tuple(e for e in self.pre_hooks if e is not entry)
        if self.hooks or self.pre_hooks:
            return False
        for handle in self.handles:
            handle.remove()
        return True


_tables: weakref.WeakKeyDictionary[nn.Module, _ModuleHooks] = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def add_backward_hook(module: nn.Module, kind: str, call: Callable[..., Any], prepend: bool = False,
                      point: str = "") -> Callable[[], None]:
    """Add ``call`` as a ``"backward"`` or ``"backward_pre"`` hook of ``module``; returns its remover.

    The hooks of one module run in registration order (``prepend`` puts this
    one first), each seeing the grads the previous one returned. ``point``
    names the hook point in errors about what the hook returned.
    """
    with _lock:
        table = _tables.get(module)
        if table is None:
            table = _tables[module] = _ModuleHooks(module)
        entry = table.add(kind, call, prepend, point or f"{type(module).__name__}.{kind}")
    module_ref = weakref.ref(module)

    def remove() -> None:
        with _lock:
            live = module_ref()
            if live is not None and _tables.get(live) is table and table.discard(entry):
                del _tables[live]

    return remove
