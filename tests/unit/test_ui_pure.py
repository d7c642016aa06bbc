"""The web UI's pure parts: parameter checks, admin and CSRF tokens, live rates, the graph,
the OpenAPI document."""

from __future__ import annotations

import configparser
import contextlib
import json
import threading
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.integration.helpers import wait_for
from topology.config import ConfigError
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.ui_view import ClusterClientView
from topology.stats.prometheus import TopologySnapshot
from topology.ui import params
from topology.ui.auth import CSRF_COOKIE, Guard, UiSettings
from topology.ui.graph import build_graph
from topology.ui.hub import Poller
from topology.ui.openapi import openapi
from topology.ui.params import BadRequest
from topology.ui.rates import RateTracker, topology_rates
from topology.ui.source import PollRound

pytestmark = pytest.mark.timeout(60)

TOKEN = "0123456789abcdef-token"


def refused(fn: Any, *args: Any) -> BadRequest:
    with pytest.raises(BadRequest) as info:
        fn(*args)
    return info.value


def test_query_parameters_are_strict() -> None:
    assert params.query_params([("window", "3h")], ("window",)) == {"window": "3h"}
    assert refused(params.query_params, [("windw", "3h")], ("window",)).parameter == "windw"
    twice = [("window", "3h"), ("window", "1d")]
    assert refused(params.query_params, twice, ("window",)).parameter == "window"
    assert refused(params.query_params, [("window", "x" * 300)], ("window",)).status == 400


@given(st.text(max_size=30))
def test_integers_are_digits_in_range(raw: str) -> None:
    try:
        value = params.integer({"worker": raw}, "worker", 0, 100)
    except BadRequest as exc:
        assert exc.parameter == "worker" and exc.status == 400
    else:
        assert raw.isascii() and raw.isdigit() and value == int(raw) <= 100


@pytest.mark.parametrize("raw", ["-1", "1e3", "1.5", True, "", " 1", "99999999999999"])
def test_bad_integers_are_refused(raw: Any) -> None:
    assert refused(params.integer, {"bytes": raw}, "bytes", 1, 1000).parameter == "bytes"


def test_seconds_levels_workers_windows_and_names() -> None:
    assert params.seconds({"wait_secs": "2.5"}, "wait_secs") == 2.5
    assert params.seconds({"wait_secs": 0}, "wait_secs") == 0.0
    assert refused(params.seconds, {"timeout": 0}, "timeout", True).parameter == "timeout"
    assert refused(params.seconds, {"wait_secs": float("nan")}, "wait_secs").status == 400
    assert params.level({"level": "debug"}) == "DEBUG"
    assert refused(params.level, {}).parameter == "level"
    assert refused(params.workers, {}).parameter == "workers"
    assert refused(params.workers, {"workers": 10_001}).parameter == "workers"
    assert params.window({}) == "600" and params.window({"window": "all"}) == ":all-time"
    assert refused(params.window, {"window": "5m"}).parameter == "window"
    assert refused(params.name, "../etc").parameter == "name"
    assert refused(params.name, "a b", "component", "component").parameter == "component"


