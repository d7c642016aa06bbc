"""Named streams and tick tuples across real worker processes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.components import EvenOdd, PositionalStreamEmitter, Recorder
from tests.integration.helpers import CONF, WORKERS, seen_values, wait_for
from topology import TICK_STREAM, LocalCluster, TopologyBuilder
from topology.constants import SYSTEM_COMPONENT
from topology.streams import StreamBuilder, tumbling
from topology.testing import FeederSpout, complete_topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _numbers(n: int) -> FeederSpout:
    return FeederSpout(["n"], [[i] for i in range(n)])


def test_subscribers_receive_exactly_their_streams_tuples() -> None:
    n = 300
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n), 2)
    builder.set_bolt("evenodd", EvenOdd(), 2).shuffle_grouping("spout")
    builder.set_bolt("ok", Recorder(), 2).shuffle_grouping("evenodd")
    builder.set_bolt("bad", Recorder(), 2).shuffle_grouping("evenodd", "errors")

    result = complete_topology(builder.create_topology(), CONF)

    evens = [[i] for i in range(0, n, 2)]
    odds = [[i, f"{i} is odd"] for i in range(1, n, 2)]
    for component, stream, expected in (("ok", "default", evens), ("bad", "errors", odds)):
        records = [e for r in result.results[component].values() for e in r["seen"]]
        assert {(c, s) for c, _task, s, _values in records} == {("evenodd", stream)}
        assert sorted(values for *_, values in records) == expected
        workers = {r["worker"] for r in result.results[component].values() if r["seen"]}
        assert workers == set(range(WORKERS)), component
    assert sorted(result.tuples("evenodd")) == evens
    assert sorted(result.tuples("evenodd", "errors")) == odds
    assert result.errors == {}


def test_basic_bolt_emit_accepts_its_documented_positional_signature() -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(20), 2)
    builder.set_bolt("emitter", PositionalStreamEmitter(), 2).shuffle_grouping("spout")

    result = complete_topology(builder.create_topology(), CONF)

    assert result.errors == {}
    assert sorted(result.tuples("emitter", "out")) == [[i] for i in range(20)]


def test_tick_tuples_reach_the_configured_bolt_while_it_runs() -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(50), 2)
    builder.set_bolt("ticked", Recorder(), 2).shuffle_grouping("spout").add_configuration(
        "topology.tick.tuple.freq.secs", 0.2
    )
    builder.set_bolt("plain", Recorder(), 2).shuffle_grouping("spout")

    with LocalCluster() as cluster:
        cluster.submit_topology("ticks", CONF, builder.create_topology())
        results = wait_for(
            lambda: cluster.results("ticks"),
            lambda r: all(len(t["ticks"]) >= 2 for t in r["ticked"].values()),
            timeout=10.0,
        )
        cluster.wait_until_drained("ticks", timeout=30)
        drained = cluster.results("ticks")

    assert {r["worker"] for r in results["ticked"].values()} == set(range(WORKERS))
    for r in results["ticked"].values():
        assert all(tick == [SYSTEM_COMPONENT, TICK_STREAM, [0.2]] for tick in r["ticks"])
    assert all(r["ticks"] == [] for r in drained["plain"].values())
    # ticks are delivered besides the stream, never instead of it
    for component in ("ticked", "plain"):
        values = [v for vs in seen_values(drained[component]).values() for v in vs]
        assert sorted(values) == [[i] for i in range(50)], component


def test_a_parallel_spouts_filtered_branches_fire_their_event_time_join() -> None:
    """Nexmark q8's shape across two workers: one spout task's share holds every ``a``, so
    branch ``a``'s other task never sends the join anything; its progress marks (and a
    topology-wide tick, which no stream operator may take for an element) let it fire."""
    events = [{"kind": "a" if i % 4 == 0 else "b", "k": i % 7, "ts": i * 0.1} for i in range(400)]
    expected = _joined_windows(events, size=5.0, lag=1.0)
    sb = StreamBuilder()
    source = sb.new_stream(FeederSpout(["event"], [[e] for e in events]), 2, name="events")
    a = source.filter(lambda e: e["kind"] == "a").map_to_pair(lambda e: (e["k"], e["ts"]))
    b = source.filter(lambda e: e["kind"] == "b").map_to_pair(lambda e: (e["k"], e["ts"]))
    windowing = tumbling(seconds=5.0).event_time(lambda ts: ts, lag=1.0)
    a.window(windowing).join(b).map(lambda kv: [kv[0], *kv[1]]).to(Recorder(), 2, name="rows")

    def rows(results: dict[str, Any]) -> list[tuple[Any, ...]]:
        found = seen_values(results["rows"]).values()
        return sorted(tuple(values[0]) for task_values in found for values in task_values)

    with LocalCluster() as cluster:
        conf = {**CONF, "topology.tick.tuple.freq.secs": 0.5}
        cluster.submit_topology("branches", conf, sb.build(conf))
        got = wait_for(
            lambda: rows(cluster.results("branches")),
            lambda r: len(r) >= len(expected),
            timeout=60.0,
        )
        errors = cluster.errors("branches")
    assert errors == {}
    assert got == expected


def _joined_windows(events: list[dict[str, Any]], size: float, lag: float) -> list[Any]:
    """``(k, ts_a, ts_b)`` for the pairs of every window the final watermark closed."""
    closed = max(e["ts"] for e in events) - lag
    windows: dict[float, dict[str, list[Any]]] = {}
    for e in events:
        start = (e["ts"] // size) * size
        if start + size <= closed:
            windows.setdefault(start, {"a": [], "b": []})[e["kind"]].append(e)
    return sorted(
        (x["k"], x["ts"], y["ts"])
        for sides in windows.values()
        for x in sides["a"]
        for y in sides["b"]
        if x["k"] == y["k"]
    )
