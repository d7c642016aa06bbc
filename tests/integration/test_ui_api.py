"""The web UI's REST API on a real LocalCluster running examples/wordcount.py (issue 28):
summaries whose counts and rates agree with ``ClusterOps.stats``, the topology and
component pages, logs, actions behind the admin token and CSRF, OpenAPI, bad inputs
(hypothesis), and server-sent events shared by every client."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from tests.unit.test_ui_server import get_json, read_events, request
from topology import LocalCluster
from topology.names import name_problem
from topology.stats.rolling import parse_window

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN = "an-admin-token-for-the-ui-tests"
INTERVAL = 0.5
NAME = "wc"
TOPOLOGY_CONF = {
    "topology.workers": 2,
    "topology.max.spout.pending": 200,
    "db.password": "hunter2-hunter2",
}


def wordcount() -> Any:
    topology, _ = load_topology(f"{EXAMPLES / 'wordcount.py'}:topology", {})
    return topology


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    base = {
        "ui.admin.token": TOKEN,
        "ui.publish.interval.secs": INTERVAL,
        "topology.stats.interval.secs": 1,
    }
    with LocalCluster(base, ui_port=0) as local:
        local.submit_topology(NAME, TOPOLOGY_CONF, wordcount())
        yield local


@pytest.fixture(scope="module")
def url(cluster: LocalCluster) -> str:
    assert cluster.ui_url is not None
    return cluster.ui_url


def row(url: str, name: str = NAME) -> dict[str, Any] | None:
    _, summary = get_json(url, "/api/v1/cluster/summary")
    return next((r for r in summary["topologies"] if r["name"] == name), None)


def spout_emitted(cluster: LocalCluster) -> int:
    return sum(s["emitted"] for s in cluster.stats(NAME)["spouts"])


def spout_counts(cluster: LocalCluster) -> dict[str, int]:
    """The spouts' emitted / acked / failed over the window, as `status --json` shows them."""
    spouts = cluster.stats(NAME)["spouts"]
    return {k: sum(int(s.get(k) or 0) for s in spouts) for k in ("emitted", "acked", "failed")}


def csrf_headers(url: str) -> dict[str, str]:
    _, _, raw = request(url, "GET", "/api/v1/csrf")
    token = json.loads(raw)["csrf_token"]
    return {
        "Authorization": f"Bearer {TOKEN}",
        "X-CSRF-Token": token,
        "Cookie": f"sparkstorm_csrf={token}",
        "Content-Type": "application/json",
    }


def post(url: str, path: str, params: dict[str, Any] | None = None, **headers: str) -> Any:
    body = json.dumps(params).encode() if params is not None else None
    status, _, raw = request(url, "POST", path, headers={**csrf_headers(url), **headers}, body=body)
    return status, json.loads(raw)


def test_the_summary_lists_the_topology_with_rising_rates_that_match_stats(
    cluster: LocalCluster, url: str
) -> None:
    first = wait_for(lambda: row(url), lambda r: r and (r["emitted_per_sec"] or 0) > 0, 60, 0.2)
    assert first is not None and first["error"] is None
    assert first["window"] == 600  # seconds, a number (docs/UI.md)
    assert (first["id"], first["status"], first["workers"], first["tasks"]) == (
        NAME,
        "ACTIVE",
        2,
        6 + 2,  # 2 + 2 + 2 tasks and one acker per worker
    )
    # The summary's counts are `status --json`'s (ClusterOps.stats): taken after `before`
    # and before `after`, they lie between the two, give or take what one publish interval
    # at the rate measured between them adds.
    before, started = spout_counts(cluster), time.monotonic()
    polls = get_json(url, "/api/v1/ui")[1]["polls"]
    # poll polls+1 may have begun before `before`; polls+2 began after polls+1 was published
    summary = wait_for(
        lambda: get_json(url, "/api/v1/topology/summary")[1],
        lambda s: s["seq"] >= polls + 2,
        30,
        0.05,
    )
    after, ended = spout_counts(cluster), time.monotonic()
    shown = next(r for r in summary["topologies"] if r["name"] == NAME)
    for what in ("emitted", "acked", "failed"):
        rate = (after[what] - before[what]) / (ended - started)
        slack = rate * INTERVAL + 1
        assert before[what] - slack <= shown[what] <= after[what] + slack, (what, before, after)
    assert shown["emitted"] > first["emitted"]  # rising
    assert shown["emitted_per_sec"] > 0 and shown["window"] == first["window"]
    assert [t["name"] for t in summary["topologies"]] == [NAME]


