"""The Runner's hook list: priority order, per-stage call lists, errors, timing.

All ordering work is paid when a hook is added or removed: each stage keeps a
tuple of the bound methods of the hooks that override it, and a caller
generated for exactly those hooks (:mod:`.stage_calls`: unrolled calls, no
loop), so dispatching a stage costs about what calling those methods by hand
does. What to call is decided when a hook is added
(:meth:`Hook.stage_callable`: a method taking only ``runner`` is called with
``runner`` alone), and a method that looks like a stage but is none gets one
warning then (:mod:`.stage_lint`).

Example::

    >>> from hookline import Hook
    >>> from hookline.engine.hook_table import HookTable
    >>> class Ping(Hook):
    ...     def before_run(self, runner):
    ...         print("ping")
    >>> table = HookTable()
    >>> handle = table.add(Ping())
    >>> table.call(None, "before_run")
    ping
    >>> handle.remove(); table.stages["before_run"]
    ()
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from hookline.core import HookHandle, Priority
from hookline.core.errors import ConfigError

from .hook import STAGES, Hook, StageMethod
from .stage_calls import StageCaller, build_caller, profiled_caller
from .stage_lint import check_stage_names

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


class _Entry:
    __slots__ = ("calls", "hook", "is_default", "key", "priority", "seq")

    def __init__(self, hook: Hook, priority: int, is_default: bool, seq: int, key: str) -> None:
        self.hook = hook
        self.priority = priority
        self.is_default = is_default
        self.seq = seq
        self.key = key
        #: stage -> what to call, decided once here (signature adaptation included)
        self.calls: dict[str, StageMethod] = {
            stage: hook.stage_callable(stage) for stage in hook.triggered_stages()}

    def sort_key(self) -> tuple[int, int, int]:
        return (self.priority, 0 if self.is_default else 1, self.seq)


def _not_a_hook(obj: object) -> str:
    """What ``HookTable.add`` says of an object it cannot register (a class: pass an instance)."""
    accepted = ("a Runner hook must be a hookline.Hook instance, a config dict "
                "({'type': ...}), or a Keras or Lightning callback instance")
    if isinstance(obj, type):
        name = obj.__name__
        return f"{accepted}; a class was given ({obj.__module__}.{name}): pass an instance, {name}()"
    return f"{accepted}, got {obj!r}"


class HookTable:
    """Ordered hooks and the per-stage call tuples derived from them."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._seq = 0
        self.stages: dict[str, tuple[StageMethod, ...]] = {stage: () for stage in STAGES}
        #: stage -> ``caller(runner, **stage_kwargs)`` for the hooks of ``stages[stage]``
        #: (rebuilt with them; the loops call these directly)
        self.callers: dict[str, StageCaller] = {stage: build_caller(stage, ()) for stage in STAGES}
        #: (id(hook), stage) -> [hook, calls, total seconds]; None when not profiling
        self.profile: dict[tuple[int, str], list[Any]] | None = None
        #: hooks that finished their work and left the table (a ``once=True`` ClosureHook
        #: that ran), in that order: their state still goes into checkpoints
        self.retired: list[Hook] = []

    # -- membership ---------------------------------------------------------------
    def add(self, hook: Hook, priority: Any = None, *, is_default: bool = False,
            key: str | None = None) -> HookHandle:
        """Insert ``hook`` (stable: equal priorities keep their order, defaults first)."""
        if not isinstance(hook, Hook):
            raise ConfigError(_not_a_hook(hook))
        if any(e.hook is hook for e in self._entries):
            raise ConfigError(f"{hook!r} is already registered with this Runner")
        level = int(Priority.get(hook.priority if priority is None else priority))
        check_stage_names(hook)
        entry = _Entry(hook, level, is_default, self._seq, key or "")
        self._seq += 1
        self._entries.append(entry)
        self._entries.sort(key=_Entry.sort_key)
        self._rebuild()
        return HookHandle(lambda: self._remove(entry), hook, "runner")

    def _remove(self, entry: _Entry) -> None:
        if entry in self._entries:
            self._entries.remove(entry)
            self._rebuild()

    def _rebuild(self) -> None:
        calls: dict[str, list[StageMethod]] = defaultdict(list)
        for entry in self._entries:
            for stage, call in entry.calls.items():
                calls[stage].append(call)
        self.stages = stages = {stage: tuple(calls.get(stage, ())) for stage in STAGES}
        profile = self.profile
        self.callers = {stage: build_caller(stage, methods) if profile is None
                        else profiled_caller(stage, methods, profile)
                        for stage, methods in stages.items()}

    @property
    def hooks(self) -> list[Hook]:
        """Hooks in priority order."""
        return [e.hook for e in self._entries]

    # MMEngine's ``runner.hooks`` is the list itself: ``for hook in runner.hooks``, ``len``, ``[i]``
    def __iter__(self) -> Iterator[Hook]:
        return iter(self.hooks)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> Hook:
        return self._entries[index].hook

    def priority_of(self, hook: Hook) -> int:
        for entry in self._entries:
            if entry.hook is hook:
                return entry.priority
        raise KeyError(hook)

    def by_key(self) -> dict[str, Hook]:
        """Default hooks by their ``default_hooks`` key."""
        return {e.key: e.hook for e in self._entries if e.key}

    # -- dispatch --------------------------------------------------------------------
    def call(self, runner: Runner, stage: str, **kwargs: Any) -> None:
        """Call ``stage`` on every hook overriding it; a failure becomes :class:`HookError`.
        An unknown ``stage`` is a :class:`ConfigError` (custom events: ``hookline.core.Event``)."""
        caller = self.callers.get(stage)
        if caller is None:
            raise ConfigError.unknown("Runner stage", stage, STAGES)
        caller(runner, **kwargs)

    def call_on_exception(self, runner: Runner, exception: BaseException,
                          logger: logging.Logger) -> None:
        """Run every ``on_exception`` hook; one hook's failure does not stop the others."""
        for method in self.stages["on_exception"]:
            try:
                method(runner, exception=exception)
            except Exception:
                logger.exception("on_exception hook %s failed", type(method.__self__).__name__)

    def start_profiling(self) -> None:
        """Count and time every hook call from now on (restarting from zero).

        Off by default, and then it costs nothing: profiling swaps in
        profiled stage callers until :meth:`stop_profiling`. Read the result
        with :meth:`profile_report` (``Runner.hook_profile()``).
        """
        self.profile = {}
        self._rebuild()  # profiled callers

    def stop_profiling(self) -> None:
        """Stop timing hook calls and forget what was recorded."""
        self.profile = None
        self._rebuild()

    def profile_report(self) -> HookProfile:
        """Calls and total seconds per (hook, stage) since :meth:`start_profiling`,
        slowest first; empty when profiling is off."""
        if self.profile is None:
            return HookProfile([], enabled=False)
        records = list(self.profile.values())
        labels: dict[int, str] = {}
        seen: dict[str, int] = defaultdict(int)
        for hook in [e.hook for e in self._entries] + [r[0] for r in records]:
            if id(hook) in labels:
                continue
            name = type(hook).__name__
            seen[name] += 1
            labels[id(hook)] = name if seen[name] == 1 else f"{name}.{seen[name]}"
        rows = [HookTiming(labels[id(hook)], stage, calls, seconds)
                for (_, stage), (hook, calls, seconds) in self.profile.items()]
        rows.sort(key=lambda row: (-row.total_s, row.hook, STAGES.index(row.stage)))
        return HookProfile(rows)

    # -- reporting ---------------------------------------------------------------------
    def table(self, markdown: bool = False) -> str:
        """The stage-by-hook call order, one line per stage that has hooks: text
        (MMEngine's startup log, ``EMAHook(ABOVE_NORMAL)``) or, with ``markdown``, a
        Markdown table whose priorities carry their numbers (``ABOVE_NORMAL (40)``).
        At a stage a smaller priority number runs first; equal ones keep the order
        the hooks were added in, default hooks first.

        Example::

            >>> from hookline import Hook
            >>> class Saver(Hook):
            ...     priority = "VERY_LOW"
            ...     def after_train_epoch(self, runner): ...
            >>> table = HookTable()
            >>> _ = table.add(Saver())
            >>> print(table.table(markdown=True))
            | stage | hooks in call order (smaller priority number first) |
            |---|---|
            | `after_train_epoch` | `Saver` VERY_LOW (90) |
        """
        width = max(len(stage) for stage in STAGES)
        lines = ["| stage | hooks in call order (smaller priority number first) |", "|---|---|"] \
            if markdown else []
        for stage in STAGES:
            entries = [e for e in self._entries if stage in e.calls]  # call order
            if not entries:
                continue
            if markdown:
                hooks = ", ".join(f"`{_label(e.hook)}` {self._priority_name(e.priority, True)}"
                                  for e in entries)
                lines.append(f"| `{stage}` | {hooks} |")
            else:
                hooks = ", ".join(f"{_label(e.hook)}({self._priority_name(e.priority)})"
                                  for e in entries)
                lines.append(f"{stage:<{width}}  {hooks}")
        return "\n".join(lines)

    def stage_info(self) -> str:
        """The hooks of each stage in call order, in the layout of MMEngine's
        ``Runner.get_hooks_info()`` (what ``runner.get_hooks_info()`` returns).

        Example::

            >>> class Saver(Hook):
            ...     priority = "VERY_LOW"
            ...     def after_train_epoch(self, runner): ...
            >>> table = HookTable(); _ = table.add(Saver())
            >>> [line.rstrip() for line in table.stage_info().splitlines()]
            ['after_train_epoch:', '(VERY_LOW    ) Saver', ' --------------------']
        """
        blocks = []
        for stage in STAGES:
            entries = [e for e in self._entries if stage in e.calls]
            if entries:
                lines = "\n".join(f"({self._priority_name(e.priority):<12}) {_label(e.hook):<35}"
                                  for e in entries)
                blocks.append(f"{stage}:\n{lines}\n -------------------- ")
        return "\n".join(blocks)

    @staticmethod
    def _priority_name(level: int, with_value: bool = False) -> str:
        try:
            name = Priority(level).name
        except ValueError:
            return str(level)
        return f"{name} ({level})" if with_value else name


