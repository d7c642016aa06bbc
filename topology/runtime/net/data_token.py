"""A worker's data token: what a frame must carry to be let in (pure).

Without a cluster secret anyone who reaches a worker's data port can write to it.  So
each worker process draws a fresh random token for its data endpoint (:func:`new_token`)
and publishes it with the endpoint, where only the topology's owner can read it:
LocalCluster's control channel (each worker's identity there is unguessable), or the
worker's heartbeat in ZooKeeper (readable by the owner's identity only).  A sender stamps
the receiver's current token on every frame it sends: the message is the token's
:data:`TOKEN_BYTES` bytes, then the frame (unchanged, :mod:`topology.runtime.net.codec`),
and the door refuses a message that does not begin with that token before it looks at
anything else in it (:meth:`topology.runtime.net.frames.FrameCheck.admit`: one constant-time
comparison per frame; refusals are counted as ``bad-token``).  Backpressure signals are
frames like any other, so they need nothing more.

A relaunched worker draws a new token; its peers learn it together with its new endpoint (a
:class:`Peer`), and frames for a peer whose token they do not know wait for it
(:class:`topology.runtime.net.transport.DataSender`).  Tokens travel as hex text
(:func:`token_text`, :func:`parse_token`) in control messages and heartbeats.

Example::

    >>> token = new_token()
    >>> parse_token(token_text(token)) == token
    True
    >>> parse_token("not a token") is None
    True
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Random bytes in a token.
TOKEN_BYTES = 16


def new_token() -> bytes:
    """A fresh token for this process's data endpoint."""
    return secrets.token_bytes(TOKEN_BYTES)


def token_text(token: bytes) -> str:
    """``token`` as it is written into a control message or a heartbeat (hex)."""
    return token.hex()


def parse_token(value: Any) -> bytes | None:
    """The token a control message or heartbeat carries as text, or None when ``value``
    is not :data:`TOKEN_BYTES` bytes in lower-case hex."""
    if type(value) is not str or len(value) != 2 * TOKEN_BYTES or value != value.lower():
        return None
    try:
        token = bytes.fromhex(value)
    except ValueError:
        return None
    return token if len(token) == TOKEN_BYTES else None


@dataclass(frozen=True)
class Peer:
    """Where a peer worker's door is, and the token it lets in (None: not known yet;
    frames for it wait)."""

    endpoint: str
    token: bytes | None = field(default=None, repr=False)


def peers_from(endpoints: Mapping[Any, Any], tokens: Mapping[Any, Any]) -> dict[int, Peer]:
    """Every worker's :class:`Peer` from a ``start`` or ``peers`` command: ``endpoints``
    and ``tokens`` (hex text) keyed by worker index (int or str).  A worker whose token is
    missing or malformed gets None: nothing is sent to it until a later command has it."""
    by_index = {str(w): t for w, t in tokens.items()}
    return {int(w): Peer(ep, parse_token(by_index.get(str(w)))) for w, ep in endpoints.items()}


def peer_fields(endpoints: Mapping[int, str], tokens: Mapping[int, bytes]) -> dict[str, Any]:
    """The ``endpoints`` and ``tokens`` fields of a ``start`` or ``peers`` command (the
    form :func:`peers_from` reads)."""
    return {
        "endpoints": {str(w): ep for w, ep in endpoints.items()},
        "tokens": {str(w): token_text(t) for w, t in tokens.items()},
    }
