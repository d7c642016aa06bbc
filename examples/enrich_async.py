"""Async I/O: enrich each user id with a lookup over HTTP, 100 lookups in flight per task.

    sparkstorm local examples/enrich_async.py:topology --duration 10

users (spout, msg ids) --shuffle--> enrich (AsyncBolt, capacity 100) --> profiles (sink)
                                          \\--errors stream--> errors (sink)

Each ``enrich`` task starts a small local lookup service (every answer takes 50 ms; user
ids ``% 50 == 7`` get HTTP 503) unless it is given the ``address`` of one, and calls it
with a minimal asyncio HTTP client.  A lookup answered 503 raises: its user id is failed
and ``[error, [user]]`` goes to the ``errors`` stream.  ``verify`` checks that every user
was acked or failed exactly once, that the failed ones are those the service refuses, and
that the errors stream saw each of them.  The integration test
(tests/integration/test_async_http.py) runs the same components against its own service.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from topology import BasicBolt, Spout, TopologyBuilder
from topology.async_bolt import AsyncBolt

USERS = 1000
LATENCY_SECS = 0.05


def refused(user: int) -> bool:
    """The users the lookup service answers with 503."""
    return user % 50 == 7


# -- the lookup service and its client ------------------------------------------------------


class LookupService:
    """``GET /users/<id>`` -> ``{"user": id, "name": ...}`` after ``latency`` seconds (503 for
    :func:`refused` ids), served by an asyncio server on 127.0.0.1 in a daemon thread."""

    def __init__(self, latency: float = LATENCY_SECS) -> None:
        self.latency = latency
        self.requests = 0
        self.in_flight = self.peak_in_flight = 0  # lookups being answered now, and the most
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self.port = 0

    def start(self) -> LookupService:
        threading.Thread(target=self._run, name="lookup-service", daemon=True).start()
        if not self._ready.wait(10):
            raise RuntimeError("the lookup service did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            path = request.split(b" ", 2)[1].decode()
            user = int(path.rsplit("/", 1)[-1])
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                await asyncio.sleep(self.latency)
            finally:
                self.in_flight -= 1
            if refused(user):
                status, body = "503 Service Unavailable", b"busy"
            else:
                status, body = "200 OK", f'{{"user": {user}, "name": "user-{user}"}}'.encode()
            head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def http_get(host: str, port: int, path: str) -> tuple[int, bytes]:
    """(status, body) of ``GET path`` over a fresh connection (HTTP/1.1, Connection: close)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


# -- the topology ---------------------------------------------------------------------------


class UserSpout(Spout):
    """Emits user ids 0..users-1 once each (msg id: the user), spread over its tasks; keeps
    what was acked and failed, and the seconds from the first emit to the last outcome."""

    outputs = ["user"]

    def __init__(self, users: int = USERS) -> None:
        self.users = users

    def open(self, conf, context):
        n = len(context.component_tasks())
        self.todo = list(range(context.task_index, self.users, n))[::-1]
        self.acked: list[int] = []
        self.failed: list[int] = []
        self.first = self.last = 0.0

    def next_tuple(self):
        if self.todo:
            if not self.first:
                self.first = time.monotonic()
            user = self.todo.pop()
            self.emit([user], msg_id=user)

    def ack(self, msg_id):
        self.acked.append(msg_id)
        self.last = time.monotonic()

    def fail(self, msg_id):
        self.failed.append(msg_id)
        self.last = time.monotonic()

    def collect_results(self):
        return {"acked": self.acked, "failed": self.failed, "secs": self.last - self.first}


class Enrich(AsyncBolt):
    """One lookup per user id; 503 raises (the input fails, the error goes to ``errors``)."""

    outputs = ["user", "profile"]
    capacity = 100
    timeout_secs = 5.0
    error_stream = "errors"

    def __init__(self, address: tuple[str, int] | None = None, **settings: Any) -> None:
        super().__init__(**settings)
        self.address = address

    def get_component_configuration(self):
        # a refused lookup fails its user at once, for the spout to see (the default would
        # try it 3 more times, then send it to the dead-letter stream and ack it)
        return {"topology.errors.retries": 0, "topology.errors.action": "fail"}

    def prepare(self, conf, context):
        self.service = None
        if self.address is None:  # no service given: run one in this worker
            self.service = LookupService().start()
            self.address = ("127.0.0.1", self.service.port)

    async def process_async(self, tup):
        host, port = self.address
        status, body = await http_get(host, port, f"/users/{tup['user']}")
        if status != 200:
            raise LookupError(f"user {tup['user']}: HTTP {status}")
        return [tup["user"], body.decode()]

    def cleanup(self):
        if self.service is not None:
            self.service.stop()


class Collect(BasicBolt):
    """Keeps the first field of what arrives (user ids, or error texts)."""

    def prepare(self, conf, context):
        self.seen: list[Any] = []

    def process(self, tup):
        self.seen.append(tup.values[0] if tup.stream != "errors" else tup["input"][0])

    def collect_results(self):
        return {"seen": self.seen}


def build(users: int = USERS, address: tuple[str, int] | None = None, **settings: Any) -> Any:
    """The topology: ``users`` lookups against ``address`` (None: a service per task)."""
    builder = TopologyBuilder()
    builder.set_spout("users", UserSpout(users))
    builder.set_bolt("enrich", Enrich(address, **settings)).shuffle_grouping("users")
    builder.set_bolt("profiles", Collect()).shuffle_grouping("enrich")
    builder.set_bolt("errors", Collect()).shuffle_grouping("enrich", "errors")
    return builder.create_topology()


topology = build()


def verify(results: dict) -> str:
    """Every user acked or failed exactly once; the failed ones are the refused ones, and
    each went to the errors stream."""
    [spout] = results["users"].values()
    acked, failed = spout["acked"], spout["failed"]
    outcomes = sorted(acked + failed)
    assert outcomes == sorted(set(outcomes)), "a user was acked or failed twice"
    assert all(refused(u) for u in failed) and not any(refused(u) for u in acked)
    errors = sorted(u for r in results["errors"].values() for u in r["seen"])
    assert errors == sorted(failed), "the errors stream does not match the failed users"
    profiles = sorted(u for r in results["profiles"].values() for u in r["seen"])
    assert profiles == sorted(acked)
    return f"{len(acked):,} users enriched, {len(failed):,} refused, in {spout['secs']:.2f} s"
