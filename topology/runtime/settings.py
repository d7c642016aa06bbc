"""What a worker runs (:class:`WorkerSetup`), and what the runtime reads from its conf, read
once into typed, frozen settings (pure).

A worker's conf is a plain dict of keys (:mod:`topology.config`, defaults in
``conf/defaults.yaml``).  The runtime reads it here, once, and hands the objects that need
them these settings: nothing under ``topology/runtime/`` looks keys up at its call sites.

* :class:`WorkerSettings`: topology-wide keys (transfer, executor, checkpoints, the
  worker's statistics, log and peer-loss policy), from the topology conf;
* :class:`TaskSettings`: the keys one component may set for itself
  (:data:`topology.config.COMPONENT_KEYS`), from that component's conf.

A key missing from the conf takes its default, so a conf that :func:`topology.config.resolve`
did not fill in reads as a resolved one would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from topology import config as cfg
from topology.assignment import Assignment
from topology.failure_policy import FailurePolicy
from topology.spec import Topology

from .tasks.spout_wait import SpoutWait, fixed_wait, progressive_wait


def _read(conf: Mapping[str, Any], key: str) -> Any:
    """``conf[key]``, or the key's default when the conf lacks it."""
    return conf[key] if key in conf else cfg.defaults()[key]


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """The topology-wide settings of one worker (see :meth:`from_conf` for the keys)."""

    #: Most tuples per frame (``topology.transfer.batch.size``).
    transfer_batch_size: int
    #: Seconds a remote lane waits before it is sent anyway
    #: (``topology.batch.flush.interval.millis`` / 1000).
    flush_interval_secs: float
    #: The largest frame a worker takes (``topology.transfer.max.frame.bytes``).
    max_frame_bytes: int
    #: ZeroMQ high-water mark of the data sockets (``topology.transfer.buffer.size``).
    transfer_buffer_size: int
    #: Tuples queued inbound before reading pauses
    #: (``topology.executor.receive.buffer.size``).
    receive_buffer_size: int
    #: ``topology.spout.wait.strategy``: ``sleep`` or ``progressive``.
    spout_wait_strategy: str
    #: ``topology.sleep.spout.wait.strategy.time.ms`` / 1000.
    spout_wait_secs: float
    #: ``topology.spout.wait.progressive.max.millis`` / 1000.
    spout_wait_max_secs: float
    #: ``topology.message.timeout.secs``.
    message_timeout_secs: float
    #: ``topology.enable.message.timeouts``.
    enable_message_timeouts: bool
    #: The topology-wide ``topology.max.spout.pending`` (None: no cap); a spout task's own
    #: cap is in its :class:`TaskSettings`.
    max_spout_pending: int | None
    #: ``topology.worker.loss.fails.pending``.
    worker_loss_fails_pending: bool
    #: ``topology.stats.interval.secs``.
    stats_interval_secs: float
    #: ``topology.worker.log.level``, ``.max.bytes``, ``.backups``.
    log_level: str
    log_max_bytes: int
    log_backups: int
    #: ``topology.state.provider`` (``memory`` writes inline, the others on a thread).
    state_provider: str
    #: ``topology.state.checkpoint.interval.ms`` / 1000.
    checkpoint_interval_secs: float
    #: ``topology.state.checkpoint.timeout.secs``.
    checkpoint_timeout_secs: float
    #: ``topology.state.max.parallelism``: the key groups of keyed state.
    key_groups: int = 128
    #: ``topology.state.backend``.
    state_backend: str = "memory"
    #: ``topology.state.cache.bytes``: a disk-backed live state's cache, per task.
    state_cache_bytes: int = 64 << 20

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> WorkerSettings:
        """The settings a (validated) topology conf asks for."""
        return cls(
            transfer_batch_size=_read(conf, cfg.TOPOLOGY_TRANSFER_BATCH_SIZE),
            flush_interval_secs=_read(conf, cfg.TOPOLOGY_FLUSH_INTERVAL_MILLIS) / 1000.0,
            max_frame_bytes=int(_read(conf, cfg.TOPOLOGY_MAX_FRAME_BYTES)),
            transfer_buffer_size=_read(conf, cfg.TOPOLOGY_TRANSFER_BUFFER_SIZE),
            receive_buffer_size=_read(conf, cfg.TOPOLOGY_RECEIVE_BUFFER_SIZE),
            spout_wait_strategy=_read(conf, cfg.TOPOLOGY_SPOUT_WAIT_STRATEGY),
            spout_wait_secs=_read(conf, cfg.TOPOLOGY_SPOUT_WAIT_MS) / 1000.0,
            spout_wait_max_secs=_read(conf, cfg.TOPOLOGY_SPOUT_WAIT_MAX_MS) / 1000.0,
            message_timeout_secs=float(_read(conf, cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS)),
            enable_message_timeouts=bool(_read(conf, cfg.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS)),
            max_spout_pending=_read(conf, cfg.TOPOLOGY_MAX_SPOUT_PENDING),
            worker_loss_fails_pending=bool(_read(conf, cfg.TOPOLOGY_WORKER_LOSS_FAILS_PENDING)),
            stats_interval_secs=float(_read(conf, cfg.TOPOLOGY_STATS_INTERVAL_SECS)),
            log_level=_read(conf, cfg.WORKER_LOG_LEVEL),
            log_max_bytes=_read(conf, cfg.WORKER_LOG_MAX_BYTES),
            log_backups=_read(conf, cfg.WORKER_LOG_BACKUPS),
            state_provider=_read(conf, cfg.STATE_PROVIDER),
            checkpoint_interval_secs=float(_read(conf, cfg.CHECKPOINT_INTERVAL_MS)) / 1000.0,
            checkpoint_timeout_secs=float(_read(conf, cfg.CHECKPOINT_TIMEOUT_SECS)),
            key_groups=int(_read(conf, cfg.STATE_MAX_PARALLELISM)),
            state_backend=str(_read(conf, cfg.STATE_BACKEND)),
            state_cache_bytes=int(_read(conf, cfg.STATE_CACHE_BYTES)),
        )

    def spout_wait(self) -> SpoutWait:
        """The spout wait strategy (:mod:`~topology.runtime.tasks.spout_wait`) these
        settings ask for."""
        if self.spout_wait_strategy == "progressive":
            return progressive_wait(self.spout_wait_secs, self.spout_wait_max_secs)
        return fixed_wait(self.spout_wait_secs)


