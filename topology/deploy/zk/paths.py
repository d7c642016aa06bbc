"""Every ZooKeeper path sparkstorm uses, in one place (relative to ``storm.zookeeper.root``).

::

    <root>/nimbus/leader                     leader election (kazoo Election recipe)
    <root>/storms/<topology-id>              record: name, status, conf summary, components
    <root>/code/<topology-id>/<n>            pickled topology, chunked (ZooKeeper's 1 MB limit)
    <root>/assignments/<topology-id>         workers, task -> worker, attempt numbers
    <root>/drivers/<topology-id>             ephemeral: the topology's driver (host, pid, restarts)
    <root>/workerbeats/<topology-id>/<w>     ephemeral: endpoint, host, pid, executor, uptime
    <root>/started/<topology-id>/<w>         the last attempt in which worker w became ready
    <root>/errors/<topology-id>/<component>  last reported errors, newest last
    <root>/carried/<topology-id>/<w>         stats windows a relaunched worker carries on

The root and the fixed nodes right below it (:attr:`ZkPaths.skeleton`) are created, or
checked, by every client as it connects (:mod:`.ownership`); they and a topology's
``workerbeats``, ``started``, ``errors`` and ``carried`` nodes only hold children
(:meth:`ZkPaths.is_container`): nothing in them is read.
"""

from __future__ import annotations

#: The nodes right below the root besides ``nimbus`` (each holds one child per topology).
_TOP = ("storms", "code", "assignments", "drivers", "workerbeats", "started", "errors", "carried")
#: Of those, the ones whose per-topology child only holds children of its own.
_HOLDERS = ("workerbeats", "started", "errors", "carried")

#: Largest chunk of pickled code stored in one znode (ZooKeeper's limit is ~1 MB).
CODE_CHUNK_BYTES = 900 * 1024


class ZkPaths:
    """Builds absolute paths under one root."""

    def __init__(self, root: str = "/sparkstorm") -> None:
        if not root.startswith("/"):
            raise ValueError(f"storm.zookeeper.root must start with '/', got {root!r}")
        self.root = root.rstrip("/") or "/"

    def _join(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    @property
    def skeleton(self) -> list[str]:
        """The root and the fixed nodes below it, each after its parent."""
        fixed = [("nimbus",), ("nimbus", "leader"), *((name,) for name in _TOP)]
        return [self.root, *(self._join(*parts) for parts in fixed)]

    @property
    def held_by_presence(self) -> list[str]:
        """The nodes whose children count by being there, whatever they hold: the nimbuses'
        election and the drivers' claims (a node planted there would hold them off)."""
        return [self.nimbus_leader, self.drivers]

    def is_container(self, path: str) -> bool:
        """Whether the node at ``path`` only holds children (its own data is never read):
        the skeleton and a topology's ``workerbeats``, ``started``, ``errors`` and
        ``carried`` nodes."""
        parent = path.rpartition("/")[0]
        return path in self.skeleton or parent in [self._join(name) for name in _HOLDERS]

    @property
    def nimbus_leader(self) -> str:
        return self._join("nimbus", "leader")

    @property
    def storms(self) -> str:
        return self._join("storms")

    def storm(self, topology_id: str) -> str:
        return self._join("storms", topology_id)

    def code(self, topology_id: str) -> str:
        return self._join("code", topology_id)

    def code_chunk(self, topology_id: str, index: int) -> str:
        return self._join("code", topology_id, f"{index:05d}")

    @property
    def assignments(self) -> str:
        return self._join("assignments")

    def assignment(self, topology_id: str) -> str:
        return self._join("assignments", topology_id)

    @property
    def drivers(self) -> str:
        return self._join("drivers")

    def driver(self, topology_id: str) -> str:
        return self._join("drivers", topology_id)

    def started(self, topology_id: str, worker: int) -> str:
        return self._join("started", topology_id, str(worker))

    def workerbeats(self, topology_id: str) -> str:
        return self._join("workerbeats", topology_id)

    def workerbeat(self, topology_id: str, worker: int) -> str:
        return self._join("workerbeats", topology_id, str(worker))

    def errors(self, topology_id: str) -> str:
        return self._join("errors", topology_id)

    def carried_stats(self, topology_id: str) -> str:
        return self._join("carried", topology_id)

    def worker_carried_stats(self, topology_id: str, worker: int) -> str:
        return self._join("carried", topology_id, str(worker))

    def component_errors(self, topology_id: str, component: str) -> str:
        return self._join("errors", topology_id, component)

    def topology_paths(self, topology_id: str) -> list[str]:
        """Every path a topology owns (removed when it is killed)."""
        return [
            self.storm(topology_id),
            self.code(topology_id),
            self.assignment(topology_id),
            self.driver(topology_id),
            self._join("started", topology_id),
            self.workerbeats(topology_id),
            self.errors(topology_id),
            self.carried_stats(topology_id),
        ]
