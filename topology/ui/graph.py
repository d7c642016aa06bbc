"""The topology graph the pages draw (pure): components, edges and their live rates.

Built from :func:`topology.spec.describe_components`, a status report and the live rates of
:mod:`topology.ui.rates`.  Schema::

    {"components": [{"id", "kind": "spout" | "bolt", "tasks", "streams": {stream: [field]},
                     "operators"?: [str], "emitted_per_sec", "executed_per_sec",
                     "acked_per_sec", "failed_per_sec",
                     "capacity": float | null (bolts, over the report's window),
                     "latency_ms": complete (spouts) or execute (bolts) latency}],
     "edges": [{"from", "to", "stream", "grouping", "fields": [str],
                "tuples_per_sec", "backpressured": bool}]}

An edge's rate is what its source emits on its stream per second; every subscribing bolt
receives each of those tuples once (``all`` grouping: once per task of the bolt, so the
rate is multiplied by its tasks).  An edge is ``backpressured`` while a worker running its
source waits for a worker running its target: frames held for its full queue, or spouts
held by its signal (:func:`topology.stats.status_report.backpressured_edges`).
"""

from __future__ import annotations

from typing import Any

from topology.stats.status_report import backpressured_edges

from .rates import Key, component_rates, stream_rate


def build_graph(
    components: dict[str, Any], report: dict[str, Any] | None, rates: dict[Key, float]
) -> dict[str, Any]:
    """The graph of ``components`` with ``report``'s capacities and latencies (None: no
    report, e.g. the topology does not answer) and ``rates``."""
    rows = {r["id"]: r for r in (report or {}).get("spouts", []) + (report or {}).get("bolts", [])}
    nodes, edges = [], []
    pressed = backpressured_edges((report or {}).get("workers") or [])
    for cid in sorted(components):
        info = components[cid]
        row = rows.get(cid, {})
        spout = info.get("kind") == "spout"
        node = {
            "id": cid,
            "kind": info.get("kind"),
            "tasks": info.get("tasks"),
            "streams": info.get("streams", {}),
            **({"operators": info["operators"]} if "operators" in info else {}),
            **component_rates(rates, cid),
            "capacity": None if spout else row.get("capacity"),
            "latency_ms": row.get("complete_latency_ms" if spout else "execute_latency_ms"),
        }
        nodes.append(node)
        for edge in info.get("inputs", []):
            rate = stream_rate(rates, edge["component"], edge["stream"])
            if edge.get("grouping") == "all":
                rate = round(rate * int(info.get("tasks") or 1), 1)
            edges.append(
                {
                    "from": edge["component"],
                    "to": cid,
                    "stream": edge["stream"],
                    "grouping": edge.get("grouping"),
                    "fields": list(edge.get("fields") or []),
                    "tuples_per_sec": rate,
                    "backpressured": (edge["component"], cid) in pressed,
                }
            )
    return {"components": nodes, "edges": edges}
