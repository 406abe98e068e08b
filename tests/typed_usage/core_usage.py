"""Typed user code of hookline.core, checked with ``mypy --strict`` (tests/test_packaging_typing.py).

Never run. Each ``# type: ignore[code]`` marks a mistake a type checker must
report: ``--strict`` warns about an ignore that is no longer needed, so a
signature that turns into ``Any`` fails the check, as does any other error.
"""

from __future__ import annotations

import hookline
from hookline import Event as TopLevelEvent
from hookline import hookable as top_level_hookable
from hookline.core import Event, HandleGroup, HookHandle, Skip, hookable, observe, observed

# --- events ------------------------------------------------------------------------------
saved = Event("saved")
handle: HookHandle = saved.register(lambda path: f"uploaded {path}")


@saved.register(priority=90)
def log(path: str) -> str:
    return f"logged {path}"


def log_again(path: str) -> str:
    log.remove()  # the decorated name is the handle ...
    return log(path)  # ... and calls the function, with its signature


log(42)  # type: ignore[arg-type]


def new_event() -> Event:
    return hookline.Event("made")  # the lazy top-level names are typed


first: TopLevelEvent = saved

# --- @hookable functions ---------------------------------------------------------------------


@hookable
def divide(a: float, b: float) -> float:
    return a / b


@top_level_hookable
def negate(x: int) -> int:
    return -x


def halves(x: float) -> float:
    return divide(x, 2) + negate(1)  # float, not Any: --strict reports returning Any


divide("not", "numbers")  # type: ignore[arg-type]
divide(1)  # type: ignore[call-arg]
post: HookHandle = divide.post(lambda result, args, kwargs: round(result, 2))
divide.pre(lambda args, kwargs: Skip(0.0))


@divide.on_error
def infinite(exc: Exception, args: tuple[object, ...], kwargs: dict[str, object]) -> float:
    return float("inf")


def still_a_function(exc: Exception) -> float:
    infinite.remove()
    return infinite(exc, (), {})


# --- methods and observed attributes ----------------------------------------------------------


class Account:
    balance = observed(0)
    owner: observed[str] = observed()

    @hookable
    def deposit(self, amount: int) -> int:
        self.balance += amount
        return self.balance

    @hookable
    @staticmethod
    def fee(amount: int) -> int:
        return amount // 100


account = Account()


def deposit_five(target: Account) -> int:
    return target.deposit(5)  # the bound method drops self


def fees() -> int:
    # (no account.fee(300): mypy reads @hookable above @staticmethod as a plain method's)
    return Account.fee(300) + Account.deposit(account, 1)


def owner_name(target: Account) -> str:
    return target.owner


account.deposit("five")  # type: ignore[arg-type]
account.balance = "lots"  # type: ignore[assignment]
class_hook: HookHandle = Account.deposit.post(lambda result, args, kwargs: None)
instance_hook: HookHandle = account.deposit.pre(lambda args, kwargs: None)
static_hook: HookHandle = Account.fee.post(lambda result, args, kwargs: None)
watch: HookHandle = observe(account, "balance", lambda obj, name, old, new: None)

# --- handles ------------------------------------------------------------------------------------
group = HandleGroup()
kept: HookHandle = group.add(handle)
