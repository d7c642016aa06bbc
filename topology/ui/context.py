"""What every request handler shares: :class:`UiContext` (the view, the hub, the guard,
the settings) and the calls into the cluster, made off the event loop."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from topology.errors import SparkstormError
from topology.names import quoted

from .auth import Guard, UiSettings
from .hub import Hub, Snapshot, encode
from .params import BadRequest, query_params
from .source import ClusterView

T = TypeVar("T")

#: Seconds a request waits for the poller's first snapshot before answering 503.
FIRST_SNAPSHOT_SECS = 15.0
#: Seconds a worker has to answer a request made for one page.
REQUEST_TIMEOUT_SECS = 5.0
#: Largest request body read (a POST's JSON parameters).
MAX_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class UiContext:
    """The state of one server (``app.state.ui``)."""

    view: ClusterView
    hub: Hub
    guard: Guard
    settings: UiSettings


def context(request: Request) -> UiContext:
    ui: UiContext = request.app.state.ui
    return ui


class JSON(Response):
    """A compact JSON response (:func:`topology.ui.hub.encode`); a ``str`` is sent as it
    is (already encoded)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return (content if isinstance(content, str) else encode(content)).encode()


def error_response(exc: BadRequest) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def latest(ctx: UiContext) -> Snapshot:
    """The poller's latest snapshot (503 when there is none after
    :data:`FIRST_SNAPSHOT_SECS`)."""
    snapshot = await ctx.hub.current(FIRST_SNAPSHOT_SECS)
    if snapshot is None:
        raise BadRequest("no snapshot of the cluster yet: try again", None, 503)
    return snapshot


async def known(ctx: UiContext, name: str) -> None:
    """Return if a topology ``name`` runs, else 404 naming the parameter ``name``."""
    names = await run_in_threadpool(ctx.view.topology_names)
    if name not in names:
        running = ", ".join(quoted(n) for n in names[:20]) or "none"
        raise BadRequest(f"no topology named {quoted(name)} (running: {running})", "name", 404)


async def call(status: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread; a :class:`SparkstormError` (the cluster
    refused, or a worker did not answer in time) becomes ``status`` with its message."""
    try:
        return await run_in_threadpool(fn, *args, **kwargs)
    except SparkstormError as exc:
        raise BadRequest(str(exc), None, status) from None


async def body_params(request: Request, allowed: Iterable[str]) -> dict[str, Any]:
    """A POST's parameters: its query string, overridden by a JSON object body (an empty
    body is none); a parameter not in ``allowed`` is refused, as in a query string."""
    allowed = tuple(allowed)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BadRequest(f"request body over {MAX_BODY_BYTES:,} bytes", "body", 413)
        chunks.append(chunk)
    raw = b"".join(chunks).strip()
    params: dict[str, Any] = query_params(request.query_params.multi_items(), allowed)
    if not raw:
        return params
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("body: expected a JSON object", "body") from None
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object", "body")
    query_params(((str(k), "") for k in body), allowed)  # unknown keys
    return {**params, **body}
