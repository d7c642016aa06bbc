"""A bolt task's failed inputs: tried again without blocking, then dead-lettered or failed.

When a bolt's code raises on an input (``execute``, ``process``, ``execute_batch``, an
async call, a window's firing, a sink's write of a row), its task's :class:`TaskFailures`
asks the component's :class:`~.failure_policy.FailurePolicy`:

* another attempt: the input is *parked* in the worker's :class:`Parking` until it is due
  (topology time) — the task goes on with its other input meanwhile, and the executor runs
  the due attempts at each turn; while the parking is full (:meth:`Parking.full`) it holds
  the spouts back, its own and its peers'.  Output from the attempts that raised stands
  (emits are anchored to the input; state writes are kept);
* attempts spent, ``dead_letter``: the input's values and the error go to the task's
  dead-letter stream (:data:`~topology.constants.DEAD_LETTER_STREAM`), anchored to the
  input, and the input is acked — its tree completes once the dead letter is handled.
  When nobody subscribes to the stream the letter is counted, reported as the component's
  error (rate-limited, as every error) and dropped.  An input that is itself a dead letter
  is never dead-lettered again (a bolt subscribed to its own dead letters, or two to each
  other's, would loop for ever): its error is reported and it is dropped and acked;
* attempts spent, ``fail``: the input is failed, as an error always failed it before (a
  replay from the spout, or in a checkpointed topology a rollback).

A parked input belongs to its checkpoint epoch: when a barrier aligns at the task, the
checkpoint agent first calls :meth:`TaskFailures.settle`, which runs the attempts left at
once, so everything the input leads to goes before the barrier; an async task's barrier
waits for them instead (:mod:`~topology.runtime.tasks.async_inputs`, :meth:`Parking.hurry`).
A rollback drops every parked input: the replay brings it back.  Tick tuples are never
retried: their error is reported, as always.

Everything runs on the executor thread.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acker.protocol import clip_text
from topology.constants import DEAD_LETTER_STREAM
from topology.errors import DataError, EmitError
from topology.failure_policy import MAX_ERROR_CHARS, FailurePolicy, dead_letter
from topology.tuple import Tuple

from .collector import BoltCollector

#: Exception classes.
ErrorClasses = tuple[type[BaseException], ...]
#: ``rerun(tup, attempt)``: attempt number ``attempt`` at ``tup`` (raises what the bolt's
#: code raised; an async task's call reports its outcome later, with that number); False
#: when it cannot be made now (an async task at capacity): it stays parked.
Rerun = Callable[[Tuple, int], bool]
#: ``also(tup, error)`` when an input is given up on, before the dead letter (an async
#: bolt's ``error_stream``); True when that counts as someone hearing of it.
GaveUp = Callable[[Tuple, BaseException], bool]


#: How long an attempt that could not be made (its async task at capacity) waits.
NOT_NOW_SECS = 0.001


@dataclass(order=True, slots=True)
class Parked:
    """One input waiting for its next attempt (ordered by ``due``, then arrival)."""

    due: float
    seq: int
    task: int = field(compare=False)
    tup: Tuple = field(compare=False)
    #: Attempts made so far, every one of which raised.
    attempts: int = field(compare=False)
    failures: TaskFailures = field(compare=False)


class Parking:
    """Every parked input of one worker, by due time (pure: the times are given)."""

    def __init__(self) -> None:
        self._heap: list[Parked] = []
        self._seq = 0
        #: Task -> its inputs parked here.
        self._by_task: dict[int, int] = {}
        self._full = False

    def __len__(self) -> int:
        return len(self._heap)

    @property
    def next_due(self) -> float:
        """When the first parked input is due (``inf``: none is parked)."""
        heap = self._heap
        return heap[0].due if heap else math.inf

    def full(self, limit: int) -> bool:
        """Whether ``limit`` inputs or more are parked, and until fewer than half of it are
        (the executor holds the spouts, and asks its peers to hold theirs, meanwhile: a
        flood of failures must not park without bound)."""
        parked = len(self._heap)
        if parked >= limit:
            self._full = True
        elif parked < limit // 2:
            self._full = False
        return self._full

    def holds(self, task: int) -> int:
        """How many inputs of ``task`` are parked."""
        return self._by_task.get(task, 0)

    def park(self, due: float, task: int, tup: Tuple, attempts: int, owner: TaskFailures) -> None:
        """Keep ``tup`` of ``task`` until ``due``."""
        self._seq += 1
        heapq.heappush(self._heap, Parked(due, self._seq, task, tup, attempts, owner))
        self._by_task[task] = self._by_task.get(task, 0) + 1

    def take_due(self, now: float, limit: int = 1_000_000) -> list[Parked]:
        """The inputs due at ``now`` (at most ``limit``), in due order, no longer parked."""
        heap = self._heap
        out: list[Parked] = []
        while heap and heap[0].due <= now and len(out) < limit:
            out.append(self._forget(heapq.heappop(heap)))
        return out

    def take_task(self, task: int) -> list[Parked]:
        """Every input of ``task``, in due order, no longer parked."""
        if not self._by_task.get(task):
            return []
        mine = sorted(p for p in self._heap if p.task == task)
        self._heap = [p for p in self._heap if p.task != task]
        heapq.heapify(self._heap)
        return [self._forget(p) for p in mine]

    def run_due(self, now: float, limit: int, busy: Callable[[int | None], None]) -> bool:
        """Make the next attempt at each input due at ``now`` (at most ``limit``; the rest
        at the next call), telling ``busy`` which task runs (None: none); whether any
        attempt was made.  One that cannot be made now (an async task at capacity) is due
        again :data:`NOT_NOW_SECS` later: the executor waits for it, never spins."""
        later = []
        due = self.take_due(now, limit)
        for parked in due:
            busy(parked.task)
            try:
                if not parked.failures.retry(parked):
                    later.append(parked)
            except Exception as exc:  # giving up must never take the worker down
                parked.failures.collector.report_error(exc)
        busy(None)
        for parked in later:
            parked.due = max(parked.due, now + NOT_NOW_SECS)
            self.put_back(parked)
        return len(later) < len(due)

    def put_back(self, parked: Parked) -> None:
        """Park again, as it was, an input whose attempt could not be made."""
        heapq.heappush(self._heap, parked)
        self._by_task[parked.task] = self._by_task.get(parked.task, 0) + 1

    def hurry(self, task: int) -> None:
        """Make every input of ``task`` due now (a barrier waits for them)."""
        if not self._by_task.get(task):
            return
        for parked in self._heap:
            if parked.task == task:
                parked.due = -math.inf
        heapq.heapify(self._heap)

    def drop(self) -> int:
        """Forget every parked input (a rollback: the replay brings them back); how many."""
        dropped = len(self._heap)
        self._heap.clear()
        self._by_task.clear()
        return dropped

    def _forget(self, parked: Parked) -> Parked:
        left = self._by_task[parked.task] - 1
        if left:
            self._by_task[parked.task] = left
        else:
            del self._by_task[parked.task]
        return parked


class TaskFailures:
    """What one bolt task does with an input its code raised on (module docstring).

    ``rerun`` makes one more attempt (the task's ``execute`` / ``process`` path);
    ``clock`` is topology time (the due times of :class:`Parking`), ``wall_clock`` the
    time a dead letter carries; ``also`` is called when an input is given up on;
    ``data_errors()`` are the exception classes, beside :class:`DataError`, that no
    attempt gets past (no retries: the input is given up on at once).
    """

    def __init__(
        self,
        *,
        collector: BoltCollector,
        policy: FailurePolicy,
        parking: Parking,
        rerun: Rerun,
        clock: Callable[[], float],
        wall_clock: Callable[[], float] = time.time,
        also: GaveUp | None = None,
        data_errors: Callable[[], ErrorClasses] = tuple,
    ) -> None:
        self.collector = collector
        self.policy = policy
        self.parking = parking
        self._rerun = rerun
        self._clock = clock
        self._wall_clock = wall_clock
        self._also = also
        self._data_errors = data_errors
        self.task = collector.task
        #: Attempts made after a first one raised (stats: ``retried``).
        self.retried = 0
        self._reported: BaseException | str | None = None

    def failed(
        self,
        tup: Tuple,
        error: BaseException,
        attempts: int = 1,
        *,
        retry: bool = True,
        ack: bool = True,
    ) -> None:
        """Attempt number ``attempts`` at ``tup`` raised ``error``: park it for the next
        attempt (unless ``retry`` is False: a data error, which another attempt would meet
        again), else give up on it (:meth:`give_up`; ``ack`` False: the input is acked by
        its bolt later, as a windowed bolt does when it leaves its windows)."""
        if tup.is_tick():  # a tick carries no record: its error is reported, as always
            self.collector.report_error(error)
            return
        if tup.id is not None and tup.anchors is None:  # acked or failed before it raised
            self.collector.report_error(error)
            return
        retry = retry and not self.final(error)
        delay = self.policy.next_attempt_in(attempts) if retry else None
        if delay is None:
            self.give_up(tup, error, attempts, ack=ack)
            return
        if tup.id is not None:  # its tree's timeout restarts: the pauses add up to no limit
            self.collector.reset_timeout(tup)
        self.parking.park(self._clock() + delay, self.task, tup, attempts, self)

    def final(self, error: BaseException) -> bool:
        """Whether another attempt would meet ``error`` again: a :class:`DataError`, an
        emit refused (:class:`EmitError`: values no stream takes), or one of the bolt's
        ``data_errors`` (a connector's client's classes)."""
        return isinstance(error, (DataError, EmitError, *self._data_errors()))

    def give_up(
        self, tup: Tuple, error: BaseException | str, attempts: int, *, ack: bool = True
    ) -> None:
        """``tup``'s attempts are spent: the policy's action (module docstring)."""
        heard = False
        if self._also is not None and isinstance(error, BaseException):
            try:
                heard = self._also(tup, error)
            except Exception as exc:  # (values no stream takes): the dead letter still goes
                self.collector.report_error(exc)
        if self.policy.dead_letters:
            self.dead_letter(tup, error, attempts, ack=ack, heard=heard)
            return
        if not heard:
            self._report(error)
        self.collector.fail_on_error(tup, error)

    def dead_letter(
        self,
        tup: Tuple,
        error: BaseException | str,
        attempts: int = 1,
        *,
        ack: bool = True,
        heard: bool = False,
    ) -> None:
        """Send ``tup`` and ``error`` to the dead-letter stream (anchored to ``tup``), then
        ack ``tup`` (unless ``ack`` is False).  With nobody subscribed the letter is counted
        and the error reported with what to do — unless ``heard``."""
        collector = self.collector
        source = tup.source
        if source.stream == DEAD_LETTER_STREAM:  # a letter of a letter could loop for ever
            note = (
                f"{collector.component}: gave up on a dead letter from {source.component} "
                f"after {attempts} attempt(s) and dropped it (a dead letter is never "
                "dead-lettered again)"
            )
            self._report(_noted(error, note))
            if ack:
                collector.ack(tup)
            return
        route = collector.routes.get(DEAD_LETTER_STREAM)
        subscribed = route is not None and bool(route.targets)
        letter = dead_letter(
            component=collector.component,
            task=self.task,
            source=source.component,
            stream=source.stream,
            values=tup.values,
            error=error,
            attempts=attempts,
            time=self._wall_clock(),
            traceback=subscribed,
        )
        if route is not None:  # (a component added past validation has none: reported)
            try:  # (nobody subscribed: only counted)
                collector.emit(letter, tup, DEAD_LETTER_STREAM)
            except EmitError:  # values no wire can carry (never sent anywhere before): as text
                letter[4] = [clip_text(repr(v), MAX_ERROR_CHARS) for v in tup.values]
                collector.emit(letter, tup, DEAD_LETTER_STREAM)
        if not subscribed and not heard:
            self._report(_unheard(error, collector.component, source, attempts))
        if ack:
            collector.ack(tup)

    def _report(self, error: BaseException | str) -> None:
        """Report ``error``, once when several inputs fail with one exception (a batch, a
        window)."""
        if error is not self._reported:
            self._reported = error
            self.collector.report_error(error)

    def retry(self, parked: Parked) -> bool:
        """Make the next attempt at a parked input; False when it cannot be made now (park
        it again as it was).  An attempt that raises goes back through :meth:`failed`."""
        tup = parked.tup
        try:
            if not self._rerun(tup, parked.attempts + 1):
                return False
        except Exception as exc:
            self.retried += 1
            self.failed(tup, exc, parked.attempts + 1)
            return True
        self.retried += 1
        return True

    def settle(self) -> int:
        """Run every attempt left of this task's parked inputs now, until each succeeded or
        was given up on (a barrier aligned at the task); how many attempts that made."""
        parking, settled = self.parking, 0
        while parking.holds(self.task):
            for parked in parking.take_task(self.task):
                settled += 1
                if not self.retry(parked):  # (no async task: its barrier waited for them)
                    self.give_up(parked.tup, "no room for another attempt", parked.attempts)
        return settled


def _unheard(error: BaseException | str, component: str, source: Any, attempts: int) -> Any:
    """``error``, noted with what became of its input and the fix (what is reported when
    nobody subscribes to the dead-letter stream)."""
    note = (
        f"{component}: gave up on an input from {source.component}:{source.stream} after "
        f"{attempts} attempt(s) and dropped it: nothing subscribes to {component!r}'s "
        f"dead-letter stream ({DEAD_LETTER_STREAM!r}); subscribe a bolt or a sink to it "
        "(.dead_letters() takes every component's), or set topology.errors.action: fail "
        "to replay such inputs instead"
    )
    return _noted(error, note)


def _noted(error: BaseException | str, note: str) -> Any:
    """``error`` with ``note`` added (once), as it is reported."""
    if isinstance(error, BaseException):
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)
        return error
    return f"{error}\n{note}"
