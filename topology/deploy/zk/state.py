"""Cluster state in ZooKeeper: every operation sparkstorm does on its nodes.

:class:`ZkState` is a :class:`~.connection.ZkConnection` (the kazoo client, sessions and
JSON writes) with one method per thing sparkstorm stores: topologies, assignments,
drivers, heartbeats, ``started`` marks, carried stats, error logs and the nimbus leader.
Paths come from :mod:`.paths`.  Every record is checked as it is read (:mod:`.records`):
one that is not of the expected shape is logged once and read as absent, so no reader
trips over what someone wrote into ZooKeeper.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError
from kazoo.recipe.election import Election

from topology.deploy.error_log import ERRORS_KEPT
from topology.errors import SparkstormError
from topology.status import TopologyStatus

from . import records
from .connection import ZkConnection, _dump
from .ownership import RACED, UNREADABLE
from .paths import CODE_CHUNK_BYTES

_log = logging.getLogger(__name__)
#: Refusals remembered (to log each once) at most; the memory then starts afresh.
MAX_REMEMBERED_REFUSALS = 10_000


class BadRecord(SparkstormError):
    """A record in ZooKeeper is not of the expected shape: it is not changed or used."""


#: Longest a worker waits for ZooKeeper to save its statistics (seconds).
SAVE_TIMEOUT_SECS = 5.0


def _worker_index(child: str) -> bool:
    """Whether a child node's name is a worker index (others are someone else's)."""
    return child.isascii() and child.isdigit() and len(child) <= 6


class ZkState(ZkConnection):
    """The operations sparkstorm needs on ZooKeeper, on one :class:`ZkConnection` (see
    there for connecting and lost sessions).

    Each ``read_*`` (and :meth:`driver`, :meth:`heartbeats`, ...) returns a record only
    when it passes its check in :mod:`.records`; a refused one reads as absent, and why is
    logged once and kept in :attr:`refused`.
    """

    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__(conf)
        #: path -> why its record was refused (each refusal is logged once)
        self.refused: dict[str, str] = {}

    # -- checked records -------------------------------------------------------------------

    def checked(
        self,
        path: str,
        raw: bytes | None,
        check: records.Check,
        stat: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """The record ``raw`` read at ``path`` when it passes ``check`` and, given the
        ``stat`` read with it, its node is this user's identity's alone
        (:meth:`~.ownership.Ownership.problem`; ZooKeeper is asked at most ``timeout``
        seconds); else None, and the reason is logged (once per path and reason)."""
        if stat is not None and not self.trusted(path, stat, timeout):
            return None
        value, reason = records.load(raw, check)
        if reason is None:
            if self.refused:
                self.refused.pop(path, None)
            return value
        self._refuse(path, reason)
        return None

    def trusted(self, path: str, stat: Any, timeout: float | None = None) -> bool:
        """Whether the node read at ``path`` (with ``stat``) holds only what this user's
        identity wrote (always, without a local identity); why not is logged once."""
        if self.ownership is None:
            return True
        problem = self.ownership.problem(path, stat, timeout)
        if problem is None:
            return True
        if problem != RACED:  # changed meanwhile: the next read decides
            self._refuse(path, f"its node {problem}")
        return False

    def _refuse(self, path: str, reason: str) -> None:
        if self.refused.get(path) != reason:
            if len(self.refused) >= MAX_REMEMBERED_REFUSALS:
                self.refused.clear()
            self.refused[path] = reason
            _log.warning("refusing the record at %s in ZooKeeper: %s", path, reason)

    @property
    def ignored(self) -> int:
        """How many nodes this client ignores now: refused records, and nodes that are not
        this user's identity's alone."""
        return len(self.refused)

    def _get(self, path: str, check: records.Check, watch: Callable[..., Any] | None = None) -> Any:
        """The checked record at ``path`` (None when absent or refused)."""
        try:
            raw, stat = self.client.get(path, watch=watch)
        except NoNodeError:
            return None
        except NoAuthError:
            self._refuse(path, f"its node {UNREADABLE}")
            return None
        return self.checked(path, raw, check, stat)

    def _children(self, path: str, watch: Callable[..., Any] | None = None) -> list[str]:
        """The names of ``path``'s children (none when it is absent or unreadable); ``watch``
        is called when they change, or when an absent ``path`` appears."""
        try:
            return list(self.client.get_children(path, watch=watch))
        except NoNodeError:
            if watch is not None:
                self.client.exists(path, watch=watch)
            return []
        except NoAuthError:
            self._refuse(path, f"its node {UNREADABLE}")
            return []

    # -- topologies ------------------------------------------------------------------------

    def topology_ids(self) -> list[str]:
        try:
            return sorted(self.client.get_children(self.paths.storms))
        except NoNodeError:
            return []

    def create_topology(self, topology_id: str, record: dict[str, Any], code: bytes) -> None:
        """Store the code (chunked) first, then the record that announces the topology
        (every node with the client's default ACL: this user's identity's alone, or the
        credentials').  The code's node is created here, never found: one someone made
        first is not used."""
        self.client.ensure_path(self.paths.carried_stats(topology_id))  # workers write below
        self.client.ensure_path(self.paths.code(topology_id).rpartition("/")[0])
        self.client.create(self.paths.code(topology_id), b"")
        for i in range(0, max(1, len(code)), CODE_CHUNK_BYTES):
            self.client.create(
                self.paths.code_chunk(topology_id, i // CODE_CHUNK_BYTES),
                code[i : i + CODE_CHUNK_BYTES],
            )
        try:
            self.client.create(self.paths.storm(topology_id), _dump(record))
        except NodeExistsError:
            self._delete_tree(self.paths.code(topology_id))
            raise

    def unowned(self, topology_id: str) -> str | None:
        """Why the topology's record or code may have been written by someone other than
        this user's local identity, or None; always None without a local identity
        (nothing to compare with).  See :meth:`.ownership.Ownership.unowned`."""
        return None if self.ownership is None else self.ownership.unowned(topology_id)

    def read_record(self, topology_id: str, watch: Callable[..., Any] | None = None) -> Any:
        """The topology's record (None when absent, or refused: see :mod:`.records`)."""
        return self._get(self.paths.storm(topology_id), records.check_record, watch)

    def update_record(self, topology_id: str, **changes: Any) -> dict[str, Any]:
        """Merge ``changes`` into the record (status, rebalance requests, ...); raises
        :class:`BadRecord` when the stored record is not one (it is left as it is)."""
        record = self._amend(topology_id, lambda record: changes)
        assert record is not None
        return record

    def amend_record(
        self, topology_id: str, amend: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> dict[str, Any] | None:
        """Merge ``amend(record)`` into the record as it is when written: read, decided and
        written at one version (again when another writer came between), so a change that
        holds only in some state of the record is never written over another (a rebalance
        cut short after the nimbus moved on).  Returns the record written, or None when
        ``amend`` returns None or the record is gone; :class:`BadRecord` as
        :meth:`update_record`."""
        try:
            return self._amend(topology_id, amend)
        except NoNodeError:
            return None

    def _amend(
        self, topology_id: str, amend: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> dict[str, Any] | None:
        path = self.paths.storm(topology_id)
        while True:  # optimistic concurrency: nimbus and clients both update specs
            raw, stat = self.client.get(path)
            record = self.checked(path, raw, records.check_record, stat)
            if record is None:
                reason = self.refused.get(path, "empty")
                raise BadRecord(f"topology {topology_id}: its record is refused ({reason})")
            changes = amend(record)
            if changes is None:
                return None
            record.update(changes)
            try:
                self.client.set(path, _dump(record), version=stat.version)
                return record
            except BadVersionError:
                continue

    def read_code(self, topology_id: str) -> bytes:
        base = self.paths.code(topology_id)
        chunks = sorted(self.client.get_children(base))
        return b"".join(self.client.get(f"{base}/{c}")[0] for c in chunks)

    def remove_topology(self, topology_id: str) -> None:
        """Delete every path the topology owns."""
        for path in self.paths.topology_paths(topology_id):
            self._delete_tree(path)

    def topology_leftovers(self, topology_id: str) -> list[str]:
        """The paths of the topology that still exist (empty once it is wholly removed)."""
        return [p for p in self.paths.topology_paths(topology_id) if self.client.exists(p)]

    def find_by_name(self, name: str) -> str | None:
        """The id of the live topology called ``name``, if any."""
        for topology_id in self.topology_ids():
            record = self.read_record(topology_id)
            if (
                record
                and record.get("name") == name
                and record.get("status") != TopologyStatus.KILLED
            ):
                return topology_id
        return None

    # -- assignments -----------------------------------------------------------------------

    def write_assignment(self, topology_id: str, assignment: dict[str, Any]) -> None:
        self._set(self.paths.assignment(topology_id), assignment)

    def delete_assignment(self, topology_id: str) -> None:
        self._delete_tree(self.paths.assignment(topology_id))

    def read_assignment(self, topology_id: str, watch: Callable[..., Any] | None = None) -> Any:
        """The topology's assignment (None when absent, or refused)."""
        return self._get(self.paths.assignment(topology_id), records.check_assignment, watch)

    # -- drivers ---------------------------------------------------------------------------

    def claim_driver(self, topology_id: str, info: dict[str, Any]) -> bool:
        """Create the topology's ephemeral driver node; False when another driver holds it."""
        self.client.ensure_path(self.paths.drivers)
        try:
            self.client.create(self.paths.driver(topology_id), _dump(info), ephemeral=True)
        except NodeExistsError:
            return False
        return True

    def update_driver(self, topology_id: str, info: dict[str, Any]) -> None:
        """Rewrite this driver's node (it must hold it)."""
        self.client.set(self.paths.driver(topology_id), _dump(info))

    def release_driver(self, topology_id: str) -> None:
        try:
            self.client.delete(self.paths.driver(topology_id))
        except NoNodeError:
            pass

    def driver(self, topology_id: str) -> Any:
        """The topology's driver node (host, pid, generation, restarts), or None."""
        return self._get(self.paths.driver(topology_id), records.check_driver)

    def drivers(self) -> set[str]:
        """Ids of the topologies whose driver is alive (holds its ephemeral node)."""
        try:
            return set(self.client.get_children(self.paths.drivers))
        except NoNodeError:
            return set()

    # -- worker heartbeats -----------------------------------------------------------------

    def register_worker(self, topology_id: str, worker: int, beat: dict[str, Any]) -> None:
        """Create this worker's ephemeral heartbeat (replacing a stale one of a dead session)."""
        path = self.paths.workerbeat(topology_id, worker)
        self.client.ensure_path(self.paths.workerbeats(topology_id))
        try:
            self.client.create(path, _dump(beat), ephemeral=True)
        except NodeExistsError:
            self.client.delete(path)
            self.client.create(path, _dump(beat), ephemeral=True)

    def mark_started(
        self, topology_id: str, worker: int, attempt: int, timeout: float | None = None
    ) -> None:
        """Record, beyond the worker's life, that it became ready in ``attempt`` (not once
        the topology is gone); each ZooKeeper call waits at most ``timeout`` seconds.  The
        first time counts: a relaunched process of the same attempt leaves it as it is, so
        its later start shows it is a relaunch (see :meth:`first_ready_at`)."""
        if self.client.exists_async(self.paths.storm(topology_id)).get(timeout=timeout):
            path = self.paths.started(topology_id, worker)
            try:
                raw, stat = self.client.get_async(path).get(timeout=timeout)
                first = self.checked(path, raw, records.check_started, stat, timeout)
            except NoNodeError:  # none yet: write it (one not ours is replaced)
                first = None
            if isinstance(first, dict) and first.get("attempt") == attempt:
                return
            data = {"attempt": attempt, "at": time.time()}
            self._set(path, data, timeout=timeout)

    def save_carried_stats(self, topology_id: str, worker: int, saved: dict[str, Any]) -> None:
        """Keep, beyond the worker's life, the stats windows it reported last (a relaunched
        worker carries them on: ``topology.stats.carry``); not once the topology is gone."""
        if self.client.exists(self.paths.storm(topology_id)) is None:
            return  # the topology is gone
        path = self.paths.worker_carried_stats(topology_id, worker)
        # the parent exists from submit on (create_topology); bounded waits: never hang
        self._set(path, saved, makepath=False, timeout=SAVE_TIMEOUT_SECS)

    def carried_stats(self, topology_id: str) -> list[Any]:
        """Every worker's saved stats windows (see :meth:`save_carried_stats`)."""
        base = self.paths.carried_stats(topology_id)
        children = self._children(base)
        saved = [self._get(f"{base}/{child}", records.check_carried) for child in children]
        return [s for s in saved if s is not None]

    def started_workers(self, topology_id: str, attempt: int) -> set[int]:
        """Workers that became ready at least once in ``attempt`` (even if gone since)."""
        return set(self.first_ready_at(topology_id, attempt))

    def first_ready_at(self, topology_id: str, attempt: int) -> dict[int, float]:
        """For each worker that became ready in ``attempt``: when it first did (a worker
        process started after that is a relaunch)."""
        base = self.paths._join("started", topology_id)
        out = {}
        children = self._children(base)
        for child in children:
            if not _worker_index(child):
                continue
            data = self._get(f"{base}/{child}", records.check_started)
            if data is not None and data["attempt"] == attempt:
                out[int(child)] = float(data["at"])
        return out

    def beat(
        self, topology_id: str, worker: int, beat: dict[str, Any], timeout: float | None = None
    ) -> None:
        """Rewrite the heartbeat; re-create it (after a lost session) while the topology
        still exists — never the topology's paths once it was removed.  Each ZooKeeper call
        waits at most ``timeout`` seconds (a writer thread must never hang on one)."""
        path = self.paths.workerbeat(topology_id, worker)
        raw = _dump(beat)
        try:
            self.client.set_async(path, raw).get(timeout=timeout)
        except NoNodeError:
            try:
                self.client.create_async(path, raw, ephemeral=True).get(timeout=timeout)
            except (NoNodeError, NodeExistsError):  # removed meanwhile, or raced: fine
                pass

    def heartbeats(
        self,
        topology_id: str,
        watch: Callable[..., Any] | None = None,
        attempt: int | None = None,
    ) -> dict[int, dict[str, Any]]:
        """Worker index -> heartbeat; only those of assignment ``attempt`` when given."""
        base = self.paths.workerbeats(topology_id)
        beats = {}
        for child in self._children(base, watch):
            if not _worker_index(child):
                continue
            data = self._get(f"{base}/{child}", records.check_heartbeat)
            if data is None or data["worker"] != int(child):
                continue
            if attempt is None or data["attempt"] == attempt:
                beats[int(child)] = data
        return beats

    # -- errors ----------------------------------------------------------------------------

    def report_error(self, topology_id: str, component: str, error: dict[str, Any]) -> None:
        """Append to the component's last ``ERRORS_KEPT`` errors."""
        self.report_errors(topology_id, component, [error])

    def report_errors(
        self,
        topology_id: str,
        component: str,
        new: list[dict[str, Any]],
        timeout: float | None = None,
    ) -> None:
        """Append ``new`` to the component's last ``ERRORS_KEPT`` errors (one write); not
        once the topology is gone.  Each ZooKeeper call waits at most ``timeout`` seconds
        (a worker's writer thread must never hang on one)."""
        path = self.paths.component_errors(topology_id, component)
        client = self.client
        for _ in range(5):
            try:
                raw, stat = client.get_async(path).get(timeout=timeout)
            except NoNodeError:
                if client.exists_async(self.paths.storm(topology_id)).get(timeout=timeout) is None:
                    return  # removed: nobody will read them
                try:
                    raw = _dump(new[-ERRORS_KEPT:])
                    client.create_async(path, raw, makepath=True).get(timeout=timeout)
                    return
                except NodeExistsError:
                    continue
            if not self.trusted(path, stat, timeout):  # not ours alone: ours replaces it
                assert self.ownership is not None
                self.ownership.replace(path, _dump(new[-ERRORS_KEPT:]), timeout)
                return
            errors = ((self.checked(path, raw, records.check_errors) or []) + new)[-ERRORS_KEPT:]
            try:
                client.set_async(path, _dump(errors), version=stat.version).get(timeout=timeout)
                return
            except BadVersionError:  # another task wrote first; retry
                continue
            except NoNodeError:  # removed meanwhile
                return

    def errors(self, topology_id: str) -> dict[str, list[dict[str, Any]]]:
        base = self.paths.errors(topology_id)
        components = self._children(base)
        return {c: self._get(f"{base}/{c}", records.check_errors) or [] for c in sorted(components)}

    # -- leader election -------------------------------------------------------------------

    def election(self, identifier: str) -> Election:
        return self.client.Election(self.paths.nimbus_leader, identifier)

    def leader(self) -> str | None:
        contenders = self.election("?").contenders()
        return contenders[0] if contenders else None
