"""Reading worker replies, shared by every cluster front end: quiescence detection over
status replies, and merging ``collect`` replies."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

#: Seconds every active spout must have emitted nothing before a topology counts as drained
#: (a spout that sleeps between emits, as Storm spouts often do, is not done); the default
#: of ``topology.drain.quiet.secs``.
DRAIN_QUIET_SECS = 0.5


#: Spout tasks named when a drain waits for pending tuple trees.
PENDING_SHOWN = 4


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


def drain_snapshot(replies: list[dict[str, Any]], exact: bool = True, quiet: float = 0.0) -> Drain:
    """Drained when nothing is buffered or pending, every active spout has emitted nothing
    for ``quiet`` seconds and (``exact``) every peer link balances and every transferred
    tuple was executed."""
    emits = transferred = executed = buffered = pending = 0
    pending_at: list[str] = []  # "spout task 3 on worker 0: 12"
    for reply in replies:
        worker = reply.get("worker", "?")
        spouts_quiet = reply.get("spouts_quiet_secs")
        if spouts_quiet is not None and spouts_quiet < quiet:
            return Drain(None, f"worker {worker}'s spouts emitted {spouts_quiet:.2f}s ago")
        emits += reply["spout_emits"]
        buffered += reply["buffered"]
        transferred += reply["system"]["transferred"]
        executed += reply["system"]["executed"]
        for task_id, task in reply["tasks"].items():
            transferred += sum(task["transferred"].values())
            executed += task["executed"]
            if task.get("pending"):
                pending += task["pending"]
                component = task.get("component", "?")
                pending_at.append(
                    f"{component} task {task_id} on worker {worker}: {task['pending']:,}"
                )
    if buffered:
        return Drain(None, f"{buffered:,} tuples or frames buffered in workers")
    if pending:
        shown = "; ".join(pending_at[:PENDING_SHOWN])
        more = (
            f"; {len(pending_at) - PENDING_SHOWN} more" if len(pending_at) > PENDING_SHOWN else ""
        )
        return Drain(None, f"{pending:,} tuple trees pending ({shown}{more})")
    if exact:
        links = unbalanced_links(replies)
        if links:
            return Drain(None, "; ".join(links))
        if transferred > executed:  # (executed above it: forged tuples that got in)
            return Drain(None, f"{transferred:,} tuples transferred, {executed:,} executed")
    return Drain((emits, transferred, executed), "")


def wait_until_drained(
    status: Callable[[], list[dict[str, Any]]],
    exact: Callable[[], bool],
    check: Callable[[], None],
    timeout: float,
    interval: float,
    what: str,
    quiet: float = DRAIN_QUIET_SECS,
) -> None:
    """Poll ``status()`` until two consecutive identical drained snapshots (five when not
    ``exact()``, i.e. after a worker restart whose lost tuples never balance the counters),
    taken while every active spout has emitted nothing for ``quiet`` seconds.

    ``check()`` raises when the topology broke; ``TimeoutError`` after ``timeout`` seconds,
    saying what it was still waiting for.
    """
    deadline = time.monotonic() + timeout
    previous = None
    stable = 0
    while True:
        check()
        replies = status()
        is_exact = exact() and not rolled_back(replies)
        snapshot, waiting_for = drain_snapshot(replies, is_exact, quiet)
        stable = stable + 1 if snapshot is not None and snapshot == previous else 0
        if stable >= (1 if is_exact else 4):
            return
        previous = snapshot
        if time.monotonic() > deadline:
            why = waiting_for or "the counters were still changing"
            raise TimeoutError(f"{what} did not drain within {timeout:g}s (waiting for: {why})")
        time.sleep(interval)


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
