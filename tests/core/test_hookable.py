import asyncio
import copy
import gc
import inspect
import pickle
import weakref

import pytest

from hookline.core import ConfigError, HookError, HookHandle, hookable


def make_divide():
    @hookable
    def divide(a, b=1):
        """Divide a by b."""
        return a / b

    return divide


class Account:
    """Module level so that instances pickle."""

    def __init__(self, balance=0):
        self.balance = balance

    @hookable
    def deposit(self, amount):
        """Add amount; return the new balance."""
        self.balance += amount
        return self.balance


@hookable
def module_level(x):
    return x


class Slotted:
    __slots__ = ("x",)

    @hookable
    def get(self):
        return 1


@pytest.fixture
def account_hooks():
    """Remove class-level hooks on Account.deposit after each test."""
    handles = []
    yield handles
    for handle in handles:
        handle.remove()


# -- plain calls and metadata ----------------------------------------------------------
def test_without_hooks_it_behaves_like_the_function():
    divide = make_divide()
    assert divide(6, 3) == 2
    assert divide(6, b=2) == 3
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)


def test_wraps_metadata_is_kept():
    divide = make_divide()
    assert divide.__name__ == "divide"
    assert divide.__qualname__.endswith("make_divide.<locals>.divide")
    assert divide.__doc__ == "Divide a by b."
    assert divide.__module__ == __name__
    assert str(inspect.signature(divide)) == "(a, b=1)"
    assert divide.__wrapped__(6, 3) == 2
    assert not isinstance(divide.__wrapped__, type(divide))


def test_method_metadata_is_kept():
    account = Account()
    assert Account.deposit.__name__ == "deposit"
    assert Account.deposit.__doc__ == "Add amount; return the new balance."
    assert account.deposit.__self__ is account
    assert account.deposit.__wrapped__(5) == 5  # the original, bound
    assert "Account.deposit" in repr(account.deposit)


def test_hookable_needs_a_callable():
    with pytest.raises(ConfigError):
        hookable(42)


# -- pre hooks --------------------------------------------------------------------------------
def test_pre_hook_sees_args_and_kwargs_and_none_keeps_them():
    divide = make_divide()
    seen = []
    divide.pre(lambda args, kwargs: seen.append((args, kwargs)))
    assert divide(6, b=3) == 2
    assert seen == [((6,), {"b": 3})]


def test_pre_hook_may_replace_the_arguments():
    divide = make_divide()
    divide.pre(lambda args, kwargs: ((args[0] * 10,), {"b": 4}))
    assert divide(2, b=100) == 5


def test_pre_hooks_chain_in_priority_order():
    divide = make_divide()
    divide.pre(lambda args, kwargs: ((args[0] + 1,), kwargs))
    divide.pre(lambda args, kwargs: ((args[0] * 10,), kwargs), priority="HIGH")
    assert divide(1) == 11  # (1 * 10) + 1


def test_pre_hook_may_return_a_list_of_args():
    divide = make_divide()
    divide.pre(lambda args, kwargs: ([8, 2], {}))
    assert divide(0, 0) == 4


@pytest.mark.parametrize("bad", [(1, 2), "args", ((1,),), ((1,), {}, {})])
def test_pre_hook_with_a_bad_return_value_is_a_hook_error(bad):
    divide = make_divide()
    divide.pre(lambda args, kwargs: bad)
    with pytest.raises(HookError) as info:
        divide(1)
    assert isinstance(info.value.__cause__, TypeError)
    assert "(args, kwargs)" in str(info.value)


# -- post hooks ---------------------------------------------------------------------------------
def test_post_hook_sees_result_and_final_arguments():
    divide = make_divide()
    seen = []
    divide.pre(lambda args, kwargs: ((args[0] * 2,), kwargs))
    divide.post(lambda result, args, kwargs: seen.append((result, args, kwargs)))
    assert divide(3, b=3) == 2
    assert seen == [(2, (6,), {"b": 3})]


def test_post_hook_may_replace_the_result_and_hooks_chain():
    divide = make_divide()
    divide.post(lambda result, args, kwargs: result + 1)
    divide.post(lambda result, args, kwargs: result * 100, priority="LOW")
    assert divide(1) == 200


def test_post_hook_cannot_replace_a_result_with_none():
    divide = make_divide()
    divide.post(lambda result, args, kwargs: None)
    assert divide(4, 2) == 2


