"""Around-hooks (``f.around``) and ``Skip`` from pre-hooks."""

from __future__ import annotations

import asyncio
import time

import pytest

from hookline.core import ConfigError, HookError, Skip, hookable


def make():
    calls = []

    @hookable
    def add(a, b=0):
        calls.append((a, b))
        return a + b

    return add, calls


# -- around-hooks --------------------------------------------------------------------------------
def test_a_wrapper_runs_around_the_call_and_returns_the_result():
    add, calls = make()
    log = []

    @add.around
    def wrap(call, args, kwargs):
        log.append(("before", args, kwargs))
        result = call(*args, **kwargs)
        log.append(("after", result))
        return result * 10

    assert add(1, b=2) == 30
    assert log == [("before", (1,), {"b": 2}), ("after", 3)] and calls == [(1, 2)]
    wrap.remove()
    assert add(1, b=2) == 3


def test_the_seeds_timing_decorator_is_one_wrapper():
    add, _ = make()
    timings = []

    @add.around
    def timed(call, args, kwargs):
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            timings.append(time.perf_counter() - start)

    add(1, 2)
    add(3, 4)
    assert len(timings) == 2 and all(t >= 0 for t in timings)


def test_wrappers_nest_by_priority_and_class_wrappers_are_outside_instance_wrappers():
    log = []

    def wrapper(label):
        def wrap(call, args, kwargs):
            log.append(f"{label} in")
            result = call(*args, **kwargs)
            log.append(f"{label} out")
            return result
        return wrap

    class Box:
        @hookable
        def get(self):
            log.append("call")
            return 1

    box = Box()
    box.get.around(wrapper("instance"), priority="HIGHEST")
    Box.get.around(wrapper("class low"), priority="LOW")
    Box.get.around(wrapper("class high"), priority="HIGH")
    assert box.get() == 1
    assert log == ["class high in", "class low in", "instance in", "call", "instance out",
                   "class low out", "class high out"]


def test_a_wrapper_may_change_the_arguments_retry_or_not_call_at_all():
    add, calls = make()
    add.around(lambda call, args, kwargs: call(args[0] * 2, **kwargs))     # inner: doubles a
    cache = {5: "cached"}
    add.around(lambda call, args, kwargs: cache.get(args[0]) or call(*args, **kwargs), priority="HIGH")
    assert add(5) == "cached" and calls == []
    assert add(1, b=1) == 3 and calls == [(2, 1)]

    attempts = []

    @hookable
    def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return "ok"

    @flaky.around
    def retry(call, args, kwargs):
        for _ in range(5):
            try:
                return call(*args, **kwargs)
            except ConnectionError:
                pass
        raise RuntimeError("gave up")

    assert flaky() == "ok" and len(attempts) == 3


def test_post_hooks_see_the_wrapper_result_and_pre_hooks_run_before_wrappers():
    add, _ = make()
    log = []
    add.pre(lambda args, kwargs: log.append("pre") or ((args[0] + 1,), kwargs))
    add.around(lambda call, args, kwargs: log.append(("around", args)) or call(*args, **kwargs) + 100)
    add.post(lambda result, args, kwargs: log.append(("post", result)))
    assert add(1) == 102
    assert log == ["pre", ("around", (2,)), ("post", 102)]


def test_filters_hold_a_wrapper_back_without_breaking_the_chain():
    add, calls = make()
    every = add.around(lambda call, args, kwargs: -call(*args, **kwargs), every=2)
    add.around(lambda call, args, kwargs: 0, when=lambda call, args, kwargs: args[0] == 99)
    once = add.around(lambda call, args, kwargs: call(*args, **kwargs) + 1000, once=True)
    assert [add(1), add(1), add(1), add(99)] == [1001, -1, 1, 0]
    assert once.removed and not every.removed
    assert len(calls) == 3


def test_the_function_exception_passes_through_wrappers_to_error_hooks():
    @hookable
    def fail(x):
        raise KeyError(x)

    seen = []
    fail.around(lambda call, args, kwargs: call(*args, **kwargs))

    @fail.around(priority="HIGH")
    def logging_wrapper(call, args, kwargs):
        try:
            return call(*args, **kwargs)
        except KeyError as exc:
            seen.append(exc)
            raise

    with pytest.raises(KeyError) as info:
        fail("k")
    assert seen == [info.value]
    fail.on_error(lambda exc, args, kwargs: f"fallback for {exc!r}")
    assert fail("k") == "fallback for KeyError('k')"


def test_a_wrapper_may_turn_an_exception_into_a_result():
    @hookable
    def fail():
        raise ValueError("bad")

    fail.around(lambda call, args, kwargs: "recovered" if _raises(call) else "no")
    fail.post(lambda result, args, kwargs: result.upper())
    assert fail() == "RECOVERED"


def _raises(call):
    try:
        call()
    except ValueError:
        return True
    return False


