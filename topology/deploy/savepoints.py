"""Savepoints of running topologies: what :class:`~topology.deploy.cluster.client.Cluster`
and :class:`~topology.deploy.local.cluster.LocalCluster` share (:class:`SavepointAccess`;
restoring one is :mod:`.savepoint_restore`, the format :mod:`topology.state.savepoint`).

**Taking one** (:func:`take_savepoint`): wait until a checkpoint completes after the call,
pin it in the topology's state backend (so the workers' compaction leaves it alone), copy
every scope as of it, write the metadata last, unpin.  A complete checkpoint is consistent
across every task, so the savepoint is too: the committed state and the spouts' positions
of one moment of the stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from topology import config as cfg
from topology.errors import ConfigError
from topology.runtime.checkpoint.state_layout import KEYED, TASK, describe_state, scope_uid
from topology.spec import Topology, describe_components
from topology.state.backends import CheckpointGone, StateBackend, open_backend
from topology.state.backends.pins import Renewal
from topology.state.savepoint import (
    SavepointError,
    SavepointInfo,
    SavepointWriter,
)

from .progress import Progress, say

#: Seconds between two looks at the backend while waiting for a checkpoint.
POLL_SECS = 0.1
#: Extra seconds a savepoint waits for a checkpoint beyond an interval and its timeout.
WAIT_SLACK_SECS = 5.0
#: Longest wait, before a stop-with-savepoint, for the deactivated spouts' tuples to finish
#: (a worker hears of the deactivation on its next look at ZooKeeper).
DRAIN_BEFORE_SAVEPOINT_SECS = 120.0


def savepoints_dir(directory: str | None, *confs: Mapping[str, Any]) -> str:
    """``directory``, else the first ``topology.state.savepoints.dir`` of ``confs``."""
    for chosen in (directory, *(c.get(cfg.SAVEPOINTS_DIR) for c in confs)):
        if chosen:
            return str(chosen)
    raise ConfigError(
        f"no savepoint directory: pass --dir URL (a path or fsspec URL) or set {cfg.SAVEPOINTS_DIR}"
    )


def shared_store_problem(conf: Mapping[str, Any]) -> str | None:
    """Why a savepoint cannot be taken from or seeded into the checkpoints of a topology
    with ``conf`` from here: ``sqlite`` keeps them on each machine's disk, which a client
    sees only when the topology runs on this machine (a ``local`` Spark master)."""
    provider = conf.get(cfg.STATE_PROVIDER, "sqlite")
    if provider == "sqlite" and not str(conf.get("spark.master", "")).startswith("local"):
        return (
            "topology.state.provider sqlite keeps checkpoints on each machine's disk, out of "
            "this client's reach on a cluster: use topology.state.provider=directory with "
            "topology.state.dir on a filesystem every host sees (a path or fsspec URL)"
        )
    return None


def state_components(topology: Topology) -> dict[str, Any]:
    """The components of ``topology`` as its record describes them, with their uid and
    kinds of state (``"state"``)."""
    components = describe_components(topology)
    for component, kinds in describe_state(topology).items():
        components[component]["state"] = kinds
    return components


def _saved_components(components: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What a savepoint records of each component of a topology's record."""
    return {
        c: {
            "uid": str(d.get("uid") or c),
            "kind": d["kind"],
            "tasks": int(d["tasks"]),
            "state": list(d.get("state", [])),
        }
        for c, d in components.items()
    }


def _checkpointed(components: Mapping[str, Any]) -> bool:
    return any(k in (KEYED, TASK) for c in components.values() for k in c.get("state", []))


@dataclass(kw_only=True)
class Waiting:
    """How :func:`take_savepoint` waits for a checkpoint (injectable for tests)."""

    #: Seconds to wait at most (None: an interval, the checkpoint timeout and some slack).
    timeout: float | None = None
    #: Called between looks (LocalCluster on simulated time moves its clock there).
    tick: Callable[[], object] | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


def take_savepoint(
    backend: StateBackend,
    record: Mapping[str, Any],
    directory: str,
    *,
    topology_id: str,
    progress: Progress = None,
    newer_than: int | None = None,
    waiting: Waiting | None = None,
) -> SavepointInfo:
    """A savepoint of the topology ``record`` describes (``name``, ``conf``,
    ``components`` as in ZooKeeper) in a new directory under ``directory``, from the first
    checkpoint to complete above ``newer_than`` (default: the newest when called)."""
    name, conf, components = record["name"], record["conf"], record["components"]
    if not _checkpointed(components):
        raise SavepointError(
            f"topology {name!r} keeps no checkpointed state (no StatefulBolt): there is "
            "nothing to take a savepoint of"
        )
    checkpoint = _pinned_checkpoint(backend, name, conf, progress, newer_than, waiting or Waiting())
    saved = _saved_components(components)
    renewal = Renewal(partial(backend.pin, checkpoint))
    writer: SavepointWriter | None = None
    try:
        writer = SavepointWriter(directory, name)
        uids = {c["uid"] for c in saved.values()}
        for scope in backend.scopes():
            uid = scope_uid(scope)
            if uid in uids:
                # renewed while it copies: a client killed meanwhile lets its pin lapse
                entries = renewal.through(backend.read_all(checkpoint, scope))
                written = writer.add_scope(scope, uid, entries)
                say(progress, f"copied scope {scope!r}: {written.entries:,} entries")
        info = writer.finish(
            topology_id=topology_id,
            checkpoint=checkpoint,
            key_groups=int(conf[cfg.STATE_MAX_PARALLELISM]),
            backend=str(conf.get(cfg.STATE_PROVIDER, "")),
            components=saved,
        )
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        backend.unpin(checkpoint)
    say(progress, f"savepoint of {name!r} at checkpoint {checkpoint} written")
    return info