# -- error hooks -----------------------------------------------------------------------------
def test_error_hook_returning_none_lets_the_original_exception_propagate():
    divide = make_divide()
    seen = []
    divide.on_error(lambda exc, args, kwargs: seen.append((exc, args, kwargs)))
    with pytest.raises(ZeroDivisionError) as info:
        divide(1, b=0)
    assert seen == [(info.value, (1,), {"b": 0})]
    assert info.value.__cause__ is None


def test_error_hook_value_becomes_the_result():
    divide = make_divide()
    divide.on_error(lambda exc, args, kwargs: float("inf"))
    assert divide(1, 0) == float("inf")


def test_first_non_none_error_hook_wins_and_later_ones_do_not_run():
    divide = make_divide()
    log = []
    divide.on_error(lambda exc, args, kwargs: log.append("first"), priority="HIGHEST")
    divide.on_error(lambda exc, args, kwargs: "fallback", priority="HIGH")
    divide.on_error(lambda exc, args, kwargs: log.append("last"))
    assert divide(1, 0) == "fallback"
    assert log == ["first"]


def test_post_hooks_do_not_run_when_an_error_hook_supplied_a_fallback():
    divide = make_divide()
    log = []
    divide.post(lambda result, args, kwargs: log.append("post"))
    divide.on_error(lambda exc, args, kwargs: 0)
    assert divide(1, 0) == 0
    assert log == []


def test_error_hooks_do_not_run_on_success():
    divide = make_divide()
    log = []
    divide.on_error(lambda exc, args, kwargs: log.append("error"))
    divide(1)
    assert log == []


def test_error_hooks_see_only_exceptions_of_the_wrapped_function():
    divide = make_divide()
    log = []
    divide.on_error(lambda exc, args, kwargs: log.append(exc) or "fallback")
    pre = divide.pre(lambda args, kwargs: 1 / 0)
    with pytest.raises(HookError):
        divide(1)
    pre.remove()
    divide.post(lambda result, args, kwargs: [][0])
    with pytest.raises(HookError):
        divide(1)
    assert log == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_non_exception_errors_of_the_function_skip_error_hooks(error):
    log = []

    @hookable
    def interrupted():
        raise error()

    interrupted.on_error(lambda exc, args, kwargs: log.append(exc) or "fallback")
    with pytest.raises(error):
        interrupted()
    assert log == []


# -- failing hooks -------------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "args"), [("pre", (1, 1)), ("post", (1, 1)), ("on_error", (1, 0))])
def test_a_hook_that_raises_aborts_the_call_with_a_hook_error(kind, args):
    divide = make_divide()
    log = []

    def broken(*_):
        raise LookupError("nope")

    getattr(divide, kind)(broken)
    divide.post(lambda result, args, kwargs: log.append("later post"), priority="LOWEST")
    with pytest.raises(HookError) as info:
        divide(*args)
    err = info.value
    assert err.hook is broken
    assert err.point == f"{divide.__qualname__}.{kind}"
    assert "broken" in str(err) and err.point in str(err)
    assert isinstance(err.__cause__, LookupError)
    assert log == []


def test_a_hook_error_from_a_nested_hookable_passes_through_unchanged():
    inner = make_divide()

    def broken(result, args, kwargs):
        raise ValueError("inner")

    inner.post(broken)

    @hookable
    def outer(x):
        return x

    outer.pre(lambda args, kwargs: inner(1) and None)
    with pytest.raises(HookError) as info:
        outer(1)
    assert info.value.hook is broken
    assert info.value.point.endswith("divide.post")


# -- options and handles ------------------------------------------------------------------------
def test_hooks_return_handles_that_remove_them():
    divide = make_divide()
    handles = [
        divide.pre(lambda args, kwargs: ((10,), {})),
        divide.post(lambda result, args, kwargs: result + 1),
        divide.on_error(lambda exc, args, kwargs: -1),
    ]
    assert all(isinstance(handle, HookHandle) for handle in handles)
    assert divide(1) == 11
    for handle in handles:
        handle.remove()
    assert divide(1) == 1
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)


def test_handle_as_context_manager():
    divide = make_divide()
    with divide.post(lambda result, args, kwargs: "hooked"):
        assert divide(1) == "hooked"
    assert divide(1) == 1


