"""@hookable with staticmethod and classmethod, hooks registered through a subclass, the
metadata of a bound hookable method, and one test of "is this a coroutine function"."""

from __future__ import annotations

import asyncio
import functools
import pickle

import pytest

from hookline.core import ConfigError, Event, hookable
from hookline.core.hookable import BoundHookable


# -- staticmethod / classmethod ---------------------------------------------------------------
class Maths:
    @hookable
    @staticmethod
    def add(x, y):
        return x + y


def test_hookable_above_staticmethod_stays_static():
    assert Maths.add(1, 2) == 3 and Maths().add(1, 2) == 3
    with Maths.add.post(lambda result, args, kwargs: result * 100):
        assert Maths().add(1, 2) == 300 and Maths.add(1, 2) == 300
    assert Maths().add(1, 2) == 3


def test_hookable_above_classmethod_is_refused_with_the_decorator_order():
    with pytest.raises(ConfigError, match="put @classmethod above @hookable"):
        class Factory:
            @hookable
            @classmethod
            def make(cls):
                return cls


class Shape:
    @classmethod
    @hookable
    def make(cls, x):
        return (cls.__name__, x)


class Circle(Shape):
    pass


def test_hooks_of_a_classmethod_are_the_functions_and_run_for_every_class():
    with Shape.make.post(lambda result, args, kwargs: ("hooked", *result)) as handle:
        assert Shape.make(1) == ("hooked", "Shape", 1)
        assert Circle.make(1) == ("hooked", "Circle", 1)
        assert Shape().make(2) == ("hooked", "Shape", 2)
        assert handle.point.endswith("make.post")
    with Circle.make.post(lambda result, args, kwargs: "circle only",
                          when=lambda result, args, kwargs: issubclass(args[0], Circle)):
        assert Shape.make(1) == ("Shape", 1) and Circle.make(1) == "circle only"


# -- a hook registered through a subclass ----------------------------------------------------
class Account:
    def __init__(self):
        self.balance = 0

    @hookable
    def deposit(self, amount):
        """Add money."""
        self.balance += amount
        return self.balance


class Savings(Account):
    pass


class Isa(Savings):
    pass


def test_a_hook_registered_through_a_subclass_runs_for_its_instances_only():
    seen = []
    handle = Savings.deposit.post(lambda result, args, kwargs: seen.append(type(args[0]).__name__))
    Account().deposit(1)
    Savings().deposit(1)
    Isa().deposit(1)
    Account.deposit(Savings(), 1)  # called through the base class: still a Savings instance
    assert seen == ["Savings", "Isa", "Savings"]
    assert handle.point == "Savings.deposit.post"
    handle.remove()
    Savings().deposit(1)
    assert seen == ["Savings", "Isa", "Savings"]


def test_every_kind_of_hook_through_a_subclass_is_gated():
    log = []
    handles = [
        Savings.deposit.pre(lambda args, kwargs: log.append("pre")),
        Savings.deposit.around(lambda call, args, kwargs: log.append("around") or call(*args)),
        Savings.deposit.on_error(lambda exc, args, kwargs: log.append("error") or -1),
    ]
    Account().deposit(1)
    assert log == []
    assert Savings().deposit(1) == 1 and log == ["pre", "around"]
    assert Savings().deposit("x") == -1 and log == ["pre", "around"] * 2 + ["error"]
    for handle in handles:
        handle.remove()


def test_the_subclass_view_calls_compares_and_pickles_like_the_function():
    view = Savings.deposit
    assert type(view).__name__ == "SubclassHookable" and Account.deposit is not view
    assert view == Savings.deposit and hash(view) == hash(Savings.deposit)
    assert view.__name__ == "deposit" and view.__doc__ == "Add money."
    assert view.__wrapped__ is Account.deposit.__wrapped__
    account = Savings()
    assert view(account, 5) == 5
    assert pickle.loads(pickle.dumps(view)) == view
    assert "through Savings" in repr(view)


# -- metadata of obj.method ------------------------------------------------------------------------
def test_a_bound_hookable_method_has_the_methods_metadata():
    bound = Account().deposit
    assert isinstance(bound, BoundHookable)
    assert (bound.__name__, bound.__qualname__, bound.__doc__, bound.__module__) == (
        "deposit", "Account.deposit", "Add money.", __name__)
    assert BoundHookable.__module__ == "hookline.core.hookable"  # the class keeps its own
    assert "calls it, and hooks only" in BoundHookable.__doc__
    with pytest.raises(AttributeError):
        bound.missing  # noqa: B018


# -- one coroutine test for @hookable and for hooks ---------------------------------------------
async def notify(path):
    return f"notified {path}"


def blocking(afn):
    """A sync wrapper of a coroutine function (asgiref's async_to_sync)."""
    @functools.wraps(afn)
    def run(*args, **kwargs):
        return asyncio.run(afn(*args, **kwargs))
    return run


def test_a_sync_wrapper_of_a_coroutine_function_is_sync_everywhere():
    saved = Event("saved")
    saved.register(blocking(notify))
    assert saved.emit("x") == ["notified x"]

    @hookable
    def save(path):
        return path

    save.post(blocking(lambda result, args, kwargs: notify(result)))
    assert save("p") == "notified p"  # the post-hook's (blocking) result replaces it
    fetch = hookable(blocking(notify))
    assert fetch("y") == "notified y"  # a sync function: called, not awaited
    with pytest.raises(ConfigError, match="coroutine function"):
        fetch.post(notify)


def test_async_hookables_however_wrapped_are_async():
    class Store:
        @hookable
        async def put(self, key):
            return key

    store = Store()
    assert asyncio.run(store.put("k")) == "k"
    seen = Event("seen")
    seen.register(store.put)  # a bound async hookable method: a coroutine hook
    with pytest.raises(ConfigError, match="coroutine hooks"):
        seen.emit("k")
    assert asyncio.run(seen.emit_async("k")) == ["k"]
