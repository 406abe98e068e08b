"""StopRequest records SIGTERM / SIGINT while active and puts the previous handlers back;
TrainingInterrupted is the SystemExit a signalled run ends with."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from hookline.engine import TrainingInterrupted
from hookline.engine.signals import StopRequest


def wait_for(predicate) -> None:
    """Python runs signal handlers between bytecodes of the main thread: give it a moment."""
    for _ in range(1000):
        if predicate():
            return
        time.sleep(0.001)


@pytest.fixture
def own_handlers():
    """Known handlers for SIGTERM and SIGINT during the test, the real ones back after it."""
    received: list[int] = []

    def previous(signum, frame):
        received.append(signum)

    saved = {s: signal.signal(s, previous) for s in (signal.SIGTERM, signal.SIGINT)}
    yield previous, received
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_sigterm_to_the_own_process_is_recorded_and_the_handler_restored(own_handlers):
    previous, received = own_handlers
    with StopRequest() as stop:
        assert stop.signum is None and stop.name == ""
        assert signal.getsignal(signal.SIGTERM) is not previous
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for(lambda: stop.signum is not None)
        assert stop.signum == signal.SIGTERM and stop.name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is previous
    assert signal.getsignal(signal.SIGINT) is previous
    assert received == []  # the process was not terminated, nor the old handler called
    os.kill(os.getpid(), signal.SIGTERM)
    wait_for(lambda: received)
    assert received == [signal.SIGTERM]  # after the block, the previous handler gets it


def test_handlers_are_restored_when_the_block_raises(own_handlers):
    previous, _ = own_handlers
    with pytest.raises(RuntimeError), StopRequest():
        raise RuntimeError("training failed")
    assert signal.getsignal(signal.SIGTERM) is previous
    assert signal.getsignal(signal.SIGINT) is previous


def test_a_first_sigint_is_recorded_and_a_second_interrupts(own_handlers):
    with StopRequest() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        wait_for(lambda: stop.signum is not None)
        assert stop.signum == signal.SIGINT and stop.name == "SIGINT"
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            wait_for(lambda: False)


def test_outside_the_main_thread_no_handler_is_installed(own_handlers):
    previous, _ = own_handlers
    errors: list[BaseException] = []
    inside: list[object] = []

    def run():
        try:
            with StopRequest() as stop:
                inside.append(signal.getsignal(signal.SIGTERM))
                assert stop.signum is None
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert errors == [] and inside == [previous]
    assert signal.getsignal(signal.SIGTERM) is previous


def test_training_interrupted_is_a_system_exit_with_128_plus_the_signal():
    exc = TrainingInterrupted(signal.SIGTERM, "work/iter_7.pth", "stopped by SIGTERM")
    assert isinstance(exc, SystemExit) and not isinstance(exc, Exception)
    assert exc.code == 128 + signal.SIGTERM and exc.signum == signal.SIGTERM
    assert exc.checkpoint == "work/iter_7.pth" and str(exc) == "stopped by SIGTERM"
