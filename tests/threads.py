"""Helpers of the thread-safety tests: fast thread switching and threads started together."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import pytest


@pytest.fixture(autouse=True)
def fast_switching():
    """``sys.setswitchinterval(1e-6)``: threads switch about every bytecode-sized slice, so races
    happen in a fraction of a second. Import it into a test module to apply it there."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def run_threads(target: Callable[[int], object], count: int) -> None:
    """Run ``target(index)`` in ``count`` threads started together; re-raise the first error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def body(index: int) -> None:
        try:
            barrier.wait()
            target(index)
        except BaseException as exc:  # re-raised below, in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
