"""Reading worker replies, shared by every cluster front end: quiescence detection over
status replies (a topology drained for tests, nothing left in flight before a deactivated
topology is stopped or moved), and merging ``collect`` replies."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

from .progress import Steps

#: Seconds every active spout must have emitted nothing before a topology counts as drained
#: (a spout that sleeps between emits, as Storm spouts often do, is not done); the default
#: of ``topology.drain.quiet.secs``.
DRAIN_QUIET_SECS = 0.5


#: Spout tasks named when a drain waits for pending tuple trees.
PENDING_SHOWN = 4
#: Seconds between two looks at a deactivated topology's workers (:func:`wait_in_flight`).
IN_FLIGHT_LOOK_SECS = 0.25


class Drain(NamedTuple):
    """One look at a topology's status replies: ``snapshot`` (spout emits, transferred,
    executed) when it looks drained, else None and ``waiting_for`` says why not."""

    snapshot: tuple[int, int, int] | None
    waiting_for: str


def unbalanced_links(replies: list[dict[str, Any]]) -> list[str]:
    """Peer links whose two ends disagree: tuples a worker sent to a peer that the peer has
    not received (still on the wire, or lost), e.g. ``"worker 0 -> 1: 1,200 sent, 1,150
    received"``.  Workers that do not report ``links`` are skipped."""
    received = {
        reply.get("worker"): reply["links"]["received"] for reply in replies if "links" in reply
    }
    out = []
    for reply in replies:
        if "links" not in reply:
            continue
        me = reply.get("worker")
        for peer, sent in sorted(reply["links"]["sent"].items()):
            theirs = received.get(int(peer))
            if theirs is None:
                continue
            got = theirs.get(str(me), 0)
            if got < sent:  # more received than sent: forged frames that passed the door
                out.append(f"worker {me} -> {peer}: {sent:,} sent, {got:,} received")
    return out


def drain_snapshot(
    replies: list[dict[str, Any]],
    exact: bool = True,
    quiet: float = 0.0,
    deactivated: bool = False,
) -> Drain:
    """Drained when nothing is buffered or pending, every active spout has emitted nothing
    for ``quiet`` seconds and (``exact``) every peer link balances and every transferred
    tuple was executed.

    ``deactivated``: the topology was deactivated and nothing may be left in flight
    (:func:`wait_in_flight`): every spout must have stopped, no checkpoint may be in
    progress or owe a spout its acks, and the snapshot leaves out system traffic (the
    checkpoints a deactivated topology goes on taking)."""
    emits = transferred = executed = buffered = pending = 0
    system = [0, 0]  # transferred, executed
    pending_at: list[str] = []  # "spout task 3 on worker 0: 12"
    for reply in replies:
        worker = reply.get("worker", "?")
        spouts_quiet = reply.get("spouts_quiet_secs")
        if deactivated and spouts_quiet is not None:
            return Drain(None, f"worker {worker}'s spouts to stop")
        if spouts_quiet is not None and spouts_quiet < quiet:
            return Drain(None, f"worker {worker}'s spouts emitted {spouts_quiet:.2f}s ago")
        emits += reply["spout_emits"]
        buffered += reply["buffered"]
        system[0] += reply["system"]["transferred"]
        system[1] += reply["system"]["executed"]
        for task_id, task in reply["tasks"].items():
            transferred += sum(task["transferred"].values())
            executed += task["executed"]
            if task.get("pending"):
                pending += task["pending"]
                component = task.get("component", "?")
                pending_at.append(
                    f"{component} task {task_id} on worker {worker}: {task['pending']:,}"
                )
    if not deactivated:
        transferred, executed = transferred + system[0], executed + system[1]
    if buffered:
        return Drain(None, f"{buffered:,} tuples or frames buffered in workers")
    if pending:
        shown = "; ".join(pending_at[:PENDING_SHOWN])
        more = (
            f"; {len(pending_at) - PENDING_SHOWN} more" if len(pending_at) > PENDING_SHOWN else ""
        )
        return Drain(None, f"{pending:,} tuple trees pending ({shown}{more})")
    checkpoint = checkpoint_busy(replies) if deactivated else None
    if checkpoint is not None:
        return Drain(None, checkpoint)
    if exact:
        links = unbalanced_links(replies)
        if links:
            return Drain(None, "; ".join(links))
        if transferred > executed:  # (executed above it: forged tuples that got in)
            return Drain(None, f"{transferred:,} tuples transferred, {executed:,} executed")
    return Drain((emits, transferred, executed), "")


def checkpoint_busy(replies: list[dict[str, Any]]) -> str | None:
    """What checkpointing still does that a stop must wait for (a checkpoint or a
    recovery in progress, a worker paused, spout msg ids acked only once the next
    checkpoint commits), or None."""
    parts = [reply["checkpoints"] for reply in replies if reply.get("checkpoints")]
    coordinator: dict[str, Any] = next((p["coordinator"] for p in parts if "coordinator" in p), {})
    waiting = sum(int(p.get("waiting_acks") or 0) for p in parts)
    if coordinator.get("recovering") or any(p.get("paused") for p in parts):
        return "a recovery to a checkpoint"
    if waiting:
        return f"{waiting:,} spout msg ids acked when the next checkpoint completes"
    if coordinator.get("in_progress"):
        return "the checkpoint in progress"
    return None