def test_the_ui_keys_are_checked_and_the_token_is_never_the_cluster_secret() -> None:
    settings = UiSettings.from_conf({"sparkstorm.cluster.secret": "s" * 16})
    assert settings.admin_token is None  # an explicit ui.admin.token only: actions disabled
    both = {"sparkstorm.cluster.secret": "s" * 16, "ui.admin.token": TOKEN}
    assert UiSettings.from_conf(both).admin_token == TOKEN
    assert UiSettings.from_conf({}).admin_token is None
    assert UiSettings.from_conf({"ui.admin.token": TOKEN}).admin_token == TOKEN
    for bad in ({"ui.admin.token": "short"}, {"ui.port": 70000}, {"ui.publish.interval.secs": 0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            UiSettings.from_conf(bad)


def test_the_guard_wants_the_token_then_a_csrf_token_it_issued() -> None:
    assert refused(Guard(None).check, {}, {}).status == 403
    guard = Guard(TOKEN)
    csrf = guard.new_csrf()
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert refused(guard.check, {}, {}).status == 401
    assert refused(guard.check, {"authorization": "Bearer nope"}, {}).status == 401
    assert refused(guard.check, auth, {}).parameter == "X-CSRF-Token"
    with_header = {**auth, "x-csrf-token": csrf}
    assert refused(guard.check, with_header, {}).status == 403
    assert refused(guard.check, with_header, {CSRF_COOKIE: csrf + "x"}).status == 403
    guard.check(with_header, {CSRF_COOKIE: csrf})
    other = Guard(TOKEN).new_csrf()  # another server's token
    assert refused(guard.check, {**auth, "x-csrf-token": other}, {CSRF_COOKIE: other}).status == 403


def reply(worker: int, pid: int, at: float, emitted: int, executed: int) -> dict[str, Any]:
    return {
        "worker": worker,
        "pid": pid,
        "time": at,
        "tasks": {
            "1": {"component": "s", "emitted": {"default": emitted}, "acked": emitted},
            "2": {"component": "b", "emitted": {}, "executed": executed},
        },
    }


def test_rates_are_changes_between_samples_over_the_time_between_them() -> None:
    tracker = RateTracker()
    assert tracker.update([reply(0, 7, 10.0, 100, 50)]) == {}
    rates = tracker.update([reply(0, 7, 12.0, 300, 150)])
    assert rates[("emitted", "s", "default")] == 100.0
    assert rates[("executed", "b", "")] == 50.0
    assert tracker.update([reply(0, 7, 12.0, 300, 150)]) == rates  # the same sample again
    assert tracker.update([reply(0, 8, 13.0, 5, 5)]) == {}  # relaunched: starts over
    assert topology_rates(rates, {"s"}) == {
        "emitted_per_sec": 100.0,
        "acked_per_sec": 100.0,
        "failed_per_sec": 0.0,
    }


def test_the_graph_has_edge_rates_and_bolt_capacities() -> None:
    components = {
        "s": {"kind": "spout", "tasks": 1, "streams": {"default": ["x"]}, "inputs": []},
        "b": {
            "kind": "bolt",
            "tasks": 3,
            "streams": {},
            "inputs": [{"component": "s", "stream": "default", "grouping": "all", "fields": []}],
        },
    }
    report = {
        "spouts": [{"id": "s", "complete_latency_ms": 2.0}],
        "bolts": [{"id": "b", "capacity": 0.9}],
    }
    graph = build_graph(components, report, {("emitted", "s", "default"): 10.0})
    [edge] = graph["edges"]
    assert (edge["from"], edge["to"], edge["tuples_per_sec"]) == ("s", "b", 30.0)
    nodes = {n["id"]: n for n in graph["components"]}
    assert nodes["b"]["capacity"] == 0.9 and nodes["s"]["capacity"] is None
    assert nodes["s"]["emitted_per_sec"] == 10.0 and nodes["s"]["latency_ms"] == 2.0


def test_the_openapi_document_is_json_with_every_action() -> None:
    doc = json.loads(json.dumps(openapi()))
    assert doc["openapi"] == "3.1.0"
    posts = [p for p, item in doc["paths"].items() if "post" in item]
    assert len(posts) == 5
    assert all(
        "$ref" not in json.dumps(v) or "#/components/schemas/" in json.dumps(v)
        for v in doc["paths"].values()
    )


def test_the_ui_extra_needs_an_anyio_that_can_abandon_a_thread() -> None:
    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    ui = setup["options.extras_require"]["ui"].split()
    assert "anyio>=4.1" in ui  # anyio.to_thread.run_sync(abandon_on_cancel=...)


class TwoTopologies:
    """A fake view of ``fast`` and ``slow``; ``slow``'s polls wait while :attr:`hold` is
    set; every poll's spouts have emitted one more than the last."""

    def __init__(self) -> None:
        self.hold = threading.Event()
        self.free = threading.Event()
        self.count: Counter[str] = Counter()
        self.started: Counter[str] = Counter()

    def poll_round(self) -> PollRound:
        return PollRound(["fast", "slow"], None, self.poll)

    def poll(self, name: str) -> TopologySnapshot:
        self.started[name] += 1
        if name == "slow" and self.hold.is_set():
            self.free.wait(30)
        self.count[name] += 1
        spouts = [{"id": "s", "emitted": self.count[name], "acked": 0, "failed": 0}]
        bolts = [{"id": "b", "capacity": None}]
        topology = {"id": name, "name": name, "status": "ACTIVE"}
        return TopologySnapshot({"topology": topology, "spouts": spouts, "bolts": bolts}, [])

    def describe(self, name: str) -> dict[str, Any]:
        return {"id": name, "components": {}, "conf": {}}


def test_a_slow_topology_is_late_alone_and_keeps_its_last_values() -> None:
    view = TwoTopologies()
    poller = Poller(view, 0.1, deadline=0.3)  # type: ignore[arg-type]
    try:
        first = {r["name"]: r for r in poller.collect(1).summary["topologies"]}
        assert first["fast"]["error"] is None and first["slow"]["error"] is None
        assert first["fast"]["max_capacity"] is None  # unknown, not 0.0
        view.hold.set()
        got: list[Any] = []
        started = time.monotonic()
        thread = threading.Thread(target=lambda: got.append(poller.collect(2)))
        thread.start()
        thread.join(5)
        assert got, "one slow topology held the whole snapshot"
        assert time.monotonic() - started < 2
        second = {r["name"]: r for r in got[0].summary["topologies"]}
        assert second["fast"]["error"] is None and second["fast"]["emitted"] == 2
        assert "no answer within 0.3 s" in second["slow"]["error"]
        assert second["slow"]["emitted"] == 1  # its last values
        assert "slow" in got[0].topologies  # its last report, still shown
        third = {r["name"]: r for r in poller.collect(3).summary["topologies"]}
        assert view.started["slow"] == 2  # the held poll is not started again
        assert "no answer" in third["slow"]["error"]
        view.hold.clear()
        view.free.set()
        seq = iter(range(4, 1000))

        def rows() -> dict[str, Any]:
            return {r["name"]: r for r in poller.collect(next(seq)).summary["topologies"]}

        assert wait_for(rows, lambda got: got["slow"]["error"] is None, 10)["slow"]["emitted"] >= 2
    finally:
        view.free.set()
        poller.close()


class CountingCluster:
    """A fake :class:`Cluster` counting the reads of one poll."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.asked: list[tuple[str, bool, Any, Any]] = []
        self.zk = SimpleNamespace(reachable=contextlib.nullcontext)

    def topologies(self) -> list[dict[str, Any]]:
        self.calls["topologies"] += 1
        return [{"id": f"{n}-7", "name": n, "status": "ACTIVE"} for n in ("c", "a", "b")]

    def nimbuses(self) -> dict[str, Any]:
        self.calls["nimbuses"] += 1
        return {"leader": "nimbus-1", "standbys": []}

    def snapshot(
        self,
        name: str,
        window: str = "10m",
        fresh: bool = True,
        summary: Any = None,
        nimbus: Any = None,
    ) -> TopologySnapshot:
        self.calls["snapshot"] += 1
        self.asked.append((name, fresh, summary, nimbus))
        return TopologySnapshot({"topology": {"id": f"{name}-7"}}, [])


def test_one_poll_of_a_cluster_reads_the_topologies_and_nimbuses_once() -> None:
    cluster = CountingCluster()
    poll = ClusterClientView(cluster).poll_round()  # type: ignore[arg-type]
    assert poll.names == ["a", "b", "c"] and poll.nimbus == {"leader": "nimbus-1", "standbys": []}
    for name in poll.names:
        poll.poll(name)
    assert cluster.calls == {"topologies": 1, "nimbuses": 1, "snapshot": 3}
    for name, fresh, summary, nimbus in cluster.asked:
        assert fresh is True  # the workers asked now, as `sparkstorm status` does
        assert summary["name"] == name and nimbus is poll.nimbus


class OneTopologyZk:
    """The ZooKeeper reads of :meth:`Cluster.snapshot` for one topology; looking a topology
    up by name or reading the election is an error (the caller gave both)."""

    ignored = 0  # nodes refused while reading

    def read_record(self, topology_id: str) -> dict[str, Any]:
        return {"name": "a", "status": "ACTIVE", "components": {}}

    def read_assignment(self, topology_id: str) -> dict[str, Any]:
        return {"attempt": 0, "workers": 1}

    def heartbeats(self, topology_id: str, attempt: int = 0) -> dict[int, Any]:
        return {}

    def carried_stats(self, topology_id: str) -> list[Any]:  # worker 0 has not reported
        return []

    def driver(self, topology_id: str) -> dict[str, Any]:
        return {}

    def errors(self, topology_id: str) -> dict[str, Any]:
        return {}

    def find_by_name(self, name: str) -> str:
        raise AssertionError("looked up by name: reads every record")

    def election(self, path: str) -> Any:
        raise AssertionError("read the election again")


def test_a_snapshot_given_the_summary_and_nimbuses_reads_neither_again() -> None:
    cluster = Cluster.__new__(Cluster)
    cluster.zk = OneTopologyZk()  # type: ignore[assignment]
    summary = {"id": "a-7", "name": "a", "status": "ACTIVE", "workers": 1, "tasks": 0}
    nimbus = {"leader": "nimbus-1", "standbys": []}
    report, _ = cluster.snapshot("a", fresh=False, summary=summary, nimbus=nimbus)
    assert report["nimbus"] == nimbus and report["topology"]["id"] == "a-7"