def test_the_topology_page_is_the_status_report_with_graph_and_redacted_conf(
    cluster: LocalCluster, url: str
) -> None:
    status, page = get_json(url, f"/api/v1/topology/{NAME}?window=all")
    assert status == 200
    report = cluster.stats(NAME, "all")
    assert set(report) <= set(page)
    assert page["schema"] == 1 and page["window"] == parse_window("all")
    assert [s["id"] for s in page["spouts"]] == [s["id"] for s in report["spouts"]]
    assert [b["id"] for b in page["bolts"]] == ["count", "split"]
    assert page["conf"]["db.password"] == "****"
    for worker in page["workers"]:  # the data port beside the pid
        assert isinstance(worker["port"], int) and worker["port"] > 0
        assert isinstance(worker["pid"], int)
    assert page["conf"]["topology.workers"] == 2
    assert "ui.admin.token" not in page["conf"]
    assert not [k for k in page["conf"] if k.startswith("storm.zookeeper.")]  # it uses none
    edges = {(e["from"], e["to"]): e for e in page["graph"]["edges"]}
    assert set(edges) == {("sentences", "split"), ("split", "count")}
    assert edges[("split", "count")]["grouping"] == "fields"
    assert edges[("split", "count")]["fields"] == ["word"]
    wait_for(
        lambda: get_json(url, f"/api/v1/topology/{NAME}")[1]["graph"]["edges"],
        lambda es: all(e["tuples_per_sec"] > 0 for e in es),
        30,
        0.3,
    )
    nodes = {n["id"]: n for n in page["graph"]["components"]}
    assert nodes["count"]["capacity"] is not None and nodes["sentences"]["capacity"] is None
    status, _, svg = request(url, "GET", f"/api/v1/topology/{NAME}/graph.svg")
    assert status == 200 and b"<svg" in svg and b"sentences" in svg


def test_the_component_page_has_per_task_stats_and_errors(url: str) -> None:
    status, page = get_json(url, f"/api/v1/topology/{NAME}/component/count?window=10m")
    assert status == 200
    assert page["kind"] == "bolt" and page["tasks"] == 2 and len(page["task_stats"]) == 2
    assert {t["worker"] for t in page["task_stats"]} <= {0, 1}
    assert sum(t["executed"] for t in page["task_stats"]) == page["stats"]["executed"] > 0
    assert page["inputs"][0]["component"] == "split" and page["errors"] == []
    _, spout = get_json(url, f"/api/v1/topology/{NAME}/component/sentences")
    assert spout["outputs"][0]["to"] == "split" and "pending" in spout["task_stats"][0]
    status, error = get_json(url, f"/api/v1/topology/{NAME}/component/nope")
    assert status == 404 and error["parameter"] == "component"


def test_logs_are_read_and_downloaded(url: str) -> None:
    status, logs = get_json(url, f"/api/v1/topology/{NAME}/logs?worker=0&bytes=2048")
    assert status == 200
    [chunk] = logs["chunks"]
    assert chunk["worker"] == 0 and isinstance(chunk["text"], str)
    assert len(chunk["text"].encode()) <= 2048
    status, headers, text = request(url, "GET", f"/api/v1/topology/{NAME}/logs/download?worker=1")
    assert status == 200
    assert headers["content-disposition"] == f'attachment; filename="{NAME}-worker-1.log"'
    assert text.startswith(b"==> worker 1 on ")
    status, error = get_json(url, f"/api/v1/topology/{NAME}/logs?worker=7")
    assert status == 404 and error["parameter"] == "worker"


