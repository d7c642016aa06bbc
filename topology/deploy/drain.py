"""Reading worker replies, shared by every cluster front end: quiescence detection over
status replies, and merging ``collect`` replies."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: Seconds every active spout must have emitted nothing before a topology counts as drained
#: (a spout that sleeps between emits, as Storm spouts often do, is not done).
DRAIN_QUIET_SECS = 0.5


def drain_snapshot(
    replies: list[dict[str, Any]], exact: bool = True, quiet: float = 0.0
) -> tuple[int, int, int] | None:
    """(spout emits, transferred, executed) when nothing is buffered or pending, every
    transferred tuple was executed (``exact``) and every active spout has emitted nothing
    for ``quiet`` seconds; else None."""
    emits = transferred = executed = buffered = pending = 0
    for reply in replies:
        spouts_quiet = reply.get("spouts_quiet_secs")
        if spouts_quiet is not None and spouts_quiet < quiet:
            return None
        emits += reply["spout_emits"]
        buffered += reply["buffered"]
        transferred += reply["system"]["transferred"]
        executed += reply["system"]["executed"]
        for task in reply["tasks"].values():
            transferred += sum(task["transferred"].values())
            executed += task["executed"]
            pending += task.get("pending", 0)
    if buffered or pending or (exact and transferred != executed):
        return None
    return emits, transferred, executed


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

    ``check()`` raises when the topology broke; ``TimeoutError`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    previous = None
    stable = 0
    while True:
        check()
        replies = status()
        is_exact = exact() and not rolled_back(replies)
        snapshot = drain_snapshot(replies, is_exact, quiet)
        stable = stable + 1 if snapshot is not None and snapshot == previous else 0
        if stable >= (1 if is_exact else 4):
            return
        previous = snapshot
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not drain within {timeout:g}s")
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
