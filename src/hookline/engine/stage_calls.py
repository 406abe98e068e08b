"""Generated stage callers: one function per stage that calls its hooks, rebuilt when hooks change.

A generic dispatch (``for method in methods: method(runner, **kwargs)``)
packs the stage's keyword arguments into a dict and unpacks it again for
every hook; an mmcv-style hook that takes only ``runner`` goes through a
:class:`~.hook.StageCall` adapter on top. The caller generated here for a
stage is unrolled code instead, like the ``__init__`` :mod:`dataclasses`
generates, with the adaptation inlined (each hook gets exactly the keywords
its signature names)::

    def call(runner, /, *, batch_idx=NO, data_batch=NO, outputs=NO, **extra):
        ...
        h0(runner, batch_idx=batch_idx, data_batch=data_batch, outputs=outputs)
        h1(runner)

The source depends only on the stage's arguments and on which of them each
hook takes, so it is compiled once per such shape and cached. A call that
leaves out one of the stage's arguments or passes others
(``runner.call_hook`` with custom keywords) takes the generic loop, as do
lists longer than :data:`MAX_UNROLLED` and profiled runs. As before, an
emission walks the hooks it started with: a hook added or removed by a hook
counts from the next call of the stage.

Example::

    >>> from hookline.engine.stage_calls import caller_source
    >>> print(caller_source(("batch_idx",), ((), None)).splitlines()[5].strip())
    h0(runner)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from hookline.core import HookError

from .hook import STAGE_KWARGS, StageCall, StageMethod

#: the longest hook list that gets unrolled code; longer ones loop
MAX_UNROLLED = 128
#: what a stage caller is: ``caller(runner, **stage_kwargs)``
StageCaller = Callable[..., None]
#: which keywords each hook takes: None (all of the stage's) or the names it takes
Shape = tuple[tuple[str, ...] | None, ...]

#: the marker of a stage argument not given
class _NoArgument:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<no argument>"


_NO: Any = _NoArgument()
_factories: dict[tuple[tuple[str, ...], Shape], tuple[Callable[..., StageCaller], dict[int, int]]] = {}
_lock = threading.Lock()


def caller_source(names: tuple[str, ...], shape: Shape) -> str:
    """The source of the caller factory for a stage taking ``names``, with hooks of ``shape``."""
    hooks = [f"h{i}" for i in range(len(shape))]
    params = "*, " + "".join(f"{name}=NO, " for name in names) if names else ""
    lines = [
        f"def make(generic, failure, NO, {', '.join(hooks)}):",
        f"    def call(runner, /, {params}**extra):",
    ]
    missing = "".join(f" or {name} is NO" for name in names)
    lines += [
        f"        if extra{missing}:",
        f"            return generic(runner, {', '.join(names) + ', ' if names else ''}extra)",
        "        try:",
    ]
    for hook, takes in zip(hooks, shape):
        passed = "".join(f", {name}={name}" for name in (names if takes is None else takes))
        lines.append(f"            {hook}(runner{passed})")
    lines += [
        "        except HookError:",
        "            raise",
        "        except Exception as exc:",
        "            raise failure(exc, exc.__traceback__.tb_lineno) from exc",
        "    return call",
    ]
    return "\n".join(lines) + "\n"


def _factory(names: tuple[str, ...], shape: Shape) -> tuple[Callable[..., StageCaller], dict[int, int]]:
    key = (names, shape)
    found = _factories.get(key)
    if found is not None:
        return found
    source = caller_source(names, shape)
    namespace: dict[str, Any] = {"HookError": HookError}
    exec(compile(source, f"<hookline stage caller for {len(shape)} hooks>", "exec"), namespace)
    lines = {number: int(text.strip()[1:text.strip().index("(")])
             for number, text in enumerate(source.splitlines(), start=1)
             if text.strip().startswith("h") and text.endswith(")")}
    with _lock:
        return _factories.setdefault(key, (namespace["make"], lines))


def _inlined(method: StageMethod) -> tuple[Callable[..., Any], tuple[str, ...] | None]:
    """What to call for ``method`` and the keywords it takes (None: all of the stage's)."""
    if type(method) is StageCall:  # a subclass may change what calling it does: not inlined
        return method.method, method.passes
    return method, None


def build_caller(stage: str, methods: Sequence[StageMethod]) -> StageCaller:
    """The caller of ``stage`` for ``methods`` (in call order); a failure becomes :class:`HookError`."""
    names = STAGE_KWARGS.get(stage, ())
    frozen = tuple(methods)
    if not frozen:
        return _nothing
    loop = _looping(stage, frozen)
    if len(frozen) > MAX_UNROLLED:
        return loop

    def generic(runner: Any, /, *values: Any) -> None:
        """The arguments of a call the unrolled code does not cover (values, then extras)."""
        *given, extra = values
        loop(runner, **{name: v for name, v in zip(names, given) if v is not _NO}, **extra)

    targets, shape = zip(*(_inlined(m) for m in frozen))
    make, lines = _factory(names, tuple(shape))

    def failure(exc: BaseException, lineno: int) -> HookError:
        index = lines.get(lineno, -1)
        return HookError(frozen[index].__self__ if index >= 0 else None, stage, exc)

    caller: StageCaller = make(generic, failure, _NO, *targets)
    return caller


def _nothing(runner: Any, /, **kwargs: Any) -> None:  # noqa: ARG001 - a stage nobody hooks
    return None


def _looping(stage: str, methods: tuple[StageMethod, ...]) -> StageCaller:
    """The generic loop over ``methods``."""
    def call(runner: Any, /, **kwargs: Any) -> None:
        try:
            for method in methods:
                method(runner, **kwargs)
        except HookError:
            raise
        except Exception as exc:
            raise HookError(method.__self__, stage, exc) from exc
    return call


def profiled_caller(stage: str, methods: Sequence[StageMethod],
                    profile: dict[tuple[int, str], list[Any]]) -> StageCaller:
    """A caller that also counts and times each hook call into ``profile``
    (``(id(hook), stage) -> [hook, calls, seconds]``)."""
    import time  # noqa: PLC0415 - only profiled runs

    frozen = tuple(methods)
    clock = time.perf_counter

    def call(runner: Any, /, **kwargs: Any) -> None:
        for method in frozen:
            start = clock()
            try:
                method(runner, **kwargs)
            except HookError:
                raise
            except Exception as exc:
                raise HookError(method.__self__, stage, exc) from exc
            finally:
                elapsed = clock() - start
                hook = method.__self__
                record = profile.get((id(hook), stage))
                if record is None:
                    record = profile[(id(hook), stage)] = [hook, 0, 0.0]
                record[1] += 1
                record[2] += elapsed
    return call
