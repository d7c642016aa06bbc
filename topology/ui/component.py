"""One component's page (pure): its tasks' statistics over a window, its streams, where its
tuples go, and its errors — what Storm UI's component page shows.

Schema of ``GET /api/v1/topology/{name}/component/{component}``::

    {"topology", "component", "kind", "window", "window_name", "tasks" (count),
     "streams": {stream: [field]}, "inputs": [{"component", "stream", "grouping", "fields"}],
     "outputs": [{"to", "stream", "grouping", "fields"}],
     "stats": <the component's row: counts summed over tasks, latencies weighted, capacity
               the busiest task's>,
     "rates": {"emitted_per_sec", "executed_per_sec", "acked_per_sec", "failed_per_sec"},
     "task_stats": [{"task", "worker", "host", "pid", "emitted", "transferred", "executed",
                     "acked", "failed", "failed_by", "dead_lettered", "retried",
                     "execute_latency_ms",
                     "process_latency_ms", "complete_latency_ms", "capacity",
                     "pending" (spouts), "errors" (count, this incarnation)}],
     "errors": [{"time", "task", "worker", "host", "text"}]}      # newest first
"""

from __future__ import annotations

from typing import Any

from topology.constants import DEAD_LETTER_STREAM
from topology.stats.rolling import WINDOW_NAMES, merge_windows

#: Figures of a task's window shown per task (and summed for the component).
FIGURES = (
    "emitted",
    "transferred",
    "executed",
    "acked",
    "failed",
    "failed_by",
    "retried",
    "execute_latency_ms",
    "process_latency_ms",
    "complete_latency_ms",
    "capacity",
)


def _figures(window: dict[str, Any]) -> dict[str, Any]:
    out = {k: window.get(k) for k in FIGURES}
    out["dead_lettered"] = (window.get("emitted") or {}).get(DEAD_LETTER_STREAM, 0)
    out["retried"] = out["retried"] or 0
    for key in ("emitted", "transferred"):
        out[key] = sum((window.get(key) or {}).values())
    for key in ("execute_latency_ms", "process_latency_ms", "complete_latency_ms"):
        out[key] = round(float(out[key] or 0.0), 3)
    return out


def component_page(
    topology: str,
    component: str,
    components: dict[str, Any],
    replies: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    window_id: str,
    rates: dict[str, float],
) -> dict[str, Any]:
    """The page of ``component`` (which must be in ``components``) from the worker
    ``replies``, its ``errors`` (oldest first, as ``ClusterOps.errors`` gives them) and its
    live ``rates``."""
    info = components[component]
    tasks, windows = [], []
    for reply in replies:
        for task_id, task in sorted((reply.get("tasks") or {}).items(), key=lambda t: int(t[0])):
            if task.get("component") != component:
                continue
            window = merge_windows([task.get("windows", {}).get(window_id, {})])
            windows.append(task.get("windows", {}).get(window_id, {}))
            row = {
                "task": int(task_id),
                "worker": reply.get("worker"),
                "host": reply.get("host"),
                "pid": reply.get("pid"),
                **_figures(window),
                "errors": int(task.get("errors") or 0),
            }
            if info.get("kind") == "spout":
                row["pending"] = int(task.get("pending") or 0)
            tasks.append(row)
    outputs = [
        {"to": cid, "stream": i["stream"], "grouping": i.get("grouping"), "fields": i["fields"]}
        for cid, other in sorted(components.items())
        for i in other.get("inputs", [])
        if i.get("component") == component
    ]
    return {
        "topology": topology,
        "component": component,
        "kind": info.get("kind"),
        "window": window_id,
        "window_name": WINDOW_NAMES[window_id],
        "tasks": info.get("tasks"),
        "streams": info.get("streams", {}),
        "inputs": info.get("inputs", []),
        "outputs": outputs,
        "stats": _figures(merge_windows(windows)),
        "rates": rates,
        "task_stats": tasks,
        "errors": [
            {k: e.get(k) for k in ("time", "task", "worker", "host", "text")}
            for e in reversed(errors)
        ],
    }
