"""A worker's data token on the wire: its text form, the peers a ``start`` or ``peers``
command names, and the ZeroMQ sockets that stamp it on every frame and hand it to the
door (real sockets on 127.0.0.1)."""

from __future__ import annotations

import doctest
import time
from collections.abc import Iterator

import pytest

from topology.runtime.net import backpressure, data_token, frames
from topology.runtime.net.data_token import (
    TOKEN_BYTES,
    Peer,
    new_token,
    parse_token,
    peer_fields,
    peers_from,
    token_text,
)
from topology.runtime.net.transport import DataReceiver, DataSender

pytestmark = pytest.mark.timeout(30)


def test_a_token_is_fresh_random_bytes_and_travels_as_hex_text() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100 and all(len(t) == TOKEN_BYTES for t in tokens)
    token = tokens.pop()
    assert parse_token(token_text(token)) == token
    for bad in (None, 7, token, token.hex().upper(), token.hex()[:-1], token.hex() + "0"):
        assert parse_token(bad) is None
    assert parse_token(" " + token.hex()[1:]) is None  # fromhex would skip the space
    assert parse_token("zz" + token.hex()[2:]) is None


def test_peers_come_with_their_tokens_and_one_without_a_token_gets_none() -> None:
    a, b = new_token(), new_token()
    fields = peer_fields({0: "tcp://h:1", 1: "tcp://h:2"}, {0: a, 1: b})
    assert peers_from(fields["endpoints"], fields["tokens"]) == {
        0: Peer("tcp://h:1", a),
        1: Peer("tcp://h:2", b),
    }
    assert peers_from({"0": "tcp://h:1", "1": "tcp://h:2"}, {"0": "junk"}) == {
        0: Peer("tcp://h:1", None),
        1: Peer("tcp://h:2", None),
    }
    assert a.hex() not in repr(Peer("tcp://h:1", a))  # never in a log line


@pytest.fixture
def receiver() -> Iterator[DataReceiver]:
    r = DataReceiver("127.0.0.1", "127.0.0.1", 1000)
    yield r
    r.close()


def received(receiver: DataReceiver, count: int = 1) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(got) < count and time.monotonic() < deadline:
        message = receiver.recv_nowait()
        if message is None:
            receiver.socket.poll(50)
        else:
            got.append(message)
    return got


def test_a_sender_stamps_the_peers_token_and_holds_frames_while_it_knows_none(
    receiver: DataReceiver,
) -> None:
    token = new_token()
    sender = DataSender(receiver.endpoint, 1000, token=None)
    try:
        assert not sender.try_send(b"frame-0")  # no token: the caller keeps the frame
        sender.reconnect(receiver.endpoint, token)
        assert sender.try_send(b"frame-1") and sender.try_send(b"x" * 100_000)
        assert received(receiver, 2) == [token + b"frame-1", token + b"x" * 100_000]
        sender.forget()  # the peer died
        assert not sender.try_send(b"frame-2") and sender.token is None
        assert receiver.recv_nowait() is None
    finally:
        sender.close()


def test_a_relaunched_peer_gets_the_held_frames_with_its_new_token_and_nothing_old(
    receiver: DataReceiver,
) -> None:
    old = DataReceiver("127.0.0.1", "127.0.0.1", 1000)
    old_token, new_token_ = new_token(), new_token()
    sender = DataSender(old.endpoint, 1000, token=old_token)
    try:
        assert sender.try_send(b"to the old process")
        assert received(old) == [old_token + b"to the old process"]
        old.close()  # it dies; what is sent now waits in the socket for its endpoint
        assert sender.try_send(b"queued for the dead endpoint")
        sender.reconnect(receiver.endpoint, new_token_)  # its successor, elsewhere
        assert sender.try_send(b"to the new process")
        assert received(receiver) == [new_token_ + b"to the new process"]
        assert receiver.recv_nowait() is None  # the old token's frame never arrives
    finally:
        sender.close()


def test_the_same_process_reported_lost_and_back_gets_its_frames_in_order(
    receiver: DataReceiver,
) -> None:
    """A peer whose heartbeat vanished with its ZooKeeper session and came back (same
    endpoint, same token): the sender resumes on its socket, nothing dropped."""
    token = new_token()
    sender = DataSender(receiver.endpoint, 1000, token=token)
    try:
        assert sender.try_send(b"1")
        sender.forget()
        assert not sender.try_send(b"2")  # held by the caller meanwhile
        assert not sender.reconnect(receiver.endpoint, token)  # not another process
        assert sender.try_send(b"2") and sender.try_send(b"3")
        assert received(receiver, 3) == [token + b"1", token + b"2", token + b"3"]
        assert sender.reconnect(receiver.endpoint, new_token())  # a successor, same port
    finally:
        sender.close()


def test_a_frame_of_the_largest_size_with_its_token_is_taken_and_one_byte_more_is_not() -> None:
    """The socket's size limit counts the token on top of the largest frame."""
    limited = DataReceiver("127.0.0.1", "127.0.0.1", 1000, max_frame_bytes=1000)
    token = new_token()
    sender = DataSender(limited.endpoint, 1000, token=token)
    try:
        assert sender.try_send(b"x" * 1000)
        assert received(limited) == [token + b"x" * 1000]
        sender.try_send(b"x" * 1001)  # ZeroMQ drops the connection, not the worker
        assert not limited.socket.poll(300)
    finally:
        sender.close()
        limited.close()


def test_the_docstring_examples_run() -> None:
    for module in (data_token, backpressure, frames):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


class _Process:
    """A worker process as LocalCluster's supervision sees it."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        return self.returncode


def test_localclusters_peers_never_name_a_dead_workers_token() -> None:
    """Workers 1 and 2 die at once; 1's successor registers first: the ``peers`` its
    peers get must not give them back 2's old token (they would send what they hold for
    2 to its dead process, as if it had come back), only 1's new one."""
    from topology import TopologyBuilder
    from topology.config import defaults
    from topology.deploy.local.topology import LocalTopology
    from topology.testing import FeederSpout

    builder = TopologyBuilder()
    builder.set_spout("source", FeederSpout(["n"]), 3)
    local = LocalTopology("t", builder.create_topology(), {**defaults(), "topology.workers": 3})
    try:
        sent: list[tuple[int, dict[str, object]]] = []
        local._send_to = lambda worker, message: sent.append((worker, message))  # type: ignore[method-assign]
        local._spawn = lambda worker: _Process(200 + worker)  # type: ignore[assignment,method-assign,return-value]
        local.processes = [_Process(100 + w) for w in range(3)]  # type: ignore[misc]
        old = {w: new_token() for w in range(3)}
        for w in range(3):
            register = {"endpoint": f"tcp://h:{w}", "token": token_text(old[w])}
            local._handle("", {"type": "register", "worker": w, **register})
            local._handle("", {"type": "ready", "worker": w})
        for w in (1, 2):
            local.processes[w].returncode = -9
        local._check_processes()  # both reported lost to the others, and relaunched
        assert [m for w, m in sent if w == 0 and m["cmd"] == "lost"] == [
            {"cmd": "lost", "worker": 1},
            {"cmd": "lost", "worker": 2},
        ]
        new = new_token()
        register = {"endpoint": "tcp://h:11", "token": token_text(new)}
        local._handle("", {"type": "register", "worker": 1, **register})
        [peers] = [m for w, m in sent if w == 0 and m["cmd"] == "peers"]
        named = peers_from(peers["endpoints"], peers["tokens"])  # type: ignore[arg-type]
        assert named[1] == Peer("tcp://h:11", new)
        assert named[2].token is None  # still waiting for its successor
    finally:
        local.server.close()
