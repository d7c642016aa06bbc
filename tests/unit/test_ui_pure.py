"""The web UI's pure parts: parameter checks, admin and CSRF tokens, live rates, the graph,
the OpenAPI document."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topology.config import ConfigError
from topology.ui import params
from topology.ui.auth import CSRF_COOKIE, Guard, UiSettings
from topology.ui.graph import build_graph
from topology.ui.openapi import openapi
from topology.ui.params import BadRequest
from topology.ui.rates import RateTracker, topology_rates

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


def test_the_ui_keys_are_checked_and_the_token_falls_back_to_the_cluster_secret() -> None:
    settings = UiSettings.from_conf({"sparkstorm.cluster.secret": "s" * 16})
    assert settings.admin_token == "s" * 16
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
