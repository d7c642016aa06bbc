"""What the UI reads and does: :class:`ClusterView`, the one object the server is given.

The UI never imports ``topology.deploy``: it is handed a :class:`ClusterView`, whose
:attr:`ClusterView.ops` is the running cluster itself — :class:`UiOps` is the part of
:class:`~topology.deploy.ops.ClusterOps` the UI calls, so every action of the UI calls the
very method the CLI verb calls — and whose other methods are what ``ClusterOps`` does not
say: the topologies' names, their components and conf, the nimbuses, one round of the
poller (:class:`PollRound`), and ``rebalance`` (a ``Cluster`` operation only).  The adapters are
``topology.deploy.local.ui_view.LocalClusterView`` and
``topology.deploy.cluster.ui_view.ClusterClientView``.

Contract, as in ``ClusterOps``: ``name`` is a topology's name; an unknown name, a refused
request or a worker that does not answer in time raises a
:class:`~topology.errors.SparkstormError` whose message names the topology.  Every method
may be called from any thread, several at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

if TYPE_CHECKING:
    from topology.stats.prometheus import TopologySnapshot


class TopologyInfo(TypedDict):
    """What does not change while a topology runs: its id, components
    (:func:`topology.spec.describe_components`) and conf (not yet redacted)."""

    id: str
    components: dict[str, Any]
    conf: dict[str, Any]


@dataclass(frozen=True)
class PollRound:
    """One poll of the whole cluster: what is read once per poll — the running
    topologies' ``names`` (sorted) and the ``nimbus`` election (None: no nimbus) — and
    ``poll(name)``, a topology's 10-minute status report with the worker replies behind
    it, as fresh as ``sparkstorm status`` gives it (the workers are asked now).  The
    poller calls ``poll`` for several topologies at once, from several threads."""

    names: list[str]
    nimbus: dict[str, Any] | None
    poll: Callable[[str], TopologySnapshot]


class UiOps(Protocol):
    """The operations of :class:`~topology.deploy.ops.ClusterOps` the UI calls (same
    signatures and contracts: a ``LocalCluster`` and a ``Cluster`` are each one)."""

    def activate(self, name: str) -> None: ...

    def deactivate(self, name: str) -> None: ...

    def kill_topology(self, name: str, wait_secs: float | None = ...) -> None: ...

    def stats(self, name: str, window: str = ...) -> dict[str, Any]: ...

    def errors(self, name: str) -> dict[str, list[dict[str, Any]]]: ...

    def worker_status(self, name: str, timeout: float = ...) -> list[dict[str, Any]]: ...

    def worker_logs(
        self,
        name: str,
        worker: int | None = ...,
        offsets: dict[int, int] | None = ...,
        component: str | None = ...,
        max_bytes: int | None = ...,
        timeout: float = ...,
        files: dict[int, int] | None = ...,
    ) -> list[dict[str, Any]]: ...

    def set_log_level(
        self, name: str, level: str, revert_after: float | None = ..., timeout: float = ...
    ) -> list[dict[str, Any]]: ...


class ClusterView(Protocol):
    """A cluster as the UI sees it (see the module docstring)."""

    @property
    def ops(self) -> UiOps:
        """The cluster's own operations (the ``ClusterOps`` object itself)."""
        ...

    def topology_names(self) -> list[str]:
        """The names of the topologies running now, sorted."""
        ...

    def describe(self, name: str) -> TopologyInfo:
        """``name``'s id, components and conf."""
        ...

    def nimbuses(self) -> dict[str, Any] | None:
        """``{"leader": id or None, "standbys": [...]}``, or None where there is no nimbus
        (a LocalCluster)."""
        ...

    def poll_round(self) -> PollRound:
        """Start one poll: the names and nimbuses read once, and the per-topology poll
        (what the poller publishes once per interval)."""
        ...

    def rebalance(
        self,
        name: str,
        workers: int | None,
        wait_secs: float | None,
        components: dict[str, int] | None = None,
    ) -> None:
        """Move ``name`` to ``workers`` workers (None: as many as now) and run each of
        ``components`` as its new number of tasks (the ``sparkstorm rebalance`` verb, with
        ``-e``), or raise a ``SparkstormError`` saying this cluster cannot."""
        ...