def test_an_exception_raised_by_the_wrapper_itself_is_a_hook_error_error_hooks_do_not_see():
    add, calls = make()
    fallbacks = []
    add.on_error(lambda exc, args, kwargs: fallbacks.append(exc) or "fallback")

    def broken(call, args, kwargs):
        call(*args, **kwargs)
        raise OSError("disk full")

    add.around(broken)
    with pytest.raises(HookError) as info:
        add(1)
    assert info.value.hook is broken and info.value.point.endswith("add.around")
    assert "broken failed at" in str(info.value) and isinstance(info.value.__cause__, OSError)
    assert fallbacks == [] and calls == [(1, 0)]


def test_an_inner_wrapper_error_passes_through_outer_wrappers_unchanged():
    add, _ = make()
    add.around(lambda call, args, kwargs: call(*args, **kwargs), priority="HIGH")

    def inner(call, args, kwargs):
        raise ValueError("inner")

    add.around(inner)
    with pytest.raises(HookError) as info:
        add(1)
    assert info.value.hook is inner


def test_a_wrapper_removed_during_the_call_is_not_called_later():
    add, _ = make()
    log = []
    add.around(lambda call, args, kwargs: later.remove() or call(*args, **kwargs), priority="HIGH")
    later = add.around(lambda call, args, kwargs: log.append("later") or call(*args, **kwargs))
    assert add(2) == 2 and log == []


def test_only_around_hooks_make_a_function_hooked():
    add, _ = make()
    handle = add.around(lambda call, args, kwargs: 7)
    assert add(1) == 7
    handle.remove()
    assert add(1) == 1 and not add._hooked  # noqa: SLF001 - the fast path is back


# -- Skip ----------------------------------------------------------------------------------------
def test_skip_from_a_pre_hook_skips_the_call_wrappers_and_later_pre_hooks():
    add, calls = make()
    log = []
    add.pre(lambda args, kwargs: Skip(f"cached {args[0]}") if args[0] < 0 else None, priority="HIGH")
    add.pre(lambda args, kwargs: log.append("later pre"))
    add.around(lambda call, args, kwargs: log.append("around") or call(*args, **kwargs))
    add.post(lambda result, args, kwargs: log.append(("post", result)))
    add.on_error(lambda exc, args, kwargs: log.append("error"))
    assert add(-1) == "cached -1"
    assert calls == [] and log == [("post", "cached -1")]
    assert add(2) == 2 and log[1:] == ["later pre", "around", ("post", 2)]


def test_skip_without_a_value_gives_none_and_a_post_hook_may_replace_it():
    add, calls = make()
    add.pre(lambda args, kwargs: Skip())
    assert add(1) is None and calls == []
    add.post(lambda result, args, kwargs: "replaced")
    assert add(1) == "replaced" and repr(Skip(3)) == "Skip(3)"


def test_skip_from_a_class_pre_hook_skips_instance_pre_hooks():
    log = []

    class Box:
        @hookable
        def get(self):
            return "real"

    box = Box()
    box.get.pre(lambda args, kwargs: log.append("instance pre"))
    with Box.get.pre(lambda args, kwargs: Skip("skipped")):
        assert box.get() == "skipped" and log == []
    assert box.get() == "real" and log == ["instance pre"]


def test_a_pre_hook_returning_something_else_names_skip_in_the_error():
    add, _ = make()
    add.pre(lambda args, kwargs: "nonsense")
    with pytest.raises(HookError, match=r"None, Skip\(value\) or \(args, kwargs\)"):
        add(1)


# -- async ---------------------------------------------------------------------------------------
def test_async_wrappers_and_skip():
    log = []

    @hookable
    async def fetch(url):
        await asyncio.sleep(0)
        log.append(url)
        return f"<{url}>"

    async def timed(call, args, kwargs):
        result = await call(*args, **kwargs)
        return result + "!"

    fetch.around(timed)
    fetch.around(lambda call, args, kwargs: call(args[0].upper()))   # a plain wrapper returns the awaitable
    fetch.pre(lambda args, kwargs: Skip("<cached>") if args[0] == "c" else None)
    assert asyncio.run(fetch("a")) == "<A>!"
    assert asyncio.run(fetch("c")) == "<cached>" and log == ["A"]


def test_async_wrapper_errors():
    @hookable
    async def fail():
        raise KeyError("k")

    async def passes(call, args, kwargs):
        return await call()

    fail.around(passes)
    fail.on_error(lambda exc, args, kwargs: "fallback")
    assert asyncio.run(fail()) == "fallback"

    async def broken(call, args, kwargs):
        raise OSError("broken")

    fail.around(broken)
    with pytest.raises(HookError) as info:
        asyncio.run(fail())
    assert info.value.hook is broken


def test_a_coroutine_wrapper_on_a_sync_function_is_a_config_error():
    add, _ = make()

    async def wrapper(call, args, kwargs):
        return call(*args, **kwargs)

    with pytest.raises(ConfigError, match="coroutine"):
        add.around(wrapper)
