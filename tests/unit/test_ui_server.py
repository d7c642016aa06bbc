"""The web UI's server on a real, empty LocalCluster (no worker process): it binds
loopback by default, answers JSON errors naming what is wrong, refuses actions without an
admin token, and serves one shared snapshot per interval to every event-stream client; and
on a fake :class:`ClusterView` whose calls can be held: slow reads are bounded and never
hold the poller back, and N pages asking for one window cost one call.

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

from tests.integration.helpers import wait_for
from topology.deploy.local.cluster import LocalCluster
from topology.deploy.local.topology import ClusterError
from topology.deploy.local.ui_view import LocalClusterView
from topology.stats.prometheus import TopologySnapshot
from topology.ui.auth import UiSettings
from topology.ui.context import READ_SLOTS
from topology.ui.server import UiServer
from topology.ui.source import PollRound

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


def read_events(
    base: str,
    path: str,
    count: int,
    timeout: float = 30.0,
    barrier: threading.Barrier | None = None,
) -> list[dict[str, Any]]:
    """The first ``count`` ``snapshot`` events of the stream at ``path``, parsed (after the
    first, waiting at ``barrier`` when given: every client is connected from there on)."""
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
                    if barrier is not None and len(events) == 1:
                        barrier.wait(timeout)
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
        ("GET", "/api/v1/topology/absent/logs?worker=10000", 400, "worker"),  # MAX_WORKERS
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
    both = threading.Barrier(2)

    def watch(i: int) -> None:
        got[i] = read_events(url, "/api/v1/events", 5, barrier=both)

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
    # both connected (the barrier): each newer snapshot reaches both, but one may still
    # get the snapshot published while the other connected, so the first two may differ
    assert len(shared) >= 2
    assert all(first[s] == second[s] for s in shared)  # the very same snapshots
    assert all(e["summary"]["topologies"] == [] for e in got[0])
    # one poll per interval, not one per client
    assert after["polls"] - before["polls"] <= elapsed / INTERVAL + 2


def test_a_host_header_naming_another_site_is_refused(cluster: LocalCluster) -> None:
    """DNS rebinding: a page of attacker.example whose name now points here gets 400."""
    assert cluster.ui is not None
    port = cluster.ui.port
    base = cluster.ui_url
    assert base is not None
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
        assert request(base, "GET", "/api/v1/ui", {"Host": host})[0] == 200, host
    for host in ("attacker.example", f"attacker.example:{port}", "127.0.0.1.attacker.example"):
        status, _, body = request(base, "GET", "/api/v1/cluster/summary", {"Host": host})
        assert status == 400, (host, body)


def test_every_response_forbids_framing_and_sniffing(cluster: LocalCluster) -> None:
    assert cluster.ui_url is not None
    for path in ("/", "/api/v1/ui", "/api/v1/nothing"):
        _, headers, _ = request(cluster.ui_url, "GET", path)
        assert headers["x-frame-options"] == "DENY", path
        assert headers["content-security-policy"] == "frame-ancestors 'none'", path
        assert headers["x-content-type-options"] == "nosniff", path


def test_a_post_body_must_be_a_json_object_sent_as_json() -> None:
    with LocalCluster({"ui.admin.token": TOKEN}, ui_port=0) as local:
        assert local.ui_url is not None
        _, _, raw = request(local.ui_url, "GET", "/api/v1/csrf")
        csrf = json.loads(raw)["csrf_token"]
        auth = {
            "Authorization": f"Bearer {TOKEN}",
            "X-CSRF-Token": csrf,
            "Cookie": f"sparkstorm_csrf={csrf}",
        }
        path = "/api/v1/topology/gone/kill"
        as_json = {**auth, "Content-Type": "application/json"}
        for body in (b"[" * 30_000 + b"]" * 30_000, b'{"a": ' * 9000, b"\xff\xfe"):
            status, headers, raw = request(local.ui_url, "POST", path, as_json, body)
            assert status == 400, raw[:200]
            assert json.loads(raw)["parameter"] == "body"
        form = {**auth, "Content-Type": "application/x-www-form-urlencoded"}
        status, _, raw = request(local.ui_url, "POST", path, form, b'{"wait_secs": 0}')
        assert status == 415 and json.loads(raw)["parameter"] == "body"
        status, _, raw = request(local.ui_url, "POST", path, auth, b'{"wait_secs": 0}')
        assert status == 415
        status, _, raw = request(local.ui_url, "POST", path, as_json, b'{"wait_secs": 0}')
        assert status == 404 and json.loads(raw)["parameter"] == "name"  # the body passed


def test_a_ui_that_cannot_start_is_a_cluster_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: UiServer) -> UiServer:
        self.stop()
        raise RuntimeError("the server did not start")

    monkeypatch.setattr(UiServer, "start", fail)
    with pytest.raises(ClusterError, match="no web UI on 127.0.0.1: the server did not start"):
        LocalCluster(ui_port=0)


class HeldView:
    """A fake :class:`ClusterView` of one topology ``t``: its polls are quick; its log
    reads wait for :attr:`release`; its status reports are counted."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.stats_calls = 0
        self.polls = 0

    @property
    def ops(self) -> HeldView:
        return self

    def topology_names(self) -> list[str]:
        return ["t"]

    def describe(self, name: str) -> dict[str, Any]:
        return {"id": name, "components": {}, "conf": {}}

    def nimbuses(self) -> None:
        return None

    def poll_round(self) -> PollRound:
        return PollRound(["t"], None, self._poll)

    def _poll(self, name: str) -> TopologySnapshot:
        self.polls += 1
        return TopologySnapshot(self._report(name, "10m"), [])

    def stats(self, name: str, window: str = "10m") -> dict[str, Any]:
        self.stats_calls += 1
        return self._report(name, window)

    def _report(self, name: str, window: str) -> dict[str, Any]:
        topology = {"id": name, "name": name, "status": "ACTIVE", "workers": 1}
        return {"topology": topology, "window": window, "spouts": [], "bolts": []}

    def worker_logs(self, name: str, *args: Any) -> list[dict[str, Any]]:
        self.release.wait(30)
        return []

    def errors(self, name: str) -> dict[str, list[dict[str, Any]]]:
        return {}


