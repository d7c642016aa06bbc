"""ZeroMQ sockets: the data plane between workers and the control channel to the cluster.

This module and :mod:`topology.runtime.net.curve` (their CURVE security) are the runtime's
only importers of ``zmq``.  Data: each worker binds one PULL socket and connects one PUSH
socket per peer, to the endpoint the assignment names for it; sends never block (a full peer
queue is reported to the caller, which keeps the frame and applies backpressure).  Every
frame goes as one message, the peer's data token (its first
:data:`~topology.runtime.net.data_token.TOKEN_BYTES` bytes) then the frame
(:mod:`topology.runtime.net.data_token`): anyone may write to a data port, and the door lets
in only frames with the token.  A sender stamps the token when it sends, so a frame held for
a full or relaunched peer goes with that peer's current one, and it sends nothing to a peer
whose token it does not know (the frames wait, as for a full peer).  Backpressure signals
travel on these sockets too.  The data port is deliberately not a ROUTER, though one could
answer each connection: libzmq (4.3.5) aborts the process when a connection arrives whose
generated routing id another client already claimed (``Assertion failed: ok
(src/socket_base.cpp)``), and that next id is predictable.  Control: workers talk to their
LocalCluster over DEALER -> ROUTER with msgpack dicts.  (A ``FeederSpout``'s test feed has
its own sockets, in :mod:`topology.testing.feed`.)
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import zmq

from .codec import unpack_bounded
from .curve import CurveKeys, authenticate_clients, secure_client, secure_server
from .data_token import TOKEN_BYTES

_LINGER_MS = 2000
#: Largest control message (status replies with every stats window included).
CONTROL_MAX_BYTES = 16 * 1024 * 1024
#: Kernel socket buffers of data sockets: bounded so that what waits in TCP (which ZeroMQ's
#: high-water marks do not count) stays small next to the bounded queues.
SOCKET_BUFFER_BYTES = 64 * 1024


def _context() -> zmq.Context:
    return zmq.Context.instance()


def _bracket(host: str) -> str:
    """``host`` as it goes into a ZeroMQ tcp endpoint (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class DataReceiver:
    """The worker's bound PULL socket: bound on ``bind``, reachable at ``endpoint`` (on
    ``advertise``, the address peers use)."""

    def __init__(
        self,
        bind: str,
        advertise: str,
        high_water_mark: int,
        max_frame_bytes: int = -1,
        curve: CurveKeys | None = None,
    ) -> None:
        self._socket = _context().socket(zmq.PULL)
        if curve is not None:
            authenticate_clients(_context(), curve)
            secure_server(self._socket, curve)
        self._socket.setsockopt(zmq.RCVHWM, high_water_mark)
        # A peer announcing a bigger frame is disconnected before anything is allocated.
        limit = max_frame_bytes + TOKEN_BYTES if max_frame_bytes >= 0 else -1
        self._socket.setsockopt(zmq.MAXMSGSIZE, limit)
        self._socket.setsockopt(zmq.RCVBUF, SOCKET_BUFFER_BYTES)
        self._socket.setsockopt(zmq.LINGER, 0)
        port = self._socket.bind_to_random_port(f"tcp://{_bracket(bind)}")
        self.endpoint = f"tcp://{_bracket(advertise)}:{port}"

    @property
    def socket(self) -> zmq.Socket:
        return self._socket

    def recv_nowait(self) -> bytes | None:
        """The next message (token, then frame), or ``None`` when nothing is waiting (each
        part of a multipart message comes as a message of its own)."""
        try:
            return self._socket.recv(zmq.NOBLOCK, copy=True)
        except zmq.Again:
            return None

    def close(self) -> None:
        self._socket.close(0)


class DataSender:
    """A PUSH socket to one peer worker, stamping each frame with the peer's data
    ``token`` (None: not known yet, nothing is sent); :meth:`try_send` never blocks."""

    def __init__(
        self,
        endpoint: str,
        high_water_mark: int,
        curve: CurveKeys | None = None,
        token: bytes | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.token = token
        self._known = token  # the token of the process at ``endpoint``, kept by forget()
        self._curve = curve
        self._hwm = high_water_mark
        self._socket = self._connected(endpoint)

    def _connected(self, endpoint: str) -> zmq.Socket:
        socket = _context().socket(zmq.PUSH)
        if self._curve is not None:
            secure_client(socket, self._curve)
        socket.setsockopt(zmq.SNDHWM, self._hwm)
        socket.setsockopt(zmq.SNDBUF, SOCKET_BUFFER_BYTES)
        socket.setsockopt(zmq.LINGER, _LINGER_MS)
        socket.setsockopt(zmq.IMMEDIATE, 0)
        socket.connect(endpoint)
        return socket

    def try_send(self, frame: bytes) -> bool:
        """Queue ``frame`` for the peer, after its token; False when the peer's queue is
        full or its token is not known (the caller keeps the frame)."""
        token = self.token
        if token is None:
            return False
        try:  # (one message: a second part costs more than copying the frame)
            self._socket.send(token + frame, zmq.NOBLOCK, copy=len(frame) < 65536)
        except zmq.Again:
            return False
        return True

    def reconnect(self, endpoint: str, token: bytes | None) -> bool:
        """The peer is at ``endpoint`` with ``token`` (a ``peers`` command).  True when
        that is another process than the one this sender knew: it sends there from now
        on, on a new socket (what the old one held for the old process is dropped: the
        new process would refuse its token).  False when it is the same process (its
        heartbeat came back after a ZooKeeper session ended): a held sender resumes, its
        queue kept."""
        if endpoint == self.endpoint and token == self._known:
            self.token = token
            return False
        old, self._socket = self._socket, self._connected(endpoint)
        old.close(0)
        self.endpoint = endpoint
        self.token = self._known = token
        return True

    def forget(self) -> None:
        """The peer's process is reported dead: hold every frame for it (``try_send`` says
        full) until :meth:`reconnect` names its successor, or the same process again."""
        self.token = None

    def close(self) -> None:
        self._socket.close()


class ControlClient:
    """Worker side of the control channel (DEALER)."""

    def __init__(self, endpoint: str, identity: str, curve: CurveKeys | None = None) -> None:
        self._socket = _context().socket(zmq.DEALER)
        if curve is not None:
            secure_client(self._socket, curve)
        self._socket.setsockopt(zmq.IDENTITY, identity.encode())
        self._socket.setsockopt(zmq.LINGER, _LINGER_MS)
        self._socket.connect(endpoint)

    @property
    def socket(self) -> zmq.Socket:
        return self._socket

    def send(self, message: dict[str, Any]) -> None:
        self._socket.send(msgpack.packb(message, use_bin_type=True, default=str))

    def recv(self, timeout_ms: int) -> dict[str, Any] | None:
        if not self._socket.poll(timeout_ms):
            return None
        return msgpack.unpackb(self._socket.recv(), raw=False, strict_map_key=False)

    def recv_nowait(self) -> dict[str, Any] | None:
        try:
            data = self._socket.recv(zmq.NOBLOCK)
        except zmq.Again:
            return None
        return msgpack.unpackb(data, raw=False, strict_map_key=False)

    def close(self) -> None:
        self._socket.close()


class ControlServer:
    """Cluster side of the control channel (ROUTER), bound on a random local port."""

    def __init__(self, host: str = "127.0.0.1", curve: CurveKeys | None = None) -> None:
        self._socket = _context().socket(zmq.ROUTER)
        if curve is not None:
            authenticate_clients(_context(), curve)
            secure_server(self._socket, curve)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.MAXMSGSIZE, CONTROL_MAX_BYTES)
        port = self._socket.bind_to_random_port(f"tcp://{host}")
        self.endpoint = f"tcp://{host}:{port}"
        self.dropped = 0

    def recv(self, timeout_ms: int) -> tuple[str, dict[str, Any]] | None:
        """The next (identity, message), or None on timeout — and for anything that is not
        one small msgpack map from one peer (counted in ``dropped``)."""
        if not self._socket.poll(timeout_ms):
            return None
        frames = self._socket.recv_multipart(copy=True)
        try:
            identity, data = frames
            message = unpack_bounded(data, CONTROL_MAX_BYTES, CONTROL_MAX_BYTES)
        except Exception:  # not from one of ours: drop it
            self.dropped += 1
            return None
        if type(message) is not dict:
            self.dropped += 1
            return None
        return identity.decode("utf-8", "replace"), message

    def send(self, identity: str, message: dict[str, Any]) -> None:
        self._socket.send_multipart(
            [identity.encode(), msgpack.packb(message, use_bin_type=True, default=str)]
        )

    def close(self) -> None:
        self._socket.close(0)


class Poller:
    """Waits on the data receiver and the control client at once."""

    def __init__(self, *sockets: zmq.Socket | None) -> None:
        self._poller = zmq.Poller()
        for s in sockets:
            if s is not None:  # e.g. a ZooKeeper client has no socket to poll
                self._poller.register(s, zmq.POLLIN)

    def wait(self, timeout_ms: float) -> None:
        """Return when a socket is readable or after ``timeout_ms``."""
        self._poller.poll(max(0, math.ceil(timeout_ms)))
