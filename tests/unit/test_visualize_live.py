"""``sparkstorm visualize NAME`` of a running topology draws the web UI's live graph: the
SVG is ``/api/v1/topology/NAME/graph.svg``'s (:func:`topology.ui.svg.graph_svg` of
:func:`topology.ui.graph.build_graph`), with edge rates and bolt capacities; the text
formats carry the same numbers. A scripted cluster stands in for ZooKeeper and workers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner

import cli.visualize
from cli.live_graph import live_graph
from cli.main import cli as sparkstorm
from topology.ui.graph import build_graph
from topology.ui.rates import RateTracker
from topology.ui.svg import graph_svg

pytestmark = pytest.mark.timeout(30)

COMPONENTS = {
    "numbers": {"kind": "spout", "tasks": 1, "streams": {"default": ["n"]}, "inputs": []},
    "sink": {
        "kind": "bolt",
        "tasks": 1,
        "streams": {},
        "inputs": [{"component": "numbers", "stream": "default", "grouping": "shuffle"}],
    },
}
REPORT = {
    "spouts": [{"id": "numbers", "complete_latency_ms": 2.0}],
    "bolts": [{"id": "sink", "capacity": 0.91, "execute_latency_ms": 0.5}],
}


def reply(taken: float, n: int) -> dict[str, Any]:
    """One worker's status reply: ``n`` emitted by the spout and executed by the sink."""
    tasks = {
        "1": {"component": "numbers", "kind": "spout", "emitted": {"default": n}, "acked": n},
        "2": {"component": "sink", "kind": "bolt", "emitted": {}, "executed": n, "acked": n},
    }
    return {"worker": 0, "pid": 42, "time": taken, "tasks": tasks}


class Workers:
    """A cluster client whose one worker has emitted 1,500 more tuples at each ask, 1 s of
    its own clock apart (``stuck``: it answers with the same sample each time)."""

    def __init__(self, stuck: bool = False) -> None:
        self.asked = 0
        self.stuck = stuck
        self.zk = self

    def snapshot(self, name: str, window: str = "10m") -> tuple[dict[str, Any], list[Any]]:
        assert name == "wc"
        self.asked += 1
        n = 0 if self.stuck else self.asked - 1
        return REPORT, [reply(1000.0 + n, 1500 * n)]

    def topology_id(self, name: str) -> str:
        return f"{name}-1"

    def read_record(self, topology_id: str) -> dict[str, Any]:
        return {"name": "wc", "components": COMPONENTS}


def expected_graph() -> dict[str, Any]:
    tracker: RateTracker[Any] = RateTracker()
    tracker.update([reply(1000.0, 0)])
    return build_graph(COMPONENTS, REPORT, tracker.update([reply(1001.0, 1500)]))


def test_live_graph_asks_until_it_has_rates() -> None:
    naps: list[float] = []
    graph, has_rates = live_graph(Workers(), "wc", COMPONENTS, sleep=naps.append)
    assert has_rates and naps == [1.0]
    assert graph == expected_graph()
    [edge] = graph["edges"]
    assert edge["tuples_per_sec"] == 1500.0
    sink = next(n for n in graph["components"] if n["id"] == "sink")
    assert sink["capacity"] == 0.91 and sink["executed_per_sec"] == 1500.0


def test_live_graph_gives_up_on_rates_after_its_deadline() -> None:
    now = [0.0]

    def nap(secs: float) -> None:
        now[0] += secs

    graph, has_rates = live_graph(
        Workers(stuck=True), "wc", COMPONENTS, within=3.0, clock=lambda: now[0], sleep=nap
    )
    assert not has_rates and now[0] == 3.0
    assert graph["edges"][0]["tuples_per_sec"] == 0.0


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch) -> Workers:
    workers = Workers()

    @contextmanager
    def session(config: Any) -> Iterator[Workers]:
        yield workers

    monkeypatch.setattr(cli.visualize, "cluster_session", session)
    return workers  # (the command waits its 1 s between two asks)


def test_visualize_name_as_svg_is_the_ui_graph(running: Workers) -> None:
    result = CliRunner().invoke(sparkstorm, ["visualize", "wc", "--format", "svg"])
    assert result.exit_code == 0, result.output
    assert result.stdout == graph_svg(expected_graph(), title="wc")
    assert "1,500/s" in result.stdout  # the edge's rate, as the UI labels it
    assert 'class="node bolt cap-high" data-component="sink"' in result.stdout
    assert "capacity 0.910" in result.stdout


@pytest.mark.parametrize(
    ("fmt", "edge"),
    [
        ("text", "numbers --shuffle--> sink x1 1,500/s\n"),
        ("dot", '"numbers" -> "sink" [label="shuffle 1,500/s"];'),
        ("mermaid", '-->|"shuffle 1,500/s"|'),
    ],
)
def test_visualize_name_as_text_carries_rates_and_capacity(
    running: Workers, fmt: str, edge: str
) -> None:
    result = CliRunner().invoke(sparkstorm, ["visualize", "wc", "--format", fmt])
    assert result.exit_code == 0, result.output
    assert "executed 1,500/s, capacity 0.91" in result.stdout
    assert "emitted 1,500/s" in result.stdout
    assert edge in result.stdout


def test_visualize_name_without_rates_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    workers = Workers(stuck=True)

    @contextmanager
    def session(config: Any) -> Iterator[Workers]:
        yield workers

    monkeypatch.setattr(cli.visualize, "cluster_session", session)
    monkeypatch.setattr(cli.visualize, "live_graph", _no_wait(cli.visualize.live_graph))
    result = CliRunner().invoke(sparkstorm, ["visualize", "wc"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("Note: no live rates for wc:")
    assert "numbers --shuffle--> sink x1 0/s" in result.stdout


def _no_wait(fn: Any) -> Any:
    """``fn`` (live_graph) that gives up on rates at once."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, within=0.0, **kwargs)

    return call
