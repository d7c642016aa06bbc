"""The status report of one topology: a stable, documented JSON schema (pure).

Built from worker status replies (each task's totals and stats windows), heartbeats and
errors; rendered by ``sparkstorm status`` / ``monitor`` and returned by
``LocalCluster.stats`` and ``Cluster.stats``.  Schema (``"schema": 1``)::

    {"schema": 1, "window": "600", "window_name": "10m", "generated_at": <unix time>,
     "topology": {"name", "id", "status", "uptime_secs", "workers", "workers_alive", "tasks"},
     "spouts": [{"id", "tasks", "emitted", "transferred", "acked", "failed",
                 "failed_by": {reason: n}, "dead_lettered", "retried", "errors",
                 "pending", "complete_latency_ms"}],
     "bolts":  [{"id", "tasks", "executed", "emitted", "transferred", "acked", "failed",
                 "failed_by", "dead_lettered", "retried", "errors", "execute_latency_ms",
                 "process_latency_ms", "capacity", "state_keys", "state_bytes",
                 "state_cache_hits", "state_cache_misses", "state_cache_hit_rate"}],
     "workers": [{"worker", "host", "pid", "port", "executor", "uptime_secs", "heartbeat_age_secs",
                  "stats_age_secs", "tasks", "restarts", "restart_reason",
                  "next_start_in_secs", "stalled_secs", "busy_in", "dropped_frames",
                  "dropped_by": {reason: n}, "congested", "throttled_by", "receive_queue",
                  "components", "full_peers"}],
     "errors": [{"component", "task", "worker", "host", "time", "text"}],
               # each component's last ERRORS_SHOWN, newest first
     "checkpoints": null | {"last_complete", "last_complete_age_secs", "last_duration_secs",
                    "interval_secs", "completed", "abandoned", "recoveries", "recovering",
                    "rollbacks", "declined", "paused_workers", "waiting_acks",
                    "restore_refused", "history": [checkpoint row]}}

``checkpoints`` is there for a checkpointed topology (one with state): the coordinator's
view (``completed`` / ``abandoned`` / ``recoveries`` since it started) and the workers'
sums (``rollbacks`` restored, checkpoints ``declined`` by a task that could not align,
spout msg ids ``waiting_acks`` for the next commit, stored entries a restore refused,
``restore_refused``: over the door's decode budget or of the wrong shape).  ``history``
holds the coordinator's last 50 checkpoints, newest first: id, status, trigger time,
duration, alignment time, bytes stored, per component
(:mod:`topology.state.checkpoint_history`).

``dead_lettered`` counts the inputs (a spout: the records) the component gave up on and
sent to its dead-letter stream (whether or not anything subscribes to it); ``retried`` the
further attempts its failure policy made at inputs whose code raised (docs/ERRORS.md).

Counts are over the chosen window ("600" = 10 min, "10800" = 3 h, "86400" = 1 day,
":all-time"); ``pending`` is a live gauge; ``capacity`` is the busiest task's share of
wall time spent executing (above 0.8: the bolt is a bottleneck).  ``state_keys`` /
``state_bytes`` (a stateful bolt's rows only) are live gauges summed over its tasks: the
keys of their live state and its bytes (on disk for a disk-backed state, an estimate of
the memory it takes otherwise).  A disk-backed state's rows add its cache's reads since
its tasks opened it, summed: ``state_cache_hits`` (answered from memory) and
``state_cache_misses`` (read from the store), and ``state_cache_hit_rate``, hits over both
(null before any read).  A worker is ``congested`` while it holds frames a full
peer cannot take (its spouts and, through its signal, every peer's wait); ``throttled_by``
lists the peers whose signal holds its spouts; ``full_peers`` the peers whose queue is full
(the frames it holds wait for them); ``receive_queue`` counts the tuples queued for its
executor.  ``components`` names the components with tasks on the worker (what the graph's
edges' backpressure is read from: :func:`backpressured_edges`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from topology import config as cfg
from topology.constants import DEAD_LETTER_STREAM
from topology.state.checkpoint_history import checked_rows

from .rolling import WINDOW_NAMES, merge_windows, parse_window

SCHEMA_VERSION = 1
#: Capacity above which a bolt is shown as a bottleneck.
CAPACITY_WARNING = 0.8
#: A worker whose heartbeat is older than this many stats intervals is stale (shown so,
#: and not counted as running).
STALE_INTERVALS = 3


def stale_secs(conf: Mapping[str, Any]) -> float:
    """Seconds after which a worker's heartbeat is stale under ``conf`` (a topology's or a
    client's; the default stats interval when it has none)."""
    key = cfg.TOPOLOGY_STATS_INTERVAL_SECS
    return STALE_INTERVALS * float(conf.get(key) or cfg.defaults()[key])


#: Errors listed in a report per component (its newest ones): a noisy component never
#: hides another's.
ERRORS_SHOWN = 10


