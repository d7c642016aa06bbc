"""What a worker says to its cluster, and hears from it: the :class:`ClusterClient`
protocol.

LocalCluster's control channel (``topology.deploy.local.worker_main``) and ZooKeeper, for
workers hosted by Spark tasks (``topology.deploy.zk.worker_client``), implement it; the
:class:`~topology.runtime.worker.Worker` and its
:class:`~topology.runtime.error_reporter.ErrorReporter` talk through it.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from topology.stats.carry import Lumps

from .net.data_token import Peer

T = TypeVar("T")

#: Seconds between two saves of the stats windows (for a relaunch) when they are not
#: published; what a worker did since its last save is lost when it is killed.
STATS_SAVE_SECS = 1.0


class ClusterClient(Protocol):
    """The worker's line to whoever coordinates it: LocalCluster's control channel, or
    ZooKeeper for workers hosted by Spark tasks.

    The worker calls :meth:`register` once, then (before its tasks start)
    :meth:`carried_stats`, :meth:`bind_progress` and :meth:`bind_answerer`; after that, from
    the executor thread, :meth:`poll_commands`, :meth:`send` and
    :meth:`publish_stats`, none of which may block.  The executor waits on ``socket`` (with
    its data socket) for commands to arrive.
    """

    socket: Any

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, Peer]:
        """Announce this worker's endpoint, with ``info`` (``pid``, ``host``,
        ``address``, and ``token``: this process's data token as text, which only the
        topology's owner may read); return every worker's
        :class:`~topology.runtime.net.data_token.Peer` — endpoint and token (blocks).
        Later changes come as ``peers`` commands (``endpoints`` and ``tokens`` by worker,
        read with :func:`~topology.runtime.net.data_token.peers_from`) and ``lost`` ones."""
        ...

    def carried_stats(self) -> dict[str, Lumps]:
        """:func:`~topology.stats.carry.carry_key` (component and task index) -> the
        stats windows that task carried over from its earlier incarnations, in this
        worker or another before a rebalance (may raise: the worker then starts its
        counters from zero)."""
        ...

    def bind_progress(self, progress: Callable[[], tuple[float, str | None]]) -> None:
        """Where the heartbeat reads the executor's progress (``Executor.progress``: safe
        on any thread)."""
        ...

    def bind_answerer(self, cmd: str, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Who answers ``cmd`` requests (``log``, ``log_level``) on the client's own
        thread, so a worker stuck in user code still answers them."""
        ...

    def poll_commands(self) -> list[dict[str, Any]]:
        """Commands received since the last call (never blocks)."""
        ...

    def send(self, message: dict[str, Any]) -> None:
        """Report something (error, status reply, result) to the cluster."""
        ...

    def publish_stats(self, status: dict[str, Any]) -> None:
        """This worker's status (counters and stats windows), every
        ``topology.stats.interval.secs`` (never blocks)."""
        ...

    def save_stats(self, status: dict[str, Any]) -> None:
        """Keep ``status``'s stats windows for this worker's next incarnation, every
        :data:`STATS_SAVE_SECS` between two publications (never blocks): a SIGKILL loses
        at most that much of the counts."""
        ...


def take_all(items: queue.Queue[T]) -> list[T]:
    """Everything in ``items`` now, without blocking (for :class:`ClusterClient`
    implementations whose commands arrive on another thread)."""
    out = []
    while True:
        try:
            out.append(items.get_nowait())
        except queue.Empty:
            return out
