"""ZeroMQ CURVE for the data and control planes, keyed by the cluster secret.

With a cluster secret, every worker derives the same two Curve25519 key pairs from it —
one for the sockets that bind (servers), one for those that connect (clients) — so no key
is ever sent or stored anywhere.  A server accepts a connection only from a client that
proves it holds the client secret key (checked by a ZAP handler of this process), and the
client only talks to a server holding the server secret key: a process without the cluster
secret can neither connect, nor read, nor inject a frame.  Traffic is encrypted.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from dataclasses import dataclass
from typing import Any

import zmq
import zmq.auth.thread
from zmq.utils import z85

#: The ZAP domain of sparkstorm's servers (the authenticator judges only these).
ZAP_DOMAIN = "sparkstorm"


@dataclass(frozen=True)
class CurveKeys:
    """The server and client key pairs of a cluster, Z85-encoded as libzmq wants them."""

    server_public: bytes
    server_secret: bytes
    client_public: bytes
    client_secret: bytes

    @classmethod
    def from_secret(cls, secret: bytes) -> CurveKeys:
        def pair(role: bytes) -> tuple[bytes, bytes]:
            private = z85.encode(
                hmac.new(secret, b"sparkstorm curve " + role, hashlib.sha256).digest()
            )
            return zmq.curve_public(private), private

        server_public, server_secret = pair(b"server")
        client_public, client_secret = pair(b"client")
        return cls(server_public, server_secret, client_public, client_secret)


def secure_server(socket: zmq.Socket, keys: CurveKeys) -> None:
    """Make a binding socket a CURVE server (before it binds)."""
    socket.curve_server = True
    socket.curve_secretkey = keys.server_secret
    socket.curve_publickey = keys.server_public
    socket.zap_domain = ZAP_DOMAIN.encode()


def secure_client(socket: zmq.Socket, keys: CurveKeys) -> None:
    """Make a connecting socket a CURVE client of the cluster's servers (before it connects)."""
    socket.curve_serverkey = keys.server_public
    socket.curve_publickey = keys.client_public
    socket.curve_secretkey = keys.client_secret


class _OnlyClientKey:
    def __init__(self, key: bytes) -> None:
        self.key = key

    def callback(self, domain: str, key: bytes) -> bool:
        return hmac.compare_digest(key, self.key)


_authenticators: dict[int, Any] = {}
_lock = threading.Lock()


def authenticate_clients(context: zmq.Context, keys: CurveKeys) -> None:
    """Start (once per context) the ZAP handler that admits only the cluster's client key."""
    with _lock:
        if id(context) in _authenticators:
            return
        auth = zmq.auth.thread.ThreadAuthenticator(context)
        auth.start()
        auth.configure_curve_callback(
            domain=ZAP_DOMAIN, credentials_provider=_OnlyClientKey(keys.client_public)
        )
        _authenticators[id(context)] = auth
