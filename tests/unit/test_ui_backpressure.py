"""Backpressure on the graph's edges: read from the workers' full peers (status report),
carried by the API's graph, drawn thick and red in the SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from tests.unit.test_status_report import _task
from topology.stats.status_report import backpressured_edges, build_report
from topology.ui.graph import build_graph
from topology.ui.svg import EDGE_STROKE, graph_svg

pytestmark = pytest.mark.timeout(60)

SVG = "{http://www.w3.org/2000/svg}"
NOW = 1_700_000_000.0


def _inputs(*sources: str) -> list[dict[str, Any]]:
    return [{"component": s, "stream": "default", "grouping": "shuffle"} for s in sources]


#: words -> split -> count, and words -> audit
COMPONENTS = {
    "words": {"kind": "spout", "tasks": 1, "streams": {"default": ["w"]}, "inputs": []},
    "split": {
        "kind": "bolt",
        "tasks": 1,
        "streams": {"default": ["w"]},
        "inputs": _inputs("words"),
    },
    "count": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": _inputs("split")},
    "audit": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": _inputs("words")},
}
TOPOLOGY = {"name": "t", "id": "t-1", "status": "ACTIVE", "uptime_secs": 5.0}


def _replies(full_peers: dict[int, list[int]]) -> list[dict[str, Any]]:
    """Worker 0 runs words and split, worker 1 count, worker 2 audit."""
    placed = {0: {"1": ("words", "spout"), "2": ("split", "bolt")}, 1: {"3": ("count", "bolt")}}
    placed[2] = {"4": ("audit", "bolt")}
    return [
        {
            "worker": w,
            "pid": 100 + w,
            "time": NOW,
            "tasks": {t: _task(c, kind) for t, (c, kind) in tasks.items()},
            "congested": bool(full_peers.get(w)),
            "full_peers": full_peers.get(w, []),
        }
        for w, tasks in placed.items()
    ]


def test_an_edge_into_a_full_worker_is_backpressured_and_no_other() -> None:
    report = build_report(TOPOLOGY, COMPONENTS, _replies({0: [1]}), now=NOW)
    rows = {w["worker"]: w for w in report["workers"]}
    assert rows[0]["components"] == ["split", "words"] and rows[0]["full_peers"] == [1]
    assert rows[1]["full_peers"] == []
    # worker 0 holds frames for worker 1, which runs count: split -> count waits on it
    assert backpressured_edges(report["workers"]) == {("split", "count"), ("words", "count")}
    edges = {
        (e["from"], e["to"]): e["backpressured"]
        for e in build_graph(COMPONENTS, report, {})["edges"]
    }
    assert edges == {("words", "split"): False, ("split", "count"): True, ("words", "audit"): False}


def test_an_edge_into_a_worker_that_holds_the_spouts_back_is_backpressured() -> None:
    replies = _replies({})
    replies[0]["throttled_by"] = [2]  # worker 2 (audit) asks worker 0's spouts to wait
    report = build_report(TOPOLOGY, COMPONENTS, replies, now=NOW)
    assert backpressured_edges(report["workers"]) == {("words", "audit"), ("split", "audit")}
    graph = build_graph(COMPONENTS, report, {})
    assert [(e["from"], e["to"]) for e in graph["edges"] if e["backpressured"]] == [
        ("words", "audit")
    ]


def test_no_full_peer_no_backpressure_and_no_report_none() -> None:
    report = build_report(TOPOLOGY, COMPONENTS, _replies({}), now=NOW)
    assert backpressured_edges(report["workers"]) == set()
    graphs = (build_graph(COMPONENTS, report, {}), build_graph(COMPONENTS, None, {}))
    assert not any(e["backpressured"] for g in graphs for e in g["edges"])


def test_the_svg_draws_a_backpressured_edge_thick_and_red() -> None:
    report = build_report(TOPOLOGY, COMPONENTS, _replies({0: [1, 2]}), now=NOW)
    svg = graph_svg(build_graph(COMPONENTS, report, {}))
    edges = {
        (g.get("data-source"), g.get("data-target")): g
        for g in ET.fromstring(svg).iter(f"{SVG}g")
        if "edge" in (g.get("class") or "").split()
    }
    for key, g in edges.items():
        pressed = key != ("words", "split")
        path = g.find(f"{SVG}path")
        title = g.find(f"{SVG}title")
        assert path is not None and title is not None
        assert (path.get("stroke"), float(path.get("stroke-width") or 0)) == EDGE_STROKE[pressed]
        assert ("backpressured" in (g.get("class") or "").split()) is pressed
        assert (title.text or "").endswith(": backpressured") is pressed
