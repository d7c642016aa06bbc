"""``GET /api/v1/events``: the poller's snapshots as server-sent events.

A client gets the latest snapshot at once, then every newer one as it is published (one
per ``ui.publish.interval.secs``), never one made for it: however many clients, the
poller runs once per interval (:class:`topology.ui.hub.Hub`).  Each event is::

    event: snapshot
    id: <seq>
    data: {"seq", "generated_at", "summary": <cluster summary>,
           "topologies": {name: <report with graph and rates>}}

``?topology=NAME`` keeps only that topology's report (the summary stays).  A comment line
is sent every :data:`KEEPALIVE_SECS` without a snapshot, so proxies keep the stream open.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from . import params
from .context import context
from .hub import Hub

#: Seconds between two keep-alive comments when no snapshot comes.
KEEPALIVE_SECS = 15.0
#: Milliseconds a browser waits before reconnecting (the ``retry`` field).
RETRY_MS = 2000


async def _stream(hub: Hub, only: str | None) -> AsyncIterator[str]:
    hub.clients += 1
    try:
        yield f"retry: {RETRY_MS}\n\n"
        seq = 0
        while not hub.closing:
            snapshot = await hub.newer(seq, KEEPALIVE_SECS)
            if snapshot is None:
                if hub.closing:
                    return
                yield ": keepalive\n\n"
                continue
            seq = snapshot.seq
            yield f"event: snapshot\nid: {seq}\ndata: {snapshot.event_data(only)}\n\n"
    finally:
        hub.clients -= 1


async def events(request: Request) -> Response:
    """The event stream (see the module docstring)."""
    query = params.query_params(request.query_params.multi_items(), ("topology",))
    only = query.get("topology")
    if only is not None:
        params.name(only, parameter="topology")
    return StreamingResponse(
        _stream(context(request).hub, only),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