def test_actions_need_the_token_and_csrf_and_deactivate_stops_the_spouts(
    cluster: LocalCluster, url: str
) -> None:
    path = f"/api/v1/topology/{NAME}/deactivate"
    assert request(url, "POST", path)[0] == 401
    assert request(url, "POST", path, {"Authorization": "Bearer wrong-token-123456789"})[0] == 401
    status, _, raw = request(url, "POST", path, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 403 and json.loads(raw)["parameter"] == "X-CSRF-Token"
    assert cluster.stats(NAME)["topology"]["status"] == "ACTIVE"
    status, body = post(url, path)
    assert status == 200 and body == {"topology": NAME, "action": "deactivate", "status": "success"}
    # the spouts stop emitting: two looks a second apart see the same count
    wait_for(
        lambda: (spout_emitted(cluster), time.sleep(1.0), spout_emitted(cluster)),
        lambda looks: looks[0] == looks[2],
        30,
        0.1,
    )
    wait_for(lambda: row(url), lambda r: r and r["status"] == "INACTIVE", 10, 0.2)
    status, _ = post(url, f"/api/v1/topology/{NAME}/activate")
    assert status == 200
    before = spout_emitted(cluster)
    wait_for(lambda: spout_emitted(cluster), lambda n: n > before, 30, 0.2)


def test_other_actions_check_their_parameters_and_say_what_the_cluster_refused(
    url: str,
) -> None:
    status, body = post(url, f"/api/v1/topology/{NAME}/log-level", {"level": "DEBUG", "timeout": 5})
    assert status == 200 and body["level"] == "DEBUG" and body["workers"] == 2
    status, body = post(url, f"/api/v1/topology/{NAME}/log-level", {"level": "LOUD"})
    assert status == 400 and body["parameter"] == "level"
    status, body = post(url, f"/api/v1/topology/{NAME}/rebalance", {"workers": 0})
    assert status == 400 and body["parameter"] == "workers"
    status, body = post(url, f"/api/v1/topology/{NAME}/rebalance", {"workers": 3})
    assert status == 409 and "cannot rebalance" in body["message"]
    status, body = post(url, f"/api/v1/topology/{NAME}/kill", {"wait_secs": -1})
    assert status == 400 and body["parameter"] == "wait_secs"
    status, body = post(url, f"/api/v1/topology/{NAME}/kill", {"wiat_secs": 0})
    assert status == 400 and body["parameter"] == "wiat_secs"


def test_kill_removes_the_topology(cluster: LocalCluster, url: str) -> None:
    cluster.submit_topology("victim", {"topology.workers": 1}, wordcount())
    wait_for(lambda: row(url, "victim"), lambda r: r is not None, 30, 0.2)
    status, body = post(url, "/api/v1/topology/victim/kill?wait_secs=0")
    assert status == 200 and body["wait_secs"] == 0
    assert "victim" not in cluster.topologies()
    wait_for(lambda: row(url, "victim"), lambda r: r is None, 10, 0.2)
    status, body = post(url, "/api/v1/topology/victim/kill")
    assert status == 404 and body["parameter"] == "name"


def test_openapi_describes_every_path(url: str) -> None:
    status, doc = get_json(url, "/api/v1/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    for path in (
        "/api/v1/cluster/summary",
        "/api/v1/topology/{name}",
        "/api/v1/topology/{name}/component/{component}",
        "/api/v1/topology/{name}/series",
        "/api/v1/topology/{name}/logs",
        "/api/v1/events",
    ):
        assert "get" in doc["paths"][path]
    for action in ("activate", "deactivate", "rebalance", "kill", "log-level"):
        assert "post" in doc["paths"][f"/api/v1/topology/{{name}}/{action}"]


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_CASES = st.one_of(
    st.tuples(st.just("window"), _TEXT.filter(lambda w: not _window_ok(w))),
    st.tuples(st.just("name"), _TEXT.filter(lambda n: name_problem("topology", n) is not None)),
    st.tuples(st.just("worker"), _TEXT.filter(lambda v: not v.isascii() or not v.isdigit())),
    st.tuples(st.just("bytes"), st.integers().filter(lambda b: not 1 <= b <= 256 * 1024)),
    st.tuples(
        st.just("unknown"),
        st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
            lambda k: k not in ("worker", "bytes", "component", "offset", "file")
        ),
    ),
)


def _window_ok(text: str) -> bool:
    try:
        parse_window(text)
    except ValueError:
        return False
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_CASES)
def test_bad_inputs_get_a_4xx_naming_the_parameter(url: str, case: tuple[str, Any]) -> None:
    kind, value = case
    quoted = urllib.parse.quote(str(value), safe="")
    expected = {kind}
    if kind == "window":
        path = f"/api/v1/topology/{NAME}?window={quoted}"
    elif kind == "name":
        path = f"/api/v1/topology/{quoted}/logs"
        expected = {"name", "path"}  # an empty name is no path of the API
    elif kind == "unknown":
        path = f"/api/v1/topology/{NAME}/logs?{quoted}=1"
        expected = {value}
    else:
        path = f"/api/v1/topology/{NAME}/logs?{kind}={quoted}"
    status, headers, body = request(url, "GET", path)
    assert 400 <= status < 500, (path, status, body)
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["parameter"] in expected, (path, body)


def test_events_deliver_snapshots_and_two_clients_share_one_poller(url: str) -> None:
    _, before = get_json(url, "/api/v1/ui")
    started = time.monotonic()
    got: dict[int, list[dict[str, Any]]] = {}

    def watch(i: int, path: str) -> None:
        got[i] = read_events(url, path, 4)

    threads = [
        threading.Thread(target=watch, args=(0, "/api/v1/events")),
        threading.Thread(target=watch, args=(1, f"/api/v1/events?topology={NAME}")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    _, after = get_json(url, "/api/v1/ui")
    elapsed = time.monotonic() - started
    seqs = [e["seq"] for e in got[0]]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    for event in got[0] + got[1]:
        assert event["id"] == str(event["seq"])
        assert [r["name"] for r in event["summary"]["topologies"]] == [NAME]
        assert event["topologies"][NAME]["graph"]["edges"]
    shared = {e["seq"]: e for e in got[0]}.keys() & {e["seq"]: e for e in got[1]}.keys()
    assert len(shared) >= 2
    by_seq = {e["seq"]: e for e in got[0]}
    for event in got[1]:
        if event["seq"] in by_seq:
            assert event["generated_at"] == by_seq[event["seq"]]["generated_at"]
            assert event["summary"] == by_seq[event["seq"]]["summary"]
    assert after["polls"] - before["polls"] <= elapsed / INTERVAL + 2