@dataclass(frozen=True, slots=True)
class TaskSettings:
    """The settings of one task: its component's conf (the topology's, with the
    component's own overrides; :func:`topology.config.component_conf`)."""

    #: ``topology.testing.always.try.serialize``.
    serialize_local: bool
    #: ``topology.debug``.
    debug: bool
    #: ``topology.max.spout.pending`` (None: no cap).
    max_spout_pending: int | None
    #: ``topology.max.spout.pending.adaptive``.
    adaptive_pending: bool
    #: ``topology.max.spout.pending.auto`` (applies only without a fixed cap).
    auto_pending: bool
    #: ``topology.tick.tuple.freq.secs`` (None or 0: no tick tuples).
    tick_freq_secs: float | None
    #: ``topology.errors.*``: what becomes of an input the component's code raised on.
    failure_policy: FailurePolicy = FailurePolicy()

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> TaskSettings:
        """The settings a component's (validated) conf asks for."""
        return cls(
            serialize_local=bool(_read(conf, cfg.TOPOLOGY_ALWAYS_TRY_SERIALIZE)),
            debug=bool(_read(conf, cfg.TOPOLOGY_DEBUG)),
            max_spout_pending=_read(conf, cfg.TOPOLOGY_MAX_SPOUT_PENDING),
            adaptive_pending=bool(_read(conf, cfg.TOPOLOGY_ADAPTIVE_PENDING)),
            auto_pending=bool(_read(conf, cfg.TOPOLOGY_AUTO_PENDING)),
            tick_freq_secs=conf.get(cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS),
            failure_policy=FailurePolicy.from_conf(conf),
        )


@dataclass
class WorkerSetup:
    """Everything a worker needs to start: what to run and where it sits."""

    topology_name: str
    topology: Topology
    conf: dict[str, Any]
    assignment: Assignment
    worker_index: int
    #: The cluster secret (turns on ZeroMQ CURVE between workers); never in ``conf``.
    secret: bytes | None = None
    #: Whose checkpoints this topology reads and writes (the topology id on a cluster, so
    #: restarts, rebalances and nimbus failovers find them); None: the topology name.
    state_id: str | None = None

    def system_task(self) -> int:
        """The (negative) source task id of this worker's own system traffic."""
        return -1 - self.worker_index

    @cached_property
    def settings(self) -> WorkerSettings:
        """What the runtime reads of ``conf``, read once."""
        return WorkerSettings.from_conf(self.conf)
