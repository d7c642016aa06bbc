"""The UI cannot hurt the process it shares with the cluster (issue 40, item 6): on a real
:class:`UiServer` over a fake view, connections over ``ui.connections.max`` are answered
503 and closed as they are accepted (holding no descriptor), a connection that never
sends a byte or dribbles its request is closed, keep-alive and event streams still work,
and a ZooKeeper that stops answering is a 503, never a 500; and the pure parts: the cap
sized from the open-file limit, the gate's tickets."""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from tests.integration.helpers import wait_for
from tests.unit.test_ui_server import HeldView, get_json, read_events
from topology.deploy.cluster.ui_view import ClusterClientView
from topology.deploy.zk.connection import ZkConnection, ZooKeeperUnavailable
from topology.errors import Unavailable
from topology.ui.auth import UiSettings
from topology.ui.connections import (
    MIN_CONNECTIONS,
    ConnectionGate,
    connection_cap,
    descriptors_in_use,
)
from topology.ui.server import BUSY_BODY, BUSY_RESPONSE, UiServer

pytestmark = pytest.mark.timeout(60)


@contextmanager
def serving(view: HeldView | None = None, **settings: float) -> Iterator[UiServer]:
    defaults = {"publish_interval": 0.1, "idle_timeout": 30.0, "request_timeout": 30.0}
    ui = UiSettings(**{**defaults, **settings})  # type: ignore[arg-type]
    with UiServer(view or HeldView(), ui, port=0) as server:
        yield server