def build_report(
    topology: dict[str, Any],
    components: dict[str, Any],
    worker_stats: list[dict[str, Any]],
    beats: dict[int, dict[str, Any]] | None = None,
    errors: dict[str, list[dict[str, Any]]] | None = None,
    window: str = "600",
    now: float | None = None,
    supervision: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Assemble the report; ``window`` accepts ids or names ("10m", "3h", "1d", "all").

    ``supervision`` is what the workers' supervisor knows per worker: ``restarts``, the
    last death's ``reason`` and, while it waits to relaunch one, ``next_start_at``."""
    window_id = parse_window(window)
    now = time.time() if now is None else now
    by_component: dict[str, list[dict[str, Any]]] = {}
    pending: dict[str, int] = {}
    states: dict[str, dict[str, int]] = {}  # component -> its tasks' state size, summed
    for reply in worker_stats:
        for task in reply["tasks"].values():
            name = task["component"]
            by_component.setdefault(name, []).append(task["windows"][window_id])
            pending[name] = pending.get(name, 0) + task.get("pending", 0)
            if task.get("state"):
                _add_state(states.setdefault(name, {"state_keys": 0, "state_bytes": 0}), task)
    spouts, bolts = [], []
    for name in sorted(components):
        info = components[name]
        merged = merge_windows(by_component.get(name, []))
        common = {
            "id": name,
            "tasks": info["tasks"],
            "emitted": sum(merged["emitted"].values()),
            "transferred": sum(merged["transferred"].values()),
            "acked": merged["acked"],
            "failed": merged["failed"],
            "failed_by": merged["failed_by"],
            "dead_lettered": merged["emitted"].get(DEAD_LETTER_STREAM, 0),
            "retried": merged["retried"],
            # every error the component's tasks reported in the window (also those over
            # the rate at which workers send their texts)
            "errors": merged["errors"],
        }
        if info["kind"] == "spout":
            spouts.append(
                {
                    **common,
                    "pending": pending.get(name, 0),
                    "complete_latency_ms": round(merged["complete_latency_ms"], 3),
                }
            )
        else:
            bolts.append(
                {
                    **common,
                    "executed": merged["executed"],
                    "execute_latency_ms": round(merged["execute_latency_ms"], 3),
                    "process_latency_ms": round(merged["process_latency_ms"], 3),
                    "capacity": merged["capacity"],
                    **states.get(name, {}),
                    **_cache_rate(states.get(name, {})),
                }
            )
    return {
        "schema": SCHEMA_VERSION,
        "window": window_id,
        "window_name": WINDOW_NAMES[window_id],
        "generated_at": now,
        "topology": topology,
        "spouts": spouts,
        "bolts": bolts,
        "workers": _workers(worker_stats, beats or {}, supervision or {}, now),
        "errors": _errors(errors or {}),
        "checkpoints": _checkpoints(worker_stats),
    }


def _checkpoints(worker_stats: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The checkpoint section (None when no worker takes part in checkpoints)."""
    parts = [reply["checkpoints"] for reply in worker_stats if reply.get("checkpoints")]
    if not parts:
        return None
    coordinator: dict[str, Any] = next((p["coordinator"] for p in parts if "coordinator" in p), {})
    out: dict[str, Any] = {
        key: coordinator.get(key)
        for key in (
            "last_complete",
            "last_complete_age_secs",
            "last_duration_secs",
            "interval_secs",
            "completed",
            "abandoned",
            "recoveries",
            "recovering",
        )
    }
    for key in ("rollbacks", "declined", "waiting_acks", "restore_refused"):
        out[key] = sum(int(p.get(key) or 0) for p in parts)
    out["paused_workers"] = sum(1 for p in parts if p.get("paused"))
    out["history"] = checked_rows(coordinator.get("history"))
    return out


def _workers(
    worker_stats: list[dict[str, Any]],
    beats: dict[int, dict[str, Any]],
    supervision: dict[int, dict[str, Any]],
    now: float,
) -> list[dict[str, Any]]:
    stats_by_worker = {reply["worker"]: reply for reply in worker_stats}
    out = []
    for worker in sorted(set(stats_by_worker) | set(beats) | set(supervision)):
        reply = stats_by_worker.get(worker, {})
        beat = beats.get(worker, {})
        supervised = supervision.get(worker, {})
        beat_at = beat.get("beat_at")
        stats_at = beat.get("stats_at", reply.get("time"))
        next_start = supervised.get("next_start_at")
        out.append(
            {
                "worker": worker,
                "host": beat.get("host", reply.get("host")),
                "pid": beat.get("pid", reply.get("pid")),
                "port": endpoint_port(beat.get("endpoint")),
                "executor": executor_label(beat),
                "uptime_secs": reply.get("uptime_secs", 0.0),
                "heartbeat_age_secs": round(now - beat_at, 1) if beat_at else None,
                "stats_age_secs": round(now - stats_at, 1) if stats_at else None,
                "tasks": sorted(int(t) for t in reply.get("tasks", {})),
                "restarts": int(supervised.get("restarts") or 0),
                "restart_reason": supervised.get("reason"),
                "next_start_in_secs": round(max(0.0, next_start - now), 1) if next_start else None,
                "stalled_secs": beat.get("stalled_secs"),
                "busy_in": beat.get("busy_in"),
                "dropped_frames": int(reply.get("dropped_frames") or 0),
                "dropped_by": _counts(reply.get("dropped_by")),
                # backpressure: this worker holds frames for a full peer (and asks every peer
                # to hold its spouts), and the peers whose request holds this one's spouts
                "congested": bool(reply.get("congested")),
                "throttled_by": sorted(int(w) for w in reply.get("throttled_by") or []),
                "receive_queue": int(reply.get("inbound") or 0),
                "components": sorted(
                    {str(t.get("component")) for t in (reply.get("tasks") or {}).values()}
                ),
                "full_peers": sorted(int(w) for w in reply.get("full_peers") or []),
            }
        )
    return out


def endpoint_port(endpoint: Any) -> int | None:
    """The TCP port of a worker's data endpoint (``tcp://host:port``); None for another
    transport (``ipc://``, ``inproc://``) or no endpoint.

    >>> endpoint_port("tcp://10.0.0.5:41234"), endpoint_port("ipc:///tmp/w0")
    (41234, None)
    """
    if not isinstance(endpoint, str) or not endpoint.startswith("tcp://"):
        return None
    port = endpoint.rpartition(":")[2]
    return int(port) if port.isascii() and port.isdigit() and len(port) <= 5 else None


def executor_label(beat: Mapping[str, Any]) -> str | None:
    """What runs a worker, from its heartbeat: the Spark executor's id; in Spark's local
    mode, where every worker is a task of the driver's JVM, ``driver`` with the worker's
    Spark task attempt (``driver (local mode), task 12``) so each row says which it is;
    None outside Spark (a LocalCluster's worker processes).

    >>> executor_label({"executor": "driver", "spark_task_attempt": 12})
    'driver (local mode), task 12'
    >>> executor_label({"executor": "3", "spark_task_attempt": 40})
    '3'
    """
    executor = beat.get("executor")
    if executor is None:
        return None
    attempt = beat.get("spark_task_attempt")
    if str(executor) == "driver" and isinstance(attempt, int) and not isinstance(attempt, bool):
        return f"driver (local mode), task {attempt}"
    return str(executor)


def backpressured_edges(workers: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """The (source, target) component pairs under backpressure, from a report's
    ``workers``: a worker running a task of the source holds frames for a full peer running
    a task of the target (``full_peers``: the target's queue is full), or is held back by
    the signal of a worker running a task of the target (``throttled_by``: that worker's
    receive queue is full, it aligns checkpoint barriers, or it cannot send either).
    Workers are the unit: every pair of components of the two workers counts."""
    components = {w["worker"]: w.get("components") or [] for w in workers}
    out: set[tuple[str, str]] = set()
    for w in workers:
        for peer in {*(w.get("full_peers") or []), *(w.get("throttled_by") or [])}:
            for target in components.get(peer, []):
                out.update((source, target) for source in w.get("components") or [])
    return out


def _errors(errors: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each component's last :data:`ERRORS_SHOWN` errors, all of them newest first."""
    flat = [
        {
            "component": component,
            "task": e.get("task"),
            "worker": e.get("worker"),
            "host": e.get("host"),
            "time": e.get("time"),
            "text": e.get("text", ""),
        }
        for component, items in errors.items()
        for e in sorted(items, key=lambda e: e.get("time") or 0)[-ERRORS_SHOWN:]
    ]
    flat.sort(key=lambda e: e["time"] or 0, reverse=True)
    return flat


def _counts(value: Any) -> dict[str, int]:
    """A reply's ``{reason: count}`` (drops per reason), or {} for anything else."""
    if not isinstance(value, dict):
        return {}
    return {str(k): int(v) for k, v in value.items() if type(v) is int}


def _add_state(size: dict[str, int], task: dict[str, Any]) -> None:
    """Add a task's live state (keys, bytes, and its cache's counts if any) to ``size``."""
    size["state_keys"] += int(task["state"]["keys"])
    size["state_bytes"] += int(task["state"]["bytes"])
    if "cache_hits" in task["state"]:  # a disk backend's cache
        for key in ("cache_hits", "cache_misses"):
            size[f"state_{key}"] = size.get(f"state_{key}", 0) + int(task["state"][key])


def _cache_rate(size: dict[str, int]) -> dict[str, float | None]:
    """``{"state_cache_hit_rate"}`` of a component's summed cache counts (none without)."""
    if "state_cache_hits" not in size:
        return {}
    reads = size["state_cache_hits"] + size["state_cache_misses"]
    return {"state_cache_hit_rate": round(size["state_cache_hits"] / reads, 4) if reads else None}
