"""The recent checkpoints of one topology, as the coordinator saw them (pure, bounded).

:class:`~topology.runtime.checkpoint.coordinator.CoordinatorHost` feeds it from the
coordinator's actions and the tasks' ``DONE`` reports; the worker's status reply carries
:meth:`CheckpointHistory.rows` and the status report (``checkpoints.history``) shows them.
One row per checkpoint, newest first::

    {"id": 42, "status": "completed" | "in_progress" | "abandoned",
     "triggered_at": <unix time>, "duration_secs": 0.134 | null,
     "alignment_ms": 1.2, "bytes": 18000, "tasks_reported": 6,
     "components": {"count": {"bytes": 18000, "alignment_ms": 1.2, "tasks": 2}},
     "reason": null | "why it was abandoned"}

``duration_secs`` runs from the ``BEGIN`` sent to the spouts until the completion record
is durable (null while in progress); ``alignment_ms`` is the longest a bolt task held an
input back waiting for the barrier on its other inputs; ``bytes`` what the tasks wrote
to the state backend for it: the keys changed since the checkpoint before (checkpoints
are incremental) and the spouts' positions, keys and values as stored.
"""

from __future__ import annotations

from collections import deque
from typing import Any

#: Checkpoints kept (the newest; older ones are forgotten).
HISTORY_SIZE = 50


class CheckpointHistory:
    """The last :data:`HISTORY_SIZE` checkpoints.  ``now`` arguments are on the clock the
    coordinator runs on (durations); ``wall`` is unix time (when each was triggered)."""

    def __init__(self, size: int = HISTORY_SIZE) -> None:
        self._rows: deque[dict[str, Any]] = deque(maxlen=size)
        self._started: dict[int, float] = {}

    def begin(self, checkpoint: int, now: float, wall: float) -> None:
        """Checkpoint ``checkpoint`` was triggered (its ``BEGIN`` sent)."""
        self._rows.appendleft(
            {
                "id": checkpoint,
                "status": "in_progress",
                "triggered_at": round(wall, 3),
                "duration_secs": None,
                "alignment_ms": 0.0,
                "bytes": 0,
                "tasks_reported": 0,
                "components": {},
                "reason": None,
            }
        )
        self._started[checkpoint] = now
        for gone in [c for c in self._started if c not in self._ids()]:
            del self._started[gone]  # pushed out of the ring while in progress

    def task_done(self, checkpoint: int, component: str, alignment_ms: float, size: int) -> None:
        """A task of ``component`` stored its part of ``checkpoint``: ``size`` bytes, after
        holding inputs back ``alignment_ms`` while aligning."""
        row = self._find(checkpoint)
        if row is None or row["status"] != "in_progress":
            return
        alignment_ms = round(max(0.0, float(alignment_ms)), 3)
        size = max(0, int(size))
        part = row["components"].setdefault(
            component, {"bytes": 0, "alignment_ms": 0.0, "tasks": 0}
        )
        part["bytes"] += size
        part["alignment_ms"] = max(part["alignment_ms"], alignment_ms)
        part["tasks"] += 1
        row["bytes"] += size
        row["alignment_ms"] = max(row["alignment_ms"], alignment_ms)
        row["tasks_reported"] += 1

    def completed(self, checkpoint: int, now: float) -> None:
        """``checkpoint`` is complete (its completion record durable)."""
        row = self._find(checkpoint)
        if row is not None and row["status"] == "in_progress":
            row["status"] = "completed"
            row["duration_secs"] = self._duration(checkpoint, now)

    def abandoned(self, checkpoint: int | None, reason: str, now: float) -> None:
        """``checkpoint`` was given up (None: every one in progress, e.g. a recovery
        started)."""
        for row in self._rows:
            if row["status"] == "in_progress" and checkpoint in (None, row["id"]):
                row["status"] = "abandoned"
                row["reason"] = reason
                row["duration_secs"] = self._duration(row["id"], now)

    def rows(self) -> list[dict[str, Any]]:
        """Every kept checkpoint, newest first (copies)."""
        return [
            {**row, "components": {c: dict(p) for c, p in row["components"].items()}}
            for row in self._rows
        ]

    def _find(self, checkpoint: int) -> dict[str, Any] | None:
        return next((row for row in self._rows if row["id"] == checkpoint), None)

    def _ids(self) -> set[int]:
        return {row["id"] for row in self._rows}

    def _duration(self, checkpoint: int, now: float) -> float | None:
        started = self._started.pop(checkpoint, None)
        return None if started is None else round(max(0.0, now - started), 3)


_STATUSES = frozenset({"completed", "in_progress", "abandoned"})
#: Components kept per row read back (a topology has far fewer; a bigger row is junk).
MAX_COMPONENTS = 1000


def checked_rows(value: Any) -> list[dict[str, Any]]:
    """History rows as another process reported them (a worker's reply, through ZooKeeper
    on a cluster): only well-formed rows, at most :data:`HISTORY_SIZE`, every field of the
    type above (a row or component part that is not is left out)."""
    if not isinstance(value, list):
        return []
    out = []
    for row in value[:HISTORY_SIZE]:
        checked = _checked_row(row)
        if checked is not None:
            out.append(checked)
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value) if value >= 0 else None


def _checked_row(row: Any) -> dict[str, Any] | None:
    if not isinstance(row, dict) or type(row.get("id")) is not int:
        return None
    status, triggered = row.get("status"), _number(row.get("triggered_at"))
    if status not in _STATUSES or triggered is None:
        return None
    components: dict[str, Any] = {}
    parts = row.get("components")
    for name, part in list(parts.items())[:MAX_COMPONENTS] if isinstance(parts, dict) else ():
        if not isinstance(name, str) or not isinstance(part, dict):
            continue
        size, align, tasks = (_number(part.get(k)) for k in ("bytes", "alignment_ms", "tasks"))
        if size is not None and align is not None and tasks is not None:
            components[name] = {"bytes": int(size), "alignment_ms": align, "tasks": int(tasks)}
    duration = _number(row.get("duration_secs"))
    reason = row.get("reason")
    return {
        "id": row["id"],
        "status": status,
        "triggered_at": triggered,
        "duration_secs": duration,
        "alignment_ms": _number(row.get("alignment_ms")) or 0.0,
        "bytes": int(_number(row.get("bytes")) or 0),
        "tasks_reported": int(_number(row.get("tasks_reported")) or 0),
        "components": components,
        "reason": reason[:500] if isinstance(reason, str) else None,
    }
