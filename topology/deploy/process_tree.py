"""Ending processes this one started, and everything they started in turn, by pid.

A topology driver starts a Spark JVM, which starts pyspark daemons, which fork Python
workers; none of those are children of this process.  :func:`end_trees` finds them by
walking parent pids in ``/proc`` (Linux; elsewhere only the roots are known), asks them to
stop with SIGTERM, and kills what is left with SIGKILL — never by name.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

#: Seconds between looks at whether the processes are gone.
POLL_SECS = 0.05


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None when it does not exist."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def descendants(roots: Iterable[int]) -> set[int]:
    """Every live process below ``roots`` (not the roots themselves), from ``/proc``."""
    parent_of: dict[int, int] = {}
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return set()
    for entry in entries:
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] != "Z":
                parent_of[int(entry.name)] = stat[1]
    children: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def running(pid: int) -> bool:
    """True while ``pid`` runs; reaps it when it is a child of this process that exited
    (a zombie counts as gone)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    except ChildProcessError:  # not our child: ask /proc
        pass
    stat = _stat(pid)
    if stat is not None:
        return stat[0] != "Z"
    if Path("/proc/self").exists():
        return False
    try:  # no /proc: ask the process table
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _signal(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait_gone(pids: set[int], until: float) -> set[int]:
    while True:
        alive = {pid for pid in pids if running(pid)}
        if not alive or time.monotonic() >= until:
            return alive
        time.sleep(POLL_SECS)


def end_trees(roots: Iterable[int], grace: float, wait: float = 2.0) -> set[int]:
    """End ``roots`` (children of this process) and their descendants: SIGTERM to every
    one of them, SIGKILL after ``grace`` seconds to what is left (found again: processes
    started meanwhile too), then wait at most ``wait`` seconds.  Returns the pids still
    running after that (normally none)."""
    roots = [pid for pid in roots if running(pid)]
    tree = set(roots) | descendants(roots)
    _signal(tree, signal.SIGTERM)
    alive = _wait_gone(tree, time.monotonic() + grace)
    # found again from every member of the first tree: a child of a member that died
    # meanwhile is no longer below the roots (it was reparented), but it was seen or its
    # live parent is
    tree = alive | descendants(tree)
    _signal(tree, signal.SIGKILL)
    return _wait_gone(tree, time.monotonic() + wait)
