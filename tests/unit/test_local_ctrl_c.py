"""``sparkstorm local``'s first Ctrl-C is an event the progress view checks between
refreshes, never a KeyboardInterrupt inside a request to the workers (cli/local.py)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from cli.local import _ctrl_c_deferred

pytestmark = pytest.mark.timeout(30)


def test_sigint_inside_the_view_sets_the_event_and_the_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    with _ctrl_c_deferred() as interrupted:
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt here
        assert interrupted.wait(5)
    assert signal.getsignal(signal.SIGINT) is before  # a second Ctrl-C interrupts the drain


def test_outside_the_main_thread_nothing_is_installed() -> None:
    seen: list[object] = []

    def view() -> None:
        with _ctrl_c_deferred() as interrupted:
            seen.append(signal.getsignal(signal.SIGINT))
            seen.append(interrupted.is_set())

    thread = threading.Thread(target=view)
    thread.start()
    thread.join(5)
    assert seen == [signal.getsignal(signal.SIGINT), False]