def _label(hook: Any) -> str:
    """A hook's name in the table: its class's, or the ``table_label`` a hook that runs
    someone else's object gives (``KerasCallbackHook[EarlyStopping]``)."""
    label = getattr(hook, "table_label", None)
    return label if isinstance(label, str) else type(hook).__name__


class HookTiming(NamedTuple):
    """One row of a hook profile: ``hook`` (class name, ``.2`` for a second
    instance of a class) spent ``total_s`` seconds in ``calls`` calls of ``stage``."""

    hook: str
    stage: str
    calls: int
    total_s: float

    @property
    def mean_s(self) -> float:
        return self.total_s / self.calls if self.calls else 0.0


class HookProfile(list[HookTiming]):
    """Per hook and stage: calls and time, slowest first (a list of :class:`HookTiming`).

    ``str(profile)`` is a table; :meth:`as_dict` gives ``{hook: {stage: (calls, seconds)}}``.

    Example::

        >>> from hookline.engine.hook_table import HookProfile, HookTiming
        >>> profile = HookProfile([HookTiming("LoggerHook", "after_train_iter", 20, 0.004)])
        >>> profile.as_dict()
        {'LoggerHook': {'after_train_iter': (20, 0.004)}}
        >>> print(profile)  # doctest: +NORMALIZE_WHITESPACE
        hook        stage             calls  total ms  mean us  share
        LoggerHook  after_train_iter     20     4.000    200.0  100.0%
        total                            20     4.000
    """

    def __init__(self, rows: Iterable[HookTiming] = (), *, enabled: bool = True) -> None:
        super().__init__(rows)
        self.enabled = enabled

    @property
    def total_s(self) -> float:
        return sum(row.total_s for row in self)

    def as_dict(self) -> dict[str, dict[str, tuple[int, float]]]:
        out: dict[str, dict[str, tuple[int, float]]] = {}
        for row in self:
            out.setdefault(row.hook, {})[row.stage] = (row.calls, row.total_s)
        return out

    def table(self) -> str:
        """The rows as an aligned text table with a total line."""
        if not self:
            return ("no hook calls recorded" if self.enabled else
                    "hook profiling is off: call runner.hooks.start_profiling() before running")
        total = self.total_s or 1.0
        header = ("hook", "stage", "calls", "total ms", "mean us", "share")
        body = [(r.hook, r.stage, str(r.calls), f"{r.total_s * 1e3:.3f}", f"{r.mean_s * 1e6:.1f}",
                 f"{100 * r.total_s / total:.1f}%") for r in self]
        body.append(("total", "", str(sum(r.calls for r in self)), f"{self.total_s * 1e3:.3f}",
                     "", ""))
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        lines = []
        for row in [header, *body]:
            cells = [cell.ljust(w) if i < 2 else cell.rjust(w)
                     for i, (cell, w) in enumerate(zip(row, widths))]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    __str__ = table

    def __repr__(self) -> str:
        return f"HookProfile({list.__repr__(self)})"
