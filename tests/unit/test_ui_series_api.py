"""``GET /api/v1/topology/{name}/series``: the poller's ring served as columns, its
parameters checked, and the series read from a (fake) Prometheus server when
``ui.prometheus.url`` is set, with the ring as the fallback."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.helpers import wait_for
from tests.unit.test_ui_server import get_json, request
from topology.stats.prometheus import TopologySnapshot
from topology.ui.auth import UiSettings
from topology.ui.params import BadRequest
from topology.ui.series import FIELDS, SeriesStore
from topology.ui.series_api import series_window
from topology.ui.series_prometheus import expressions, query_series
from topology.ui.server import UiServer
from topology.ui.source import PollRound

pytestmark = pytest.mark.timeout(60)

COMPONENTS = {
    "src": {"kind": "spout", "tasks": 1, "inputs": [], "streams": {"default": ["n"]}},
    "sink": {"kind": "bolt", "tasks": 1, "inputs": [], "streams": {}},
}


class CountingView:
    """A fake ClusterView of one topology ``t`` whose spout emits 50 tuples per second of
    its replies' clock (each poll's reply is 0.1 s newer)."""

    def __init__(self) -> None:
        self.polls = 0

    @property
    def ops(self) -> CountingView:
        return self

    def topology_names(self) -> list[str]:
        return ["t"]

    def describe(self, name: str) -> dict[str, Any]:
        return {"id": name, "components": COMPONENTS, "conf": {}}

    def nimbuses(self) -> None:
        return None

    def poll_round(self) -> PollRound:
        return PollRound(["t"], None, self._poll)

    def _poll(self, name: str) -> TopologySnapshot:
        self.polls += 1
        n = self.polls
        topology = {"id": name, "name": name, "status": "ACTIVE", "workers": 1}
        report = {"topology": topology, "window": "600", "spouts": [], "bolts": []}
        reply = {
            "worker": 0,
            "pid": 1,
            "time": 1000.0 + 0.1 * n,
            "spouts_held_secs": 0.025 * n,
            "tasks": {
                "1": {"component": "src", "kind": "spout", "emitted": {"default": 5 * n}},
                "2": {"component": "sink", "kind": "bolt", "executed": 5 * n, "queued": 2},
            },
        }
        return TopologySnapshot(report, [reply])


@pytest.fixture
def served() -> Iterator[tuple[str, Any]]:
    view = CountingView()
    with UiServer(view, UiSettings(publish_interval=0.05), port=0) as server:
        ctx = server.app.state.ui
        ctx.hub.poller.series = SeriesStore({"10m": 0.1, "3h": 1.0, "1d": 2.0})
        yield server.url, ctx


def test_the_series_of_a_topology_and_of_one_component(served: tuple[str, Any]) -> None:
    url, _ = served
    body = wait_for(
        lambda: get_json(url, "/api/v1/topology/t/series")[1],
        lambda b: len(b["times"]) >= 10,
        20,
        0.1,
    )
    assert body["source"] == "ring" and body["window"] == "10m"
    assert body["fields"] == list(FIELDS)
    assert set(body["components"]) == {"src", "sink"}
    src, sink = body["components"]["src"], body["components"]["sink"]
    assert src["kind"] == "spout" and sink["kind"] == "bolt"
    for column in (src, sink):
        assert all(len(column[f]) == len(body["times"]) for f in FIELDS)
    assert set(src["emitted_per_sec"][1:]) == {50.0}
    assert set(sink["executed_per_sec"][1:]) == {50.0}
    assert set(src["backpressured"][1:]) == {0.25}
    assert set(sink["queue"]) == {2.0}
    status, one = get_json(url, "/api/v1/topology/t/series?window=3h&component=sink")
    assert status == 200 and one["window"] == "3h" and set(one["components"]) == {"sink"}


@pytest.mark.parametrize(
    ("query", "status", "parameter"),
    [
        ("window=all", 400, "window"),
        ("window=2h", 400, "window"),
        ("component=nope", 404, "component"),
        ("component=%3Cb%3E", 400, "component"),
        ("source=elsewhere", 400, "source"),
        ("source=prometheus", 400, "source"),  # none configured
        ("step=1", 400, "step"),
    ],
)
def test_bad_parameters_are_named(
    served: tuple[str, Any], query: str, status: int, parameter: str
) -> None:
    url, _ = served
    got, body = get_json(url, f"/api/v1/topology/t/series?{query}")
    assert (got, body["parameter"]) == (status, parameter), body


@pytest.fixture(scope="module")
def shared_url() -> Iterator[str]:
    with UiServer(CountingView(), UiSettings(publish_interval=0.05), port=0) as server:
        yield server.url


def _window_ok(text: str) -> bool:
    try:
        series_window({"window": text})
    except BadRequest:
        return False
    return True


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_CASES = st.one_of(
    st.tuples(st.just("window"), _TEXT.filter(lambda w: not _window_ok(w))),
    st.tuples(st.just("component"), _TEXT.filter(lambda c: c not in COMPONENTS)),
    st.tuples(st.just("source"), _TEXT.filter(lambda c: c != "ring")),
    st.tuples(
        st.just("unknown"),
        st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
            lambda k: k not in ("window", "component", "source")
        ),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_CASES)
def test_hostile_parameters_get_a_4xx_naming_them(shared_url: str, case: tuple[str, str]) -> None:
    kind, value = case
    quoted = urllib.parse.quote(value, safe="")
    path = (
        f"/api/v1/topology/t/series?{quoted}=1"
        if kind == "unknown"
        else (f"/api/v1/topology/t/series?{kind}={quoted}")
    )
    status, headers, body = request(shared_url, "GET", path)
    assert 400 <= status < 500, (path, status, body)
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["parameter"] == (value if kind == "unknown" else kind), (path, body)


def test_an_unknown_topology_is_404(served: tuple[str, Any]) -> None:
    got, body = get_json(served[0], "/api/v1/topology/nope/series")
    assert got == 404 and body["parameter"] == "name"


class FakePrometheus:
    """A Prometheus answering every range query with one point per field for ``src``."""

    def __init__(self) -> None:
        self.queries: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                params = dict(urllib.parse.parse_qsl(parts.query))
                outer.queries.append({"path": parts.path, **params})
                t = float(params["end"])
                result = [
                    {
                        "metric": {"component": "src", "field": f},
                        "values": [[t - 2, "1.5"], [t, "NaN"]],
                    }
                    for f in FIELDS
                ]
                body = json.dumps(
                    {"status": "success", "data": {"resultType": "matrix", "result": result}}
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_series_read_from_prometheus_in_one_range_query() -> None:
    prometheus = FakePrometheus()
    try:
        body = query_series(prometheus.url, "wc", "3h", "src", now=10_000.0)
    finally:
        prometheus.close()
    [asked] = prometheus.queries
    assert asked["path"] == "/api/v1/query_range"
    assert (asked["start"], asked["end"], asked["step"]) == ("-800.000", "10000.000", "36")
    assert asked["query"].count("label_replace(") == len(FIELDS)
    assert 'topology="wc",component="src"' in asked["query"]
    assert body["source"] == "prometheus" and body["times"] == [9998.0, 10000.0]
    assert body["components"]["src"]["busy"] == [1.5, None]
    assert "[72s]" in expressions("wc", None, 36.0)["emitted_per_sec"]  # two steps
    assert "[60s]" in expressions("wc", None, 2.0)["emitted_per_sec"]  # at least a minute


def test_the_api_reads_prometheus_when_configured_and_falls_back_to_the_ring() -> None:
    prometheus = FakePrometheus()
    view = CountingView()
    settings = UiSettings(publish_interval=0.05, prometheus_url=prometheus.url)
    try:
        with UiServer(view, settings, port=0) as server:
            wait_for(lambda: server.app.state.ui.hub.polls, lambda n: n >= 3, 10)
            status, body = get_json(server.url, "/api/v1/topology/t/series")
            assert status == 200 and body["source"] == "prometheus"
            assert body["components"]["src"]["kind"] == "spout"  # from the ring
            status, ring = get_json(server.url, "/api/v1/topology/t/series?source=ring")
            assert status == 200 and ring["source"] == "ring"
            prometheus.close()
            started = time.monotonic()
            status, body = get_json(server.url, "/api/v1/topology/t/series")
            assert status == 200 and body["source"] == "ring"
            assert "did not answer" in body["source_error"]
            assert time.monotonic() - started < 10
            status, body = get_json(server.url, "/api/v1/topology/t/series?source=prometheus")
            assert status == 503 and "did not answer" in body["message"]
    finally:
        prometheus.close()
