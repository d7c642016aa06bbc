"""Long-running commands ride out a lost ZooKeeper connection (``sparkstorm local``, ``ui``,
``monitor``, ``logs --follow``): the kazoo client reconnects by itself (a new session if
the old one expired), so a loop that finds ZooKeeper not answering keeps what it showed
and tries again on its next round; a step that must happen waits for the connection
(:func:`retrying`).  :class:`ConnectionNotice` says on stderr, once each, when the
connection is lost and when it is back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import click

from topology.deploy.cluster.client import Cluster
from topology.deploy.zk.state import ZkState

T = TypeVar("T")

#: Seconds a step that must happen (drain, collect results, kill) waits for ZooKeeper.
RECONNECT_WAIT_SECS = 60.0
#: Seconds between two tries of such a step while ZooKeeper is away.
RETRY_PAUSE_SECS = 0.5


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means ZooKeeper is not answering now (kazoo's ``ConnectionLoss``,
    ``SessionExpiredError``, a time-out), rather than a bug or a refusal."""
    return ZkState.unreachable(exc)


class ConnectionNotice:
    """Called with each change of a ZooKeeper connection (``True``: connected): prints
    one line on stderr when it is lost and one when it is back, never two alike in a row.

    >>> notice = ConnectionNotice("127.0.0.1:2181", echo=print)
    >>> notice(False); notice(False); notice(True)
    ZooKeeper at 127.0.0.1:2181: connection lost; reconnecting (the topologies keep running)
    ZooKeeper at 127.0.0.1:2181: connection back
    """

    def __init__(
        self, hosts: str, echo: Callable[[str], None] = lambda line: click.echo(line, err=True)
    ) -> None:
        self.hosts = hosts
        self.connected = True
        self._echo = echo
        self._lock = threading.Lock()

    def __call__(self, connected: bool) -> None:
        with self._lock:
            if connected == self.connected:
                return
            self.connected = connected
        if connected:
            self._echo(f"ZooKeeper at {self.hosts}: connection back")
        else:
            self._echo(
                f"ZooKeeper at {self.hosts}: connection lost; reconnecting "
                "(the topologies keep running)"
            )


def announce_connection(cluster: Cluster) -> ConnectionNotice:
    """Print a line on stderr each time ``cluster``'s ZooKeeper connection is lost or back."""
    notice = ConnectionNotice(cluster.zk.hosts)
    cluster.zk.on_connection_change(notice)
    return notice


def retrying(
    fn: Callable[[], T],
    cluster: Cluster,
    within: float = RECONNECT_WAIT_SECS,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``fn()``; while it fails because ZooKeeper is not answering, wait for the
    connection and call it again, for ``within`` seconds at most (then its error passes,
    as any other error at once)."""
    deadline = clock() + within
    while True:
        try:
            return fn()
        except Exception as exc:
            remaining = deadline - clock()
            if not unreachable(exc) or remaining <= 0:
                raise
            cluster.zk.wait_connected(remaining)
            time.sleep(min(RETRY_PAUSE_SECS, max(0.0, deadline - clock())))