def connect(server: UiServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def read_until_closed(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a whole HTTP/1.1 response, read by http.client."""

    class Wire:
        def makefile(self, mode: str) -> io.BytesIO:
            return io.BytesIO(raw)

    response = http.client.HTTPResponse(Wire())  # type: ignore[arg-type]
    response.begin()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


# -- the cap ---------------------------------------------------------------------------


def test_connections_over_the_cap_are_answered_503_and_closed_at_once() -> None:
    with serving(max_connections=8) as server:
        gate = server.connections
        held = [connect(server) for _ in range(8)]
        try:
            wait_for(lambda: gate.open, lambda n: n == 8, 10)
            before = descriptors_in_use()
            started = time.monotonic()
            for _ in range(20):
                with connect(server) as extra:  # sends nothing: reads the whole answer
                    assert read_until_closed(extra) == BUSY_RESPONSE
            status, headers, body = parse(BUSY_RESPONSE)
            assert (status, headers["retry-after"], body) == (503, "5", BUSY_BODY)
            assert time.monotonic() - started < 10  # refused at once, never left to idle
            assert gate.refused == 20 and gate.open == 8
            assert descriptors_in_use() <= before + 2  # nothing over the cap is held
        finally:
            for sock in held:
                sock.close()
        wait_for(lambda: gate.open, lambda n: n == 0, 10)
        status, info = get_json(server.url, "/api/v1/ui")
        assert status == 200
        assert info["connections"] == {
            "open": 1,
            "max": 8,
            "refused": 20,
            "timed_out": 0,
            "accept_errors": 0,
        }


def test_the_cap_takes_at_most_half_of_the_free_descriptors() -> None:
    assert connection_cap(256, 1024, 150) == 256
    assert connection_cap(256, 1024, 600) == 212
    assert connection_cap(256, 300, 299) == MIN_CONNECTIONS
    assert connection_cap(4, 1024, 10) == 4  # never more than configured
    assert connection_cap(1, 10, 10) == 1


def test_a_ticket_is_given_back_once() -> None:
    gate = ConnectionGate(2)
    first, second = gate.admit(), gate.admit()
    assert first is not None and second is not None
    assert gate.admit() is None and gate.refused == 1
    first.release()
    first.release()  # a second release is nothing
    assert gate.open == 1
    assert gate.admit() is not None and gate.open == 2
    with pytest.raises(ValueError, match="at least 1"):
        ConnectionGate(0)


# -- timeouts --------------------------------------------------------------------------


def test_a_connection_that_never_sends_a_byte_is_closed_after_the_idle_timeout() -> None:
    with serving(idle_timeout=0.3) as server, connect(server) as sock:
        started = time.monotonic()
        assert read_until_closed(sock) == b""
        assert 0.2 < time.monotonic() - started < 5
        wait_for(lambda: server.connections.open, lambda n: n == 0, 5)
        assert server.connections.timed_out == 1


def test_a_request_dribbled_a_byte_at_a_time_is_closed_at_its_deadline() -> None:
    with serving(idle_timeout=0.3, request_timeout=1.5) as server, connect(server) as sock:
        started = time.monotonic()
        head = b"GET /api/v1/ui HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
        sent = 0
        try:
            for byte in head:  # a byte every 0.1 s: never idle for 0.3 s
                sock.send(bytes([byte]))
                sent += 1
                time.sleep(0.1)
        except OSError:  # closed under our feet
            pass
        assert read_until_closed(sock) == b""
        assert 1.2 < time.monotonic() - started < 6 and sent < len(head)
        assert server.connections.timed_out == 1


def test_keep_alive_requests_still_work_and_an_idle_one_is_closed_after() -> None:
    with serving(idle_timeout=0.5, request_timeout=1.0) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            for _ in range(4):  # more than the request deadline in all, on one connection
                conn.request("GET", "/api/v1/ui")
                response = conn.getresponse()
                assert response.status == 200
                response.read()
                time.sleep(0.3)
            assert server.connections.open == 1
            wait_for(lambda: server.connections.open, lambda n: n == 0, 5)
        finally:
            conn.close()


def test_an_event_stream_outlives_both_timeouts_and_counts_against_the_cap() -> None:
    with serving(idle_timeout=0.2, request_timeout=0.4) as server:
        seen: list[int] = []

        def watch() -> None:
            seen.extend(int(e["seq"]) for e in read_events(server.url, "/api/v1/events", 15))

        reader = threading.Thread(target=watch)
        reader.start()
        wait_for(lambda: server.app.state.ui.hub.clients, lambda n: n == 1, 10)
        assert server.connections.open == 1
        reader.join(30)
        assert len(seen) == 15 and seen == sorted(seen)  # 1.5 s and more, never cut
        assert server.connections.timed_out == 0


def test_headers_held_incomplete_over_the_limit_are_refused() -> None:
    with serving() as server, connect(server) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000)
        assert read_until_closed(sock).startswith(b"HTTP/1.1 400")


# -- ZooKeeper away --------------------------------------------------------------------


class AwayView(HeldView):
    """A view whose log reads fail as a ZooKeeper that stopped answering does."""

    def worker_logs(self, name: str, *args: object) -> list[dict[str, object]]:
        raise ZooKeeperUnavailable("ZooKeeper at 127.0.0.1:1 is not answering (ConnectionLoss)")


def test_a_zookeeper_that_stopped_answering_is_a_503_not_a_500(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serving(AwayView()) as server:
        wait_for(lambda: server.app.state.ui.hub.polls, lambda n: n >= 1, 10)
        status, body = get_json(server.url, "/api/v1/topology/t/logs?worker=0")
        assert status == 503 and "is not answering" in body["message"]
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged


class Hosts:
    hosts = "127.0.0.1:2181"
    connected = True
    unreachable = staticmethod(ZkConnection.unreachable)
    reachable = ZkConnection.reachable


class LosingCluster:
    """A fake :class:`Cluster` whose ZooKeeper connection is lost."""

    zk = Hosts()

    def errors(self, name: str) -> None:
        raise ConnectionLoss()

    def nimbuses(self) -> None:
        raise SessionExpiredError()

    def topologies(self) -> None:
        raise ConnectionLoss()

    def stats(self, name: str, window: str = "10m") -> None:
        raise KeyError(name)  # a bug stays a bug


def test_the_cluster_view_turns_a_lost_connection_into_one_unavailable_error() -> None:
    view = ClusterClientView(LosingCluster())  # type: ignore[arg-type]
    for call in (lambda: view.ops.errors("wc"), view.nimbuses, view.poll_round):
        with pytest.raises(ZooKeeperUnavailable, match=r"ZooKeeper at 127.0.0.1:2181 is not") as e:
            call()
        assert isinstance(e.value, Unavailable)
    with pytest.raises(KeyError):
        view.ops.stats("wc")
    Hosts.connected = False  # reconnecting: refused before anything waits on kazoo
    try:
        with pytest.raises(ZooKeeperUnavailable, match=r"not answering \(reconnecting\)"):
            view.ops.stats("wc")
    finally:
        Hosts.connected = True