def _pinned_checkpoint(
    backend: StateBackend,
    name: str,
    conf: Mapping[str, Any],
    progress: Progress,
    newer_than: int | None,
    waiting: Waiting,
) -> int:
    """The newest complete checkpoint above ``newer_than``, pinned, once there is one."""
    start = backend.latest() if newer_than is None else newer_than
    limit = waiting.timeout
    if limit is None:
        interval = float(conf[cfg.CHECKPOINT_INTERVAL_MS]) / 1000.0
        limit = interval + float(conf[cfg.CHECKPOINT_TIMEOUT_SECS]) + WAIT_SLACK_SECS
    say(progress, f"waiting up to {limit:g}s for a checkpoint of {name!r} newer than #{start}")
    deadline = waiting.clock() + limit
    while True:
        latest = backend.latest()
        if latest > start:
            try:
                backend.pin(latest)
            except CheckpointGone:  # compacted between the two calls: take the next one
                continue
            say(progress, f"checkpoint #{latest} complete: copying it")
            return latest
        if waiting.clock() > deadline:
            raise SavepointError(
                f"no checkpoint of topology {name!r} completed within {limit:g}s (the newest "
                f"is #{latest}): are its workers running? See `sparkstorm status {name}`"
            )
        if waiting.tick is not None:
            waiting.tick()
        waiting.sleep(POLL_SECS)


class SavepointAccess:
    """``savepoint`` and ``stop_with_savepoint`` for a cluster front end that says where a
    running topology's state is (:meth:`_state_of`)."""

    def _state_of(self, name: str) -> tuple[dict[str, Any], str, bool]:
        """``name``'s record (``name``, ``conf``, ``components`` with their uids and kinds
        of state), the id its checkpoints are kept under, and whether it is active."""
        raise NotImplementedError

    def _savepoints_conf(self) -> Mapping[str, Any]:
        """The front end's own conf (its ``topology.state.savepoints.dir``): ``self.conf``."""
        return getattr(self, "conf", None) or {}

    def _waiting(self, conf: Mapping[str, Any]) -> Waiting | None:
        """How to wait for a checkpoint of a topology with ``conf`` (None: on real time)."""
        return None

    if TYPE_CHECKING:  # what the front end offers anyway (ClusterOps)

        def activate(self, name: str) -> None: ...
        def deactivate(self, name: str) -> None: ...
        def kill_topology(
            self, name: str, wait_secs: float | None = ..., *, progress: Progress = ...
        ) -> None: ...
        def wait_until_drained(self, name: str, timeout: float = ...) -> None: ...

    def savepoint(self, name: str, directory: str | None = None, progress: Progress = None) -> str:
        """Take a savepoint of ``name`` under ``directory`` (default:
        ``topology.state.savepoints.dir`` of the topology, else of this front end) and
        return its path: the committed state of the first checkpoint to complete from now.

        Args:
            name: the topology's name.
            directory: where to write it (default: ``topology.state.savepoints.dir``).
            progress: called with each step's message (None: silent).

        Returns:
            The savepoint's path.

        Raises:
            SavepointError: the topology keeps no state, or no checkpoint completed in time.
            ConfigError: no directory is given or configured.
        """
        return self._savepoint(name, directory, progress, after_deactivation=False)

    def _savepoint(
        self, name: str, directory: str | None, progress: Progress, after_deactivation: bool
    ) -> str:
        record, state_id, _ = self._state_of(name)
        problem = shared_store_problem(record["conf"])
        if problem is not None:
            raise SavepointError(f"savepoint of {name!r}: {problem}")
        folder = savepoints_dir(directory, record["conf"], self._savepoints_conf())
        backend = open_backend(record["conf"], state_id)
        try:
            return take_savepoint(
                backend,
                record,
                folder,
                topology_id=state_id,
                progress=progress,
                # a checkpoint begun after the deactivation (the next but one) holds it all
                newer_than=backend.latest() + 1 if after_deactivation else None,
                waiting=self._waiting(record["conf"]),
            ).path
        finally:
            backend.close()

    def stop_with_savepoint(
        self,
        name: str,
        directory: str | None = None,
        wait_secs: float | None = None,
        progress: Progress = None,
    ) -> str:
        """Deactivate ``name``'s spouts, take a savepoint (its path is returned), then kill
        it; a savepoint that fails leaves it running (active again if it was).

        Args:
            name: the topology's name.
            directory: as for :meth:`savepoint`.
            wait_secs: as for ``kill_topology`` (for what the savepoint's wait left in
                flight, if anything).
            progress: called with each step's message (None: silent).

        Returns:
            The savepoint's path.

        Raises:
            SavepointError: as for :meth:`savepoint`.
            ConfigError: as for :meth:`savepoint`.
        """
        record, _, active = self._state_of(name)
        self.deactivate(name)
        if self._waiting(record["conf"]) is None:  # real time: the spouts have stopped
            say(progress, f"{name!r} deactivated: letting what its spouts emitted finish")
            self.wait_until_drained(name, timeout=DRAIN_BEFORE_SAVEPOINT_SECS)
        say(progress, f"{name!r} deactivated: taking a savepoint before stopping it")
        try:
            path = self._savepoint(name, directory, progress, after_deactivation=True)
        except BaseException:
            if active:
                self.activate(name)
            raise
        say(progress, f"savepoint written: stopping {name!r}")
        self.kill_topology(name, wait_secs, progress=progress)
        return path
