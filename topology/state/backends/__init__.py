"""Where checkpoints are stored: one small interface, providers that register themselves.

A checkpoint is a set of *entries* per *scope* — a stateful bolt's scope is its component
(its keys, partitioned among its tasks by :func:`~topology.state.kv.key_owner`), a spout
task's scope is ``component#index`` — written incrementally (only what changed since the
previous checkpoint; ``None`` deletes a key), plus the *completion* record that makes a
checkpoint the one to restore.  Entries of a checkpoint that never completed are never
read: restore takes, per key, the newest entry at or below the restored checkpoint.

``topology.state.provider`` picks one of :data:`~.registry.PROVIDERS`:

Every provider keeps the newest ``topology.state.checkpoints.retained`` complete checkpoints
and the *pinned* ones (a savepoint being copied, from another process) restorable; a pin
whose holder died lapses (:mod:`.pins`).

* ``memory`` — this process only (the in-process runner, unit tests): :mod:`.memory`;
* ``sqlite`` — the default: one SQLite file per topology under ``topology.state.dir`` on
  the machine's disk (WAL, shared by every worker process of the machine) — fine for
  LocalCluster and ``sparkstorm local``: :mod:`.sqlite`;
* ``directory`` — files under ``topology.state.dir`` read as a path or an ``fsspec`` URL
  (``file://``, ``hdfs://``, ``s3://`` where fsspec and the filesystem are installed): a
  directory every host sees, for clusters where a task restarts on another host:
  :mod:`.directory`.

A new provider is one module: a class decorated with :func:`~.registry.register` (see
:mod:`.registry`).  How values are encoded is :mod:`.codec`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from topology.errors import ConfigError

# the built-in providers register themselves on import, in the order messages list them
from .memory import MemoryBackend  # isort: skip
from .sqlite import SqliteBackend  # isort: skip
from .directory import DirectoryBackend  # isort: skip
from .codec import decode_value, encode_value, scope_entries
from .registry import (
    KEEP_COMPLETE,
    PROVIDERS,
    CheckpointGone,
    CorruptCheckpoint,
    Entries,
    Provider,
    StateBackend,
    provider,
    register,
)


def open_backend(conf: Mapping[str, Any], state_id: str) -> StateBackend:
    """The backend ``topology.state.provider`` names, for the checkpoints of ``state_id``
    (a topology id on a cluster)."""
    return provider(conf).open(conf, state_id)


def remove_state(conf: Mapping[str, Any], state_id: str) -> None:
    """Delete every checkpoint of ``state_id`` (a killed topology's, on a LocalCluster or by
    the nimbus; under a path or, for ``directory``, any fsspec URL; nothing under an
    unknown provider).  Savepoints are directories of their own: they stay."""
    with contextlib.suppress(ConfigError):
        provider(conf).remove(conf, state_id)


__all__ = [
    "KEEP_COMPLETE",
    "CheckpointGone",
    "CorruptCheckpoint",
    "PROVIDERS",
    "DirectoryBackend",
    "Entries",
    "MemoryBackend",
    "Provider",
    "SqliteBackend",
    "StateBackend",
    "decode_value",
    "encode_value",
    "open_backend",
    "register",
    "remove_state",
    "scope_entries",
]
