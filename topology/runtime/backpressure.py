"""Backpressure between workers, and why a forged signal cannot hold spouts back (pure).

A worker asks its peers to hold back their spouts while it is congested (frames waiting
for a full peer, or its inbound queue full); they resume on its "off", or on their own
:data:`BACKPRESSURE_TTL` seconds after its last signal, which it repeats every
:data:`BACKPRESSURE_REFRESH` seconds while congested.

Signals travel on the data plane, and without a cluster secret anyone who reaches a
worker's data port can write to it, so a frame's claim "I am worker *w*" proves nothing.
What does is *return routability* (as in TCP's SYN cookies): every worker sends, over the
link it opened to the endpoint the assignment names for peer *w*, a random token of that
link (``[LINK_TOKEN, me, token]``, repeated every :data:`TOKEN_REFRESH` seconds, new
for each worker process), and *w* quotes the tokens it heard in that worker's name in
every signal it sends it (``[BACKPRESSURE, w, on, [token, ...]]``).  A signal is honoured
only when it quotes the token this worker sent to *w*'s endpoint, which only who receives
at that endpoint has seen; anything else is dropped and counted.  With a cluster secret,
CURVE also authenticates every connection.

What an attacker without the secret keeps: link tokens sent in a peer's name push that
peer's own token out of the :data:`MAX_TOKENS` a worker keeps for it, so the worker's
signals to that peer go unheeded until the peer repeats its token.  That holds no spout
back; the peer's link to a congested worker still fills and stops its spouts locally.
One who can read the traffic between workers can read tokens too: that takes CURVE.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable

from . import serialization

#: A congested worker repeats its backpressure signal this often (seconds) ...
BACKPRESSURE_REFRESH = 1.0
#: ... and a peer's signal lapses this long after it was last heard, so a lost "off"
#: holds spouts back for seconds, not for ever.
BACKPRESSURE_TTL = 5.0
#: A worker repeats its link tokens this often (a restarted peer has forgotten them).
TOKEN_REFRESH = 1.0
#: Link tokens kept per peer, the most recently heard (its own, and any forged ones).
MAX_TOKENS = 4
#: A link token is this many random bits (a non-negative int msgpack packs in 9 bytes).
TOKEN_BITS = 63

_NOTHING: tuple[tuple[int, bytes], ...] = ()


class PeerSignals:
    """One worker's side of backpressure with its ``peers`` (the workers it has links to).

    Attributes:
        tokens: peer -> the token of this worker's link to it; a signal in that peer's
            name is honoured only when it quotes that token.
        throttling: peer -> when its honoured "on" lapses unless repeated.
    """

    def __init__(
        self,
        worker: int,
        peers: Iterable[int],
        randbits: Callable[[int], int] = secrets.randbits,
    ) -> None:
        self.worker = worker
        self.tokens = {peer: randbits(TOKEN_BITS) for peer in peers}
        self.throttling: dict[int, float] = {}
        self._heard: dict[int, list[int]] = {}
        self._signalled = False
        self._next_signal = 0.0
        self._next_tokens = 0.0

    # -- from peers ---------------------------------------------------------------------

    def heard_token(self, peer: int, token: int) -> None:
        """A link token in ``peer``'s name (well formed, maybe forged): kept among the
        :data:`MAX_TOKENS` most recently heard for that peer."""
        if peer not in self.tokens:
            return
        heard = self._heard.setdefault(peer, [])
        if token in heard:
            heard.remove(token)
        heard.append(token)
        if len(heard) > MAX_TOKENS:
            del heard[0]

    def receive(self, peer: int, on: bool, quoted: list[int], now: float) -> bool:
        """A backpressure signal in ``peer``'s name: honoured (True) only when it quotes
        the token of this worker's link to ``peer``; else it changes nothing (False)."""
        token = self.tokens.get(peer)
        if token is None or token not in quoted:
            return False
        if on:
            self.throttling[peer] = now + BACKPRESSURE_TTL
        else:
            self.throttling.pop(peer, None)
        return True

    def expire(self, now: float) -> None:
        """Forget the signals not repeated within :data:`BACKPRESSURE_TTL`."""
        if self.throttling:
            for peer, lapses in list(self.throttling.items()):
                if now >= lapses:
                    del self.throttling[peer]

    # -- to peers -----------------------------------------------------------------------

    def tokens_due(self, now: float) -> Iterable[tuple[int, bytes]]:
        """(peer, link token frame) for every peer when they are due, else nothing."""
        if now < self._next_tokens:
            return _NOTHING
        self._next_tokens = now + TOKEN_REFRESH
        me = self.worker
        return [(peer, serialization.encode_link_token(me, t)) for peer, t in self.tokens.items()]

    def signals_due(self, now: float, congested: bool) -> Iterable[tuple[int, bytes]]:
        """(peer, backpressure frame) for every peer whose tokens were heard, when this
        worker's congestion changed or its "on" is due again; else nothing."""
        if congested == self._signalled and not (congested and now >= self._next_signal):
            return _NOTHING
        self._signalled = congested
        self._next_signal = now + BACKPRESSURE_REFRESH
        me = self.worker
        return [
            (peer, serialization.encode_backpressure(me, congested, heard))
            for peer, heard in self._heard.items()
        ]
