"""The Streams API: ``from topology.streams import StreamBuilder``.

Streams of Python values, built into an ordinary topology whose consecutive stateless
operators run fused inside one component.  See :mod:`topology.streams.api` and
docs/STREAMS.md.
"""

from __future__ import annotations

from .api import FUSION_KEY, PairStream, Stream, StreamBuilder, WindowedPairStream, WindowedStream
from .windowing import Windowing, session, sliding, tumbling

__all__ = [
    "FUSION_KEY",
    "PairStream",
    "Stream",
    "StreamBuilder",
    "WindowedPairStream",
    "WindowedStream",
    "Windowing",
    "session",
    "sliding",
    "tumbling",
]
