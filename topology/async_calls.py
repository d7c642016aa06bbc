"""In-flight coroutine calls of one task: an asyncio loop in its own thread, bounded.

:class:`AsyncCalls` is the engine under :class:`~topology.async_bolt.AsyncBolt`.  Its
contract, by thread:

* The **owner** (the executor thread: every method below but the loop's own) submits calls
  (:meth:`AsyncCalls.submit`), takes the outcomes that may be handled now
  (:meth:`AsyncCalls.ready`) and handles them itself; nothing of the owner's (a collector)
  is ever touched from the loop thread.
* The **loop thread** (started on the first submit, a daemon) runs the coroutines and, as
  each finishes, files it in a thread-safe deque and sets an event; it never calls back
  into the owner.
* At most ``capacity`` calls are in flight (submitted and not yet returned by ``ready``);
  :meth:`AsyncCalls.room` says how many more may be submitted, and submitting past it
  raises: the owner must stop taking input instead of queueing it.
* ``ordered``: :meth:`AsyncCalls.ready` returns outcomes in submission order (a finished
  call waits for every earlier one); otherwise in completion order.
* A call not finished ``timeout_secs`` after it was submitted, on the clock the owner
  passes (topology time: a test with simulated time times calls out by advancing it), is
  returned by ``ready`` with an :class:`AsyncCallTimeout` and cancelled on the loop; what
  it returns later is ignored.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import deque
from collections.abc import Awaitable
from functools import partial
from typing import Any

#: (key given to submit, the coroutine's result or None, the exception or None).
Outcome = tuple[Any, Any, BaseException | None]


class AsyncCallTimeout(TimeoutError):
    """A call was still running ``timeout_secs`` after it was submitted."""


class _Call:
    """One submitted call: written by the loop thread until ``done``, then read only."""

    __slots__ = ("key", "deadline", "awaitable", "done", "result", "error", "settled", "task")

    def __init__(self, key: Any, deadline: float, awaitable: Awaitable[Any]) -> None:
        self.key = key
        self.deadline = deadline
        self.awaitable: Awaitable[Any] | None = awaitable
        self.done = False  # set by the loop thread once result / error are in place
        self.result: Any = None
        self.error: BaseException | None = None
        self.settled = False  # owner only: returned by ready (or dropped)
        self.task: asyncio.Task[Any] | None = None  # loop thread only


class AsyncCalls:
    """Up to ``capacity`` coroutine calls in flight on a private asyncio loop (see the
    module docstring for the threading contract).  ``name`` names the loop thread."""

    def __init__(
        self, name: str, *, capacity: int, ordered: bool = True, timeout_secs: float = 5.0
    ) -> None:
        check_settings(capacity, timeout_secs)
        self.name = name
        self.capacity = capacity
        self.ordered = ordered
        self.timeout_secs = float(timeout_secs)
        self.in_flight = 0
        self.timeouts = 0
        self._order: deque[_Call] = deque()  # unsettled calls (and, unordered, settled ones)
        self._finished: deque[_Call] = deque()  # filed by the loop thread as they finish
        self._to_start: deque[_Call] = deque()  # submitted, not yet given to the loop
        self._kicked = False
        self._wake = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()  # loop thread only

    # -- the owner's side -------------------------------------------------------------

    def room(self) -> int:
        """How many more calls may be submitted now (0 at capacity)."""
        return self.capacity - self.in_flight

    def submit(self, key: Any, awaitable: Awaitable[Any], now: float) -> None:
        """Run ``awaitable`` on the loop; its outcome comes back from :meth:`ready` with
        ``key``.  ``now`` is the owner's clock (the call times out at ``now +
        timeout_secs``).  Raises ``TypeError`` for something that cannot be awaited, and
        ``RuntimeError`` at capacity (the awaitable is closed, never run)."""
        if not inspect.isawaitable(awaitable):
            raise TypeError(
                f"expected an awaitable (an async def's coroutine), got {type(awaitable).__name__}"
            )
        if self.in_flight >= self.capacity:
            _close(awaitable)
            raise RuntimeError(f"{self.name}: {self.capacity} calls in flight already")
        loop = self._loop if self._loop is not None else self._start()
        call = _Call(key, now + self.timeout_secs, awaitable)
        self._order.append(call)
        self.in_flight += 1
        self._to_start.append(call)
        if not self._kicked:
            self._kicked = True
            loop.call_soon_threadsafe(self._start_calls)

    def ready(self, now: float) -> list[Outcome]:
        """The outcomes that may be handled now, in the order to handle them: finished
        calls (in submission order when ``ordered``), and calls past their deadline at
        ``now`` with an :class:`AsyncCallTimeout`.  They no longer count as in flight."""
        self._wake.clear()
        out: list[Outcome] = []
        order = self._order
        if self.ordered:
            self._finished.clear()  # the flags on the calls say what finished
            while order and (order[0].done or order[0].deadline <= now):
                out.append(self._settle(order.popleft()))
        else:
            finished = self._finished
            while finished:
                call = finished.popleft()
                if not call.settled:
                    out.append(self._settle(call))
            while order and (order[0].settled or order[0].deadline <= now):
                call = order.popleft()
                if not call.settled:
                    out.append(self._settle(call))
        self.in_flight -= len(out)
        return out

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until a call finishes after the last
        :meth:`ready`; True if one did (tests and the owner's idle waits use it)."""
        return self._wake.wait(timeout)

    def next_deadline(self) -> float | None:
        """When the oldest call in flight times out (owner's clock); None: none in flight."""
        for call in self._order:
            if not call.settled:
                return call.deadline
        return None

    def drop(self) -> int:
        """Forget every call in flight (a rollback): they are cancelled, their outcomes are
        never returned.  Returns how many there were."""
        dropped = self.in_flight
        calls = [call for call in self._order if not call.settled]
        for call in calls:
            call.settled = True  # one not started yet is skipped by _start_calls
            call.key = call.result = call.error = None
        self._order.clear()
        self._finished.clear()
        self.in_flight = 0
        if self._loop is not None and calls:
            # only these: a call submitted after the drop must run (it may be started by
            # the same loop turn as the cancellation)
            self._loop.call_soon_threadsafe(self._cancel_calls, calls)
        return dropped

    def close(self, timeout: float = 2.0) -> None:
        """Cancel what is in flight, stop the loop and wait up to ``timeout`` for its thread."""
        self.drop()
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    def _settle(self, call: _Call) -> Outcome:
        """The call's outcome; the call keeps nothing of it (unordered calls settled behind
        a slow one stay in ``_order`` until it settles: they must not hold their results)."""
        call.settled = True
        if call.done:
            outcome: Outcome = (call.key, call.result, call.error)
        else:
            self.timeouts += 1
            loop = self._loop
            if loop is not None:
                loop.call_soon_threadsafe(self._cancel_calls, [call])
            error = AsyncCallTimeout(f"call not finished within {self.timeout_secs:g} s")
            outcome = (call.key, None, error)
        call.key = call.result = call.error = None
        return outcome

    def _start(self) -> asyncio.AbstractEventLoop:
        loop = self._loop = asyncio.new_event_loop()
        thread = self._thread = threading.Thread(
            target=self._run_loop, args=(loop,), name=f"sparkstorm-async-{self.name}", daemon=True
        )
        thread.start()
        return loop

    # -- the loop thread --------------------------------------------------------------

    def _run_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            for task in self._tasks:
                task.cancel()
            if self._tasks:
                loop.run_until_complete(asyncio.wait(self._tasks, timeout=1.0))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def _start_calls(self) -> None:
        self._kicked = False  # before taking: a submit after this kicks again
        to_start = self._to_start
        while to_start:
            call = to_start.popleft()
            awaitable, call.awaitable = call.awaitable, None
            assert awaitable is not None
            if call.settled:  # dropped or timed out before it started: never run it
                _close(awaitable)
                continue
            task = asyncio.ensure_future(awaitable)
            call.task = task
            self._tasks.add(task)
            task.add_done_callback(partial(self._finish, call))

    def _finish(self, call: _Call, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            call.error = AsyncCallTimeout("cancelled")
        elif task.exception() is not None:  # the call's own error: its input fails with it
            call.error = task.exception()
        else:
            call.result = task.result()
        call.done = True
        self._finished.append(call)
        self._wake.set()

    def _cancel_calls(self, calls: list[_Call]) -> None:
        for call in calls:
            if call.task is not None:
                call.task.cancel()


def check_settings(capacity: Any, timeout_secs: Any) -> None:
    """Raise ``ValueError`` unless ``capacity`` is an int >= 1 and ``timeout_secs`` > 0."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
    if isinstance(timeout_secs, bool) or not isinstance(timeout_secs, int | float):
        raise ValueError(f"timeout_secs must be a number of seconds, got {timeout_secs!r}")
    if not timeout_secs > 0:
        raise ValueError(f"timeout_secs must be > 0, got {timeout_secs!r}")


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()  # a coroutine never awaited: no "never awaited" warning