class Quiescence:
    """Successive looks at a topology's status replies (:func:`drain_snapshot` with
    ``quiet`` and ``deactivated``): quiet once the same drained snapshot was seen twice in
    a row, five times when the counters cannot balance (``exact`` False: after a worker
    restart, or a rollback whose dropped tuples are never executed)."""

    def __init__(self, quiet: float = 0.0, deactivated: bool = False) -> None:
        self.quiet = quiet
        self.deactivated = deactivated
        #: Why the last look was not quiet ("" when it was, or when the counters moved).
        self.waiting_for = ""
        self._previous: tuple[int, int, int] | None = None
        self._stable = 0

    def look(self, replies: list[dict[str, Any]], exact: bool) -> bool:
        """Whether the topology is quiet after this look at ``replies``."""
        exact = exact and not rolled_back(replies)
        snapshot, self.waiting_for = drain_snapshot(replies, exact, self.quiet, self.deactivated)
        same = snapshot is not None and snapshot == self._previous
        self._stable = self._stable + 1 if same else 0
        self._previous = snapshot
        return self._stable >= (1 if exact else 4)

    def busy(self, waiting_for: str) -> None:
        """A look that could not be taken (a late answer): the next look starts over."""
        self.waiting_for = waiting_for
        self._previous = None
        self._stable = 0


def wait_until_drained(
    status: Callable[[], list[dict[str, Any]]],
    exact: Callable[[], bool],
    check: Callable[[], None],
    timeout: float,
    interval: float,
    what: str,
    quiet: float = DRAIN_QUIET_SECS,
    late: tuple[type[Exception], ...] = (),
) -> None:
    """Poll ``status()`` until two consecutive identical drained snapshots (five when not
    ``exact()``, i.e. after a worker restart whose lost tuples never balance the counters),
    taken while every active spout has emitted nothing for ``quiet`` seconds.

    ``check()`` raises when the topology broke; ``TimeoutError`` after ``timeout`` seconds,
    saying what it was still waiting for.  A ``status()`` raising one of ``late`` (a worker
    that did not answer in time: it may be busy on a loaded machine) counts as a look that
    found the topology busy, not as a failure: only ``timeout`` ends the wait.
    """
    deadline = time.monotonic() + timeout
    quiescence = Quiescence(quiet)
    while True:
        check()
        try:
            replies = status()
        except late as exc:
            quiescence.busy(f"a status answer ({exc})")
        else:
            if quiescence.look(replies, exact()):
                return
        if time.monotonic() > deadline:
            why = quiescence.waiting_for or "the counters were still changing"
            raise TimeoutError(f"{what} did not drain within {timeout:g}s (waiting for: {why})")
        time.sleep(interval)


def wait_in_flight(
    status: Callable[[], list[dict[str, Any]]],
    seconds: float,
    *,
    exact: Callable[[], bool] = lambda: True,
    still: Callable[[], bool] = lambda: True,
    steps: Steps | None = None,
    interval: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] | None = None,
) -> bool:
    """Wait, at most ``seconds``, while a deactivated topology has anything in flight.

    Looks at ``status()`` (every worker's status reply; an exception counts as a look
    that found the topology busy: a worker that does not answer may be working) every
    ``interval`` seconds (default :data:`IN_FLIGHT_LOOK_SECS`) until nothing is left —
    every spout stopped, nothing buffered, no tuple tree pending, no checkpoint in
    progress or owing a spout its acks, the same counters in two looks in a row
    (:class:`Quiescence`) — and returns True; returns False after ``seconds``, or at once
    when ``still()`` says the wait is over anyway (the topology was removed, the nimbus
    moved on).  ``steps`` hears what it still waits for, as updates with the time left,
    and ``nothing in flight after 1.2s``.

    >>> idle = {"worker": 0, "spout_emits": 5, "buffered": 0, "tasks": {},
    ...         "system": {"transferred": 0, "executed": 0}, "spouts_quiet_secs": None}
    >>> wait_in_flight(lambda: [idle], 30.0, interval=0.0)
    True
    """
    interval = IN_FLIGHT_LOOK_SECS if interval is None else interval
    sleep = sleep or time.sleep
    started = clock()
    deadline = started + seconds
    quiescence = Quiescence(deactivated=True)
    while still():
        try:
            replies = status()
        except Exception as exc:  # not an answer: busy, as far as anyone knows
            quiescence = Quiescence(deactivated=True)
            quiescence.waiting_for = f"workers to answer ({exc})"
        else:
            if quiescence.look(replies, exact()):
                if steps is not None:
                    steps.say(f"nothing in flight after {clock() - started:.1f}s")
                return True
        left = deadline - clock()
        if left <= 0:
            return False
        if steps is not None:
            why = quiescence.waiting_for or "the counters to settle"
            steps.count_down(f"waiting for {why}", left)
        sleep(min(interval, left))
    return False


def rolled_back(replies: list[dict[str, Any]]) -> bool:
    """Whether a worker rolled back to a checkpoint: it dropped what it had in flight, so
    the counters never balance again."""
    return any((reply.get("checkpoints") or {}).get("rollbacks") for reply in replies)


def merge_results(replies: list[dict[str, Any]]) -> dict[str, dict[int, Any]]:
    """``collect`` replies of every worker -> component -> task id -> result."""
    merged: dict[str, dict[int, Any]] = {}
    for reply in replies:
        for component, by_task in reply["results"].items():
            merged.setdefault(component, {}).update({int(t): r for t, r in by_task.items()})
    return merged
