"""Backpressure between workers: which peers hold this worker's spouts back, and what to
tell the peers (pure).

A worker asks its peers to hold back their spouts while it is congested (frames waiting
for a full peer, or its inbound queue full); they resume on its "off", or on their own
:data:`BACKPRESSURE_TTL` seconds after its last signal, which it repeats every
:data:`BACKPRESSURE_REFRESH` seconds while congested.

Signals travel on the data plane as ``[BACKPRESSURE, worker, on]`` frames, and like every
frame they are let in only with the receiving worker's data token
(:mod:`topology.runtime.net.data_token`), which only whoever can read the owner's worker
registrations knows: a signal that reaches :meth:`PeerSignals.receive` was sent by a worker
of the topology, so it is honoured.  A relaunched worker's peers learn its new token with
its new endpoint, and it learns theirs when it starts, so signals to and from it count at
once.  With a cluster secret, CURVE also authenticates every connection.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import codec

#: A congested worker repeats its backpressure signal this often (seconds) ...
BACKPRESSURE_REFRESH = 1.0
#: ... and a peer's signal lapses this long after it was last heard, so a lost "off"
#: holds spouts back for seconds, not for ever.
BACKPRESSURE_TTL = 5.0

_NOTHING: tuple[tuple[int, bytes], ...] = ()


class PeerSignals:
    """One worker's side of backpressure with its ``peers`` (the workers it has links to).

    Attributes:
        throttling: peer -> when its "on" lapses unless repeated.

    Example::

        >>> s = PeerSignals(0, [1, 2])
        >>> s.receive(1, True, now=10.0)
        >>> s.throttling
        {1: 15.0}
        >>> [peer for peer, frame in s.signals_due(10.0, congested=True)]
        [1, 2]
    """

    def __init__(self, worker: int, peers: Iterable[int]) -> None:
        self.worker = worker
        self.peers = list(peers)
        self.throttling: dict[int, float] = {}
        self._signalled = False
        self._next_signal = 0.0

    # -- from peers ---------------------------------------------------------------------

    def receive(self, peer: int, on: bool, now: float) -> None:
        """A signal from ``peer`` (the door let it in: it came with this worker's token)."""
        if on:
            self.throttling[peer] = now + BACKPRESSURE_TTL
        else:
            self.throttling.pop(peer, None)

    def expire(self, now: float) -> None:
        """Forget the signals not repeated within :data:`BACKPRESSURE_TTL`."""
        if self.throttling:
            for peer, lapses in list(self.throttling.items()):
                if now >= lapses:
                    del self.throttling[peer]

    # -- to peers -----------------------------------------------------------------------

    def signals_due(self, now: float, congested: bool) -> Iterable[tuple[int, bytes]]:
        """(peer, backpressure frame) for every peer, when this worker's congestion
        changed or its "on" is due again; else nothing."""
        if congested == self._signalled and not (congested and now >= self._next_signal):
            return _NOTHING
        self._signalled = congested
        self._next_signal = now + BACKPRESSURE_REFRESH
        frame = codec.encode_backpressure(self.worker, congested)
        return [(peer, frame) for peer in self.peers]
