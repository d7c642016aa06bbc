"""How many client connections the UI holds, and which it refuses (pure: no I/O but
counting this process's descriptors).

A UI shares its process with what the cluster needs — the ZooKeeper session, a nimbus,
in ``sparkstorm local`` the workers' control sockets — and every one of them needs a file
descriptor.  So the UI takes at most :func:`connection_cap` connections at once: the
configured ``ui.connections.max``, and never more than half of the descriptors the
process has free when the server starts.  :class:`ConnectionGate` admits a connection as
it is accepted (a :class:`Ticket`, given back when it closes) or refuses it, and counts
both; the server (:mod:`topology.ui.server`) answers a refused one 503 and closes it at
once, so it holds a descriptor for no longer than that.
"""

from __future__ import annotations

import os
import threading
from typing import Any

try:
    import resource
except ImportError:  # not POSIX: no limit to read
    resource = None  # type: ignore[assignment]

#: Fewest connections a UI takes, however few descriptors are free (a page needs a few).
MIN_CONNECTIONS = 8
#: The limit assumed where the system does not say (or says unlimited).
DEFAULT_OPEN_FILES = 1024


def connection_cap(configured: int, open_file_limit: int, in_use: int) -> int:
    """Most connections the UI may hold: ``configured``, and at most half of the
    descriptors free under ``open_file_limit`` with ``in_use`` taken (never fewer than
    :data:`MIN_CONNECTIONS`, nor more than ``configured``).

    >>> connection_cap(256, 1024, 150)
    256
    >>> connection_cap(256, 256, 100)
    78
    >>> connection_cap(4, 1024, 1000)
    4
    """
    free = max(0, open_file_limit - in_use)
    return max(1, min(configured, max(MIN_CONNECTIONS, free // 2)))


def open_file_limit() -> int:
    """This process's soft limit on open files (:data:`DEFAULT_OPEN_FILES` where the
    system does not say, or says unlimited)."""
    if resource is None:
        return DEFAULT_OPEN_FILES
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return DEFAULT_OPEN_FILES if soft == resource.RLIM_INFINITY else int(soft)


def descriptors_in_use() -> int:
    """File descriptors this process has open now (0 where the system cannot list them)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder))
        except OSError:
            continue
    return 0


class Ticket:
    """One admitted connection's place under the gate; :meth:`release` gives it back
    (once: later calls do nothing)."""

    __slots__ = ("_gate", "_held")

    def __init__(self, gate: ConnectionGate) -> None:
        self._gate = gate
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._gate._release()


class ConnectionGate:
    """Admits at most ``limit`` connections at once, and counts: open now, refused
    (over the limit), timed out (idle, or a request not whole in time) and accept errors
    (the system had no descriptor).  Any thread."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a connection limit must be at least 1, got {limit}")
        self.limit = limit
        self.open = 0
        self.refused = 0
        self.timed_out = 0
        self.accept_errors = 0
        self._lock = threading.Lock()

    def admit(self) -> Ticket | None:
        """A ticket for one more connection, or None (counted as refused) when
        :attr:`limit` are open."""
        with self._lock:
            if self.open >= self.limit:
                self.refused += 1
                return None
            self.open += 1
        return Ticket(self)

    def _release(self) -> None:
        with self._lock:
            self.open -= 1

    def stats(self) -> dict[str, Any]:
        """``{"open", "max", "refused", "timed_out", "accept_errors"}`` (``/api/v1/ui``)."""
        return {
            "open": self.open,
            "max": self.limit,
            "refused": self.refused,
            "timed_out": self.timed_out,
            "accept_errors": self.accept_errors,
        }