def test_slow_reads_are_bounded_answered_in_time_and_never_starve_the_poller() -> None:
    view = HeldView()
    with UiServer(view, UiSettings(publish_interval=0.1), port=0) as server:
        ctx = server.app.state.ui
        ctx.reads.timeout = 1.0
        wait_for(lambda: ctx.hub.polls, lambda n: n >= 1, 10)
        results: list[tuple[int, float, str]] = []

        def read() -> None:
            started = time.monotonic()
            status, _, raw = request(server.url, "GET", "/api/v1/topology/t/logs?worker=0")
            results.append((status, time.monotonic() - started, json.loads(raw)["message"]))

        threads = [threading.Thread(target=read) for _ in range(60)]
        for thread in threads:
            thread.start()
        polls = ctx.hub.polls
        # while 60 reads wait on the cluster, the poller still publishes
        wait_for(lambda: ctx.hub.polls, lambda n: n >= polls + 3, 10)
        for thread in threads:
            thread.join(30)
        assert len(results) == 60 and {r[0] for r in results} == {503}
        busy = [r for r in results if "busy" in r[2]]
        late = [r for r in results if "did not answer within 1 s" in r[2]]
        assert len(busy) >= 60 - READ_SLOTS and len(busy) + len(late) == 60
        assert all(r[1] < 10 for r in results)  # none queued behind the others
        assert ctx.reads.busy <= READ_SLOTS  # abandoned calls still hold their slots
        view.release.set()
        wait_for(lambda: ctx.reads.busy, lambda n: n == 0, 10)
        assert request(server.url, "GET", "/api/v1/topology/t/logs?worker=0")[0] == 200


def test_pages_asking_for_one_window_share_one_report_per_interval() -> None:
    view = HeldView()
    with UiServer(view, UiSettings(publish_interval=30.0), port=0) as server:
        ctx = server.app.state.ui
        wait_for(lambda: ctx.hub.polls, lambda n: n >= 1, 10)
        before = view.stats_calls
        statuses: list[int] = []

        def page() -> None:
            statuses.append(request(server.url, "GET", "/api/v1/topology/t?window=3h")[0])

        threads = [threading.Thread(target=page) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert statuses == [200] * 10
        assert view.stats_calls - before == 1 and ctx.reports.calls == 1
        assert get_json(server.url, "/api/v1/topology/t?window=3h")[0] == 200
        assert view.stats_calls - before == 1  # still the same interval
        get_json(server.url, "/api/v1/topology/t?window=1d")  # another window: its own call
        assert view.stats_calls - before == 2