def test_registration_methods_are_decorators():
    divide = make_divide()

    @divide.post
    def plus_one(result, args, kwargs):
        return result + 1

    @divide.post(priority="LOW")
    def doubled(result, args, kwargs):
        return result * 2

    assert divide(1) == 4
    assert plus_one(1, (), {}) == 2  # the handle still calls the hook
    plus_one.remove()
    doubled.remove()
    assert divide(1) == 1


@pytest.mark.parametrize("kind", ["pre", "post", "on_error"])
def test_once_every_and_when_apply_to_every_kind(kind):
    divide = make_divide()
    calls = {"once": 0, "every": 0, "when": 0}

    def counter(name):
        def hook(*_):
            calls[name] += 1
        return hook

    register = getattr(divide, kind)
    once = register(counter("once"), once=True)
    register(counter("every"), every=2)
    # each kind gets (x, args, kwargs) or (args, kwargs); args carry `a`
    register(counter("when"), when=lambda *hook_args: hook_args[-2][0] > 2)
    for a in range(1, 5):
        try:
            divide(a, 0 if kind == "on_error" else 1)
        except ZeroDivisionError:
            pass
    assert calls == {"once": 1, "every": 2, "when": 2}
    assert once.removed


def test_invalid_options_are_config_errors():
    divide = make_divide()
    with pytest.raises(ConfigError):
        divide.post(print, every=0)
    with pytest.raises(ConfigError):
        divide.pre(print, priority="soon")


# -- async -------------------------------------------------------------------------------------------
def test_async_function_with_sync_and_async_hooks():
    @hookable
    async def fetch(url):
        await asyncio.sleep(0)
        return f"<{url}>"

    async def pre(args, kwargs):
        return ((args[0] + "/index",), kwargs)

    fetch.pre(pre)
    fetch.post(lambda result, args, kwargs: result.upper())
    assert inspect.iscoroutinefunction(fetch.__wrapped__)
    assert asyncio.run(fetch("x")) == "<X/INDEX>"


def test_async_function_without_hooks():
    @hookable
    async def fetch(url):
        return url

    assert asyncio.run(fetch("x")) == "x"


def test_async_error_hooks_supply_a_fallback_or_let_it_propagate():
    @hookable
    async def fetch(url):
        raise ConnectionError(url)

    async def fallback(exc, args, kwargs):
        return "cached" if args[0] == "known" else None

    fetch.on_error(fallback)
    assert asyncio.run(fetch("known")) == "cached"
    with pytest.raises(ConnectionError):
        asyncio.run(fetch("other"))


def test_async_hook_errors_are_hook_errors():
    @hookable
    async def fetch(url):
        return url

    async def broken(result, args, kwargs):
        raise RuntimeError("post failed")

    fetch.post(broken)
    with pytest.raises(HookError) as info:
        asyncio.run(fetch("x"))
    assert info.value.hook is broken


def test_async_method():
    class Client:
        @hookable
        async def get(self, path):
            return path

    client = Client()
    client.get.post(lambda result, args, kwargs: result + "!")
    assert asyncio.run(client.get("a")) == "a!"
    assert asyncio.run(Client().get("a")) == "a"


def test_coroutine_hooks_on_a_sync_function_are_config_errors():
    divide = make_divide()

    async def hook(*_):
        return None

    for register in (divide.pre, divide.post, divide.on_error, Account().deposit.post):
        with pytest.raises(ConfigError, match="coroutine"):
            register(hook)
        with pytest.raises(ConfigError, match="coroutine"):
            register(priority="HIGH")(hook)
    assert divide(4, 2) == 2


# -- methods ------------------------------------------------------------------------------------------
def test_method_without_hooks():
    account = Account(10)
    assert account.deposit(5) == 15
    assert Account.deposit(account, 5) == 20


def test_class_hooks_apply_to_every_instance(account_hooks):
    account_hooks.append(Account.deposit.post(lambda result, args, kwargs: f"balance {result}"))
    assert Account(1).deposit(1) == "balance 2"
    assert Account(5).deposit(1) == "balance 6"


def test_instance_hooks_apply_to_that_instance_only():
    mine, yours = Account(), Account()
    handle = mine.deposit.post(lambda result, args, kwargs: "mine")
    assert isinstance(handle, HookHandle)
    assert mine.deposit(1) == "mine"
    assert yours.deposit(1) == 1
    assert Account().deposit(1) == 1
    handle.remove()
    assert mine.deposit(1) == 2


