"""The web UI's server on a real, empty LocalCluster (no worker process): it binds
loopback by default, answers JSON errors naming what is wrong, refuses actions without an
admin token, and serves one shared snapshot per interval to every event-stream client.

``request`` and ``read_events`` are the plain-HTTP client the integration tests share."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from topology.deploy.local.cluster import LocalCluster
from topology.deploy.local.ui_view import LocalClusterView
from topology.ui.auth import UiSettings
from topology.ui.server import UiServer

pytestmark = pytest.mark.timeout(60)

TOKEN = "a-test-admin-token-0123456789"
INTERVAL = 0.2


def request(
    base: str,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = 30.0,
) -> tuple[int, dict[str, str], bytes]:
    """(status, lower-cased headers, body) of one request to the server at ``base``."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def get_json(base: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    status, headers, body = request(base, "GET", path, **kwargs)
    assert headers["content-type"].startswith("application/json"), (path, headers, body[:200])
    return status, json.loads(body)


def read_events(base: str, path: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The first ``count`` ``snapshot`` events of the stream at ``path``, parsed."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("content-type", "").startswith("text/event-stream")
        events: list[dict[str, Any]] = []
        fields: dict[str, str] = {}
        while len(events) < count:
            line = response.readline().decode()
            assert line, "the stream ended"
            line = line.rstrip("\n")
            if not line:
                if fields.get("event") == "snapshot":
                    events.append({"id": fields.get("id"), **json.loads(fields["data"])})
                fields = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(":")
                fields[key] = value.removeprefix(" ")
        return events
    finally:
        conn.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster({"ui.publish.interval.secs": INTERVAL}, ui_port=0) as local:
        yield local


def test_the_server_binds_loopback_by_default() -> None:
    assert UiSettings.from_conf({}).host == "127.0.0.1"
    assert (UiSettings().host, UiSettings().port) == ("127.0.0.1", 8080)
    with LocalCluster() as local:
        server = UiServer(LocalClusterView(local), port=0)
        try:
            assert server._socket.getsockname()[0] == "127.0.0.1"
            assert server.url == f"http://127.0.0.1:{server.port}/"
        finally:
            server.stop()


def test_a_local_cluster_serves_the_ui_and_stops_it(cluster: LocalCluster) -> None:
    assert cluster.ui_url is not None and cluster.ui_url.startswith("http://127.0.0.1:")
    status, summary = get_json(cluster.ui_url, "/api/v1/cluster/summary")
    assert status == 200
    assert summary["topologies"] == [] and summary["nimbus"] is None
    assert summary["publish_interval_secs"] == INTERVAL
    status, _, page = request(cluster.ui_url, "GET", "/")
    assert status == 200 and b"<" in page
    with LocalCluster(ui_port=0) as other:
        url = other.ui_url
        assert url is not None
    with pytest.raises(OSError):
        request(url, "GET", "/api/v1/ui", timeout=2)


def test_a_taken_port_is_an_error_naming_it(cluster: LocalCluster) -> None:
    assert cluster.ui is not None
    with pytest.raises(Exception, match=rf"ui_port={cluster.ui.port}: .*in use"):
        LocalCluster(ui_port=cluster.ui.port)


@pytest.mark.parametrize(
    ("method", "path", "status", "parameter"),
    [
        ("GET", "/api/v1/nothing", 404, "path"),
        ("GET", "/api/v2/cluster/summary", 404, "path"),
        ("POST", "/api/v1/cluster/summary", 405, "method"),
        ("GET", "/api/v1/topology/wc/activate", 405, "method"),
        ("GET", "/api/v1/topology/bad%20name", 400, "name"),
        ("GET", "/api/v1/topology/absent", 404, "name"),
        ("GET", "/api/v1/topology/absent?window=5m", 400, "window"),
        ("GET", "/api/v1/cluster/summary?x=1", 400, "x"),
        ("GET", "/api/v1/topology/absent/logs?worker=-1", 400, "worker"),
        ("GET", "/api/v1/events?topology=a/b", 400, "topology"),
        ("POST", "/api/v1/topology/absent/deactivate", 403, "Authorization"),
    ],
)
def test_errors_are_json_naming_the_parameter(
    cluster: LocalCluster, method: str, path: str, status: int, parameter: str
) -> None:
    assert cluster.ui_url is not None
    got, headers, body = request(cluster.ui_url, method, path)
    assert got == status, body
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert error["parameter"] == parameter and error["message"]
    assert "Traceback" not in error["message"]


def test_actions_are_disabled_without_an_admin_token(cluster: LocalCluster) -> None:
    assert cluster.ui_url is not None
    status, body = get_json(cluster.ui_url, "/api/v1/ui")
    assert status == 200 and body["actions_enabled"] is False
    got, _, raw = request(
        cluster.ui_url,
        "POST",
        "/api/v1/topology/x/kill",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert got == 403
    assert "ui.admin.token" in json.loads(raw)["message"]


def test_with_a_token_and_csrf_an_action_reaches_the_cluster() -> None:
    with LocalCluster({"ui.admin.token": TOKEN}, ui_port=0) as local:
        assert local.ui_url is not None
        _, headers, raw = request(local.ui_url, "GET", "/api/v1/csrf")
        csrf = json.loads(raw)["csrf_token"]
        assert f"sparkstorm_csrf={csrf}" in headers["set-cookie"]
        assert "samesite=strict" in headers["set-cookie"].lower()
        auth = {"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": csrf}
        got, _, raw = request(local.ui_url, "POST", "/api/v1/topology/gone/activate", auth)
        assert got == 403 and json.loads(raw)["parameter"] == "X-CSRF-Token"  # no cookie
        auth["Cookie"] = f"sparkstorm_csrf={csrf}"
        got, _, raw = request(local.ui_url, "POST", "/api/v1/topology/gone/activate", auth)
        assert got == 404 and json.loads(raw)["parameter"] == "name"  # past both checks
        forged = "nonce.0123456789abcdef0123456789abcdef"
        auth.update({"X-CSRF-Token": forged, "Cookie": f"sparkstorm_csrf={forged}"})
        got, _, _ = request(local.ui_url, "POST", "/api/v1/topology/gone/activate", auth)
        assert got == 403


def test_every_event_client_gets_the_same_snapshots_of_one_poller(cluster: LocalCluster) -> None:
    url = cluster.ui_url
    assert url is not None
    _, before = get_json(url, "/api/v1/ui")
    started = time.monotonic()
    got: dict[int, list[dict[str, Any]]] = {}

    def watch(i: int) -> None:
        got[i] = read_events(url, "/api/v1/events", 5)

    threads = [threading.Thread(target=watch, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    _, after = get_json(url, "/api/v1/ui")
    elapsed = time.monotonic() - started
    first = {e["seq"]: e["generated_at"] for e in got[0]}
    second = {e["seq"]: e["generated_at"] for e in got[1]}
    shared = set(first) & set(second)
    assert len(shared) >= 3
    assert all(first[s] == second[s] for s in shared)  # the very same snapshots
    assert all(e["summary"]["topologies"] == [] for e in got[0])
    # one poll per interval, not one per client
    assert after["polls"] - before["polls"] <= elapsed / INTERVAL + 2
