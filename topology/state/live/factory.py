"""``open_live_state``: a task's live state as ``topology.state.backend`` says.

- ``memory`` (the default): :class:`~topology.state.kv.KeyValueState`, a dict; with
  ``topology.state.ttl.secs``, :class:`~.memory.TtlKeyValueState`;
- ``lmdb``: :class:`~.lmdb_store.LmdbState` (with a TTL, :class:`~.lmdb_ttl.LmdbTtlState`)
  in a directory of the task's under ``topology.state.local.dir``, with
  a write-back cache of ``topology.state.cache.bytes`` (and, when set,
  ``topology.state.cache.entries``) in memory.

The names are :data:`topology.config.STATE_BACKENDS`, the choices of
``topology.state.backend``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from topology import config as cfg
from topology import user_dirs
from topology.errors import ConfigError

from ..kv import KeyValueState
from .base import LiveState
from .memory import TtlKeyValueState

#: The values of ``topology.state.backend``.
BACKENDS = cfg.STATE_BACKENDS


def local_dir(conf: Mapping[str, Any]) -> str:
    """``topology.state.local.dir``, or this user's default,
    ``<tmp>/sparkstorm-<uid>/live`` (:mod:`topology.user_dirs`; nothing is made)."""
    return str(user_dirs.resolve(conf, cfg.STATE_LOCAL_DIR))


def task_dir(conf: Mapping[str, Any], location: str, pid: int | None = None) -> str:
    """The directory of the task at ``location`` (any string) in process ``pid`` (default:
    this one): its characters outside ``[A-Za-z0-9._-]`` replaced, shortened, a hash of the
    whole string and the pid appended, so two locations never share one, nor a relaunched
    worker's task the one its predecessor (perhaps still stopping) deletes."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", location)[:80].lstrip(".") or "task"
    digest = hashlib.sha256(location.encode()).hexdigest()[:12]
    return os.path.join(local_dir(conf), f"{safe}-{digest}.{os.getpid() if pid is None else pid}")


def sweep_dead(path: str) -> None:
    """Delete the directories of the same task left by processes that are gone (a worker
    killed with SIGKILL never deleted its own)."""
    stem, _, _ = path.rpartition(".")
    folder = os.path.dirname(path)
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        head, _, pid = name.rpartition(".")
        if os.path.join(folder, head) == stem and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_live_state(
    conf: Mapping[str, Any],
    *,
    location: str,
    key_groups: int,
    clock: Callable[[], float],
    single_field: bool = False,
) -> LiveState:
    """A task's empty live state.  ``location`` names the task uniquely (its directory
    for a disk backend, cleared now and deleted at ``close``); ``clock`` gives the time
    TTLs count in (seconds); ``single_field``: keys are one grouping field's values
    (:func:`topology.state.kv.key_fields`)."""
    name = conf.get(cfg.STATE_BACKEND, "memory")
    ttl = conf.get(cfg.STATE_TTL_SECS)
    if name == "memory":
        if ttl is None:
            return KeyValueState(None, key_groups, single_field)
        return TtlKeyValueState(float(ttl), clock, key_groups, single_field)
    if name == "lmdb":
        from .lmdb_store import DEFAULT_CACHE_BYTES, LmdbState
        from .lmdb_ttl import LmdbTtlState

        path = task_dir(conf, location)
        user_dirs.ensure_dir(conf, cfg.STATE_LOCAL_DIR)  # made and checked (one line if not)
        sweep_dead(path)
        found = conf.get(cfg.STATE_CACHE_ENTRIES)
        entries = None if found is None else int(found)
        budget = int(conf.get(cfg.STATE_CACHE_BYTES, DEFAULT_CACHE_BYTES))
        if ttl is None:
            return LmdbState(
                path, key_groups, entries, single_field=single_field, cache_bytes=budget
            )
        return LmdbTtlState(
            path,
            float(ttl),
            clock,
            key_groups,
            entries,
            single_field=single_field,
            cache_bytes=budget,
        )
    raise ConfigError(f"{cfg.STATE_BACKEND} must be {cfg.one_of(BACKENDS)}, got {name!r}")