def test_class_hooks_run_before_instance_hooks_whatever_the_priority(account_hooks):
    log = []
    account = Account()
    account.deposit.pre(lambda args, kwargs: log.append("instance pre"), priority="HIGHEST")
    account.deposit.post(lambda result, args, kwargs: log.append("instance post"),
                         priority="HIGHEST")
    account_hooks.append(Account.deposit.pre(lambda args, kwargs: log.append("class pre"),
                                             priority="LOWEST"))
    account_hooks.append(Account.deposit.post(lambda result, args, kwargs: log.append("class post"),
                                              priority="LOWEST"))
    account.deposit(1)
    assert log == ["class pre", "instance pre", "class post", "instance post"]


def test_method_pre_hooks_receive_the_instance_first():
    account = Account()
    seen = []
    with account.deposit.pre(lambda args, kwargs: seen.append(args)):
        account.deposit(7)
    assert seen == [(account, 7)]


def test_instance_hooks_run_when_called_through_the_class():
    account = Account()
    account.deposit.post(lambda result, args, kwargs: "hooked")
    assert Account.deposit(account, 1) == "hooked"
    assert Account.deposit(Account(), 1) == 1


def test_a_stored_bound_method_sees_hooks_added_later(account_hooks):
    account = Account()
    deposit = account.deposit
    assert deposit(1) == 1
    account.deposit.post(lambda result, args, kwargs: "instance")
    assert deposit(1) == "instance"
    account_hooks.append(Account.deposit.pre(lambda args, kwargs: ((args[0], 100), {})))
    assert deposit(1) == "instance" and account.balance == 102


def test_instance_hooks_do_not_leak_to_deepcopies_or_pickles():
    account = Account(3)
    account.deposit.post(lambda result, args, kwargs: "hooked")
    clone = copy.deepcopy(account)
    restored = pickle.loads(pickle.dumps(account))
    assert clone.deposit(1) == 4
    assert restored.deposit(1) == 4
    assert account.deposit(1) == "hooked"


def test_hooking_an_instance_adds_nothing_to_it():
    account = Account()
    before = dict(vars(account))
    account.deposit.post(lambda result, args, kwargs: None)
    account.deposit.pre(lambda args, kwargs: None)
    assert vars(account) == before


def test_instance_hooks_do_not_keep_the_instance_alive():
    account = Account()
    ref = weakref.ref(account)
    account.deposit.post(lambda result, args, kwargs: None)
    del account
    gc.collect()
    assert ref() is None
    assert Account(1).deposit(1) == 2


def test_removing_the_hook_of_a_collected_instance_keeps_class_hooks_working():
    class Counter:
        @hookable
        def get(self):
            return 0

    Counter.get.post(lambda result, args, kwargs: "class")
    counter = Counter()
    handle = counter.get.post(lambda result, args, kwargs: "instance")
    del counter
    gc.collect()
    handle.remove()
    assert Counter().get() == "class"


def test_a_hook_on_an_instance_may_be_registered_through_a_decorator():
    account = Account()

    @account.deposit.on_error
    def refuse(exc, args, kwargs):
        return "refused"

    assert account.deposit("ten") == "refused"
    with pytest.raises(TypeError):
        Account().deposit("ten")


def test_instances_without_weak_references_cannot_be_hooked_one_by_one():
    with pytest.raises(ConfigError, match="weak references"):
        Slotted().get.post(lambda result, args, kwargs: 2)
    with Slotted.get.post(lambda result, args, kwargs: 2):  # the class still can
        assert Slotted().get() == 2
    assert Slotted().get() == 1


def test_subclass_inherits_hookable_methods(account_hooks):
    class Savings(Account):
        pass

    savings = Savings()
    savings.deposit.post(lambda result, args, kwargs: "savings")
    account_hooks.append(Account.deposit.pre(lambda args, kwargs: ((args[0], 2), {})))
    assert savings.deposit(1) == "savings" and savings.balance == 2
    assert Account().deposit(1) == 2


def test_hookable_functions_and_bound_methods_pickle_like_plain_ones():
    assert pickle.loads(pickle.dumps(module_level)) is module_level
    assert copy.deepcopy(module_level) is module_level
    account = Account(5)
    restored = pickle.loads(pickle.dumps(account.deposit))
    assert restored(1) == 6
    assert restored.__self__ is not account and account.balance == 5
