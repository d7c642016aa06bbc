"""Pins with an owner and a lease, so that a client killed while it holds one (a savepoint
being copied) does not keep its checkpoint from compaction for ever.

A pin records the host (with its pid namespace) and process that took it and when
(:func:`record`); its holder renews it while it copies (:func:`renewing`).  Compaction
drops a pin that is *stale* (:func:`stale`): its process, on this host, is gone, or it
was not renewed for
:data:`LEASE_SECS` (an owner on another host, or a pid reused).  Records are read as
hostile input: one that is not a record this module wrote counts as taken when its file
or row was last written, with no owner.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

#: Seconds a pin holds without being renewed.
LEASE_SECS = 600.0
#: Seconds between renewals while the holder copies (well inside the lease).
RENEW_SECS = 60.0
#: Largest pin record read (bytes).
MAX_RECORD_BYTES = 4096

T = TypeVar("T")


@dataclass(frozen=True)
class Pin:
    """Who holds a pin, and when it was taken or last renewed (seconds since the epoch)."""

    host: str | None
    pid: int | None
    at: float

    def mine(self) -> bool:
        """Taken by this process."""
        return self.host == this_host() and self.pid == os.getpid()


@functools.cache
def this_host() -> str:
    """This host as a pin names it: its name and, where known, its process-id namespace
    (containers sharing a host name but not their pids are different hosts here)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()} {namespace}".strip()


def record(now: float | None = None) -> bytes:
    """This process's pin record, taken ``now`` (default: the time of day)."""
    at = time.time() if now is None else now
    return json.dumps({"host": this_host(), "pid": os.getpid(), "at": at}).encode()


def parse(raw: bytes, written_at: float) -> Pin:
    """The pin ``raw`` records; one that is not a record (empty, as before pins had owners,
    or hostile) has no owner and the time its file or row was ``written_at``."""
    try:
        found = json.loads(raw) if 0 < len(raw) <= MAX_RECORD_BYTES else None
    except (ValueError, RecursionError):
        found = None
    if isinstance(found, dict):
        host, pid, at = found.get("host"), found.get("pid"), found.get("at")
        if (
            isinstance(host, str)
            and type(pid) is int
            and isinstance(at, (int, float))
            and at == at  # not NaN
        ):
            return Pin(host, pid, float(at))
    return Pin(None, None, written_at)


def stale(pin: Pin, now: float | None = None, lease: float = LEASE_SECS) -> bool:
    """Whether compaction may drop ``pin``: older than ``lease``, or held by a process of
    this host that is gone."""
    at = time.time() if now is None else now
    if at - pin.at > lease:
        return True
    if pin.host == this_host() and pin.pid is not None:
        return not _alive(pin.pid)
    return False


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    except OSError:
        return False
    return True


class Renewal:
    """Calls ``renew`` once ``every`` seconds have passed since the last call (or since it
    was made) at each :meth:`due` look; :meth:`through` looks at each item taken."""

    def __init__(
        self,
        renew: Callable[[], object],
        every: float = RENEW_SECS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.renew, self.every, self.clock = renew, every, clock
        self.next = clock() + every

    def due(self) -> None:
        if self.clock() >= self.next:
            self.renew()
            self.next = self.clock() + self.every

    def through(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, renewing on time while they are taken."""
        for item in items:
            self.due()
            yield item


def renewing(
    items: Iterable[T],
    renew: Callable[[], object],
    every: float = RENEW_SECS,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[T]:
    """``items``, calling ``renew`` every ``every`` seconds while they are taken."""
    return Renewal(renew, every, clock).through(items)
