"""The sockets of a ``FeederSpout``'s feed: the test process's PUSH, each spout task's PULL.

A test tool, kept out of the runtime: the feed is bound on 127.0.0.1 (a random port) and
anyone on this machine may connect to it.  Messages are msgpack, read within the control
channel's size bound.
"""

from __future__ import annotations

from typing import Any

import zmq

from topology.runtime.net.codec import unpack_bounded
from topology.runtime.net.transport import CONTROL_MAX_BYTES


def _context() -> zmq.Context:
    return zmq.Context.instance()


class FeedSender:
    """The test process's end of a feed: a PUSH socket bound on 127.0.0.1.  Sends go
    round-robin over the connected spout tasks."""

    def __init__(self, send_timeout_secs: float) -> None:
        self._socket = _context().socket(zmq.PUSH)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SNDTIMEO, int(send_timeout_secs * 1000))
        port = self._socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"

    def send(self, data: bytes) -> bool:
        """Queue ``data`` for a spout task; False when none connected within the timeout."""
        try:
            self._socket.send(data)
        except zmq.Again:
            return False
        return True

    def close(self) -> None:
        self._socket.close(0)


class FeedReceiver:
    """A spout task's end of a feed: a PULL socket connected to the test's
    :class:`FeedSender`."""

    def __init__(self, endpoint: str) -> None:
        self._socket = _context().socket(zmq.PULL)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.MAXMSGSIZE, CONTROL_MAX_BYTES)
        self._socket.connect(endpoint)

    def recv_nowait(self) -> Any:
        """The next fed message (unpacked), or ``None`` when nothing is waiting."""
        try:
            data = self._socket.recv(zmq.NOBLOCK)
        except zmq.Again:
            return None
        return unpack_bounded(data, CONTROL_MAX_BYTES, CONTROL_MAX_BYTES)

    def close(self) -> None:
        self._socket.close(0)
