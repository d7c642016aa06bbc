"""The ASGI application: routes, error handling, the poller's lifetime, the pages.

``create_app(view, settings)`` is a starlette app serving the REST API under ``/api/v1/``
(:mod:`topology.ui.api`, :mod:`topology.ui.actions`, :mod:`topology.ui.events`,
:mod:`topology.ui.openapi`) and the files of ``topology/ui/static/`` at ``/``
(``index.html`` for ``/``).  Every error under ``/api/`` is JSON ``{"error", "message",
"parameter"}`` with a 4xx status (5xx only for a bug, without its traceback); the poller
(:class:`topology.ui.hub.Hub`) runs while the app does.

Every request must name this server in its ``Host`` header — 127.0.0.1, localhost,
[::1] or the host it listens on, any port — else 400 (a page of another site that
rebinds its name to this address cannot read the API); every response says it may not be
framed (``X-Frame-Options: DENY``, ``Content-Security-Policy: frame-ancestors 'none'``)
nor sniffed (``X-Content-Type-Options: nosniff``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import api, checkpoints, events, firstpaint, series_api
from .actions import ACTIONS, action_endpoint, csrf
from .auth import Guard, UiSettings
from .connections import ConnectionGate
from .context import (
    ACTION_CALL_SECS,
    ACTION_SLOTS,
    JSON,
    READ_CALL_SECS,
    READ_SLOTS,
    Lane,
    SharedCalls,
    UiContext,
    error_response,
)
from .hub import Hub, Poller
from .openapi import openapi
from .params import BadRequest
from .source import ClusterView

log = logging.getLogger("sparkstorm.ui")

#: The pages' files (the index, scripts, styles), served at ``/``.
STATIC_DIR = Path(__file__).resolve().parent / "static"
#: The names every server answers to (with any port), whatever else it listens on.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Headers of every response: never framed by another page, never type-sniffed.
SECURITY_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
)


def allowed_hosts(hosts: Iterable[str]) -> list[str]:
    """The ``Host`` header names a server listening on ``hosts`` answers to: the loopback
    names and each of ``hosts`` (an IPv6 address in brackets, as a Host header has it)."""
    out = list(LOOPBACK_HOSTS)
    for host in hosts:
        bare = host.strip().strip("[]").lower()
        name = f"[{bare}]" if ":" in bare else bare
        if bare and name not in out:
            out.append(name)
    return out


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP response (event
    streams included: it only touches the response start)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def api_routes() -> list[Route]:
    """Every route under ``/api/v1`` (paths relative to it)."""
    routes = [
        Route("/cluster/summary", api.cluster_summary),
        Route("/topology/summary", api.topology_summary),
        Route("/topology/{name}", api.topology),
        Route("/topology/{name}/graph.svg", api.graph_svg),
        Route("/topology/{name}/component/{component}", api.component),
        Route("/topology/{name}/series", series_api.series),
        Route("/topology/{name}/logs", api.logs),
        Route("/topology/{name}/logs/download", api.logs_download),
        Route("/topology/{name}/savepoints", checkpoints.savepoints),
        Route("/events", events.events),
        Route("/csrf", csrf),
        Route("/ui", api.ui),
        Route("/openapi.json", _openapi),
        Route("/snapshot", firstpaint.snapshot),
    ]
    routes += [
        Route(f"/topology/{{name}}/{action}", action_endpoint(action), methods=["POST"])
        for action in ACTIONS
    ]
    return routes


async def _openapi(request: Request) -> Response:
    return JSON(openapi())


async def _bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadRequest)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such path, wrong method): JSON under ``/api/``."""
    assert isinstance(exc, HTTPException)
    if not request.url.path.startswith("/api/"):
        return PlainTextResponse(str(exc.detail), exc.status_code, headers=exc.headers)
    if exc.status_code == 404:
        message = f"no API path {request.url.path}: the paths are in /api/v1/openapi.json"
        return error_response(BadRequest(message, "path", 404))
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed here (allowed: {allowed})"
        response = error_response(BadRequest(message, "method", 405))
        response.headers["Allow"] = allowed
        return response
    return error_response(BadRequest(str(exc.detail), None, exc.status_code))


async def _bug(request: Request, exc: Exception) -> Response:
    log.error("UI request %s %s failed", request.method, request.url.path, exc_info=exc)
    body = {"error": "internal", "message": f"internal error ({type(exc).__name__})"}
    return JSONResponse({**body, "parameter": None}, status_code=500)


def create_app(
    view: ClusterView,
    settings: UiSettings | None = None,
    hosts: Iterable[str] = (),
    connections: ConnectionGate | None = None,
) -> Starlette:
    """The UI over ``view`` (``settings``: defaults when None) answering requests whose
    ``Host`` is a loopback name, ``settings.host`` or one of ``hosts`` (the address the
    server listens on); ``app.state.ui`` is its :class:`~topology.ui.context.UiContext`.
    ``connections``: the gate of the server that serves it (what ``/api/v1/ui`` reports;
    default: a gate of ``settings.max_connections`` that nothing passes through)."""
    settings = settings or UiSettings()
    hub = Hub(Poller(view, settings.publish_interval))
    reads = Lane("read", READ_SLOTS, READ_CALL_SECS)
    actions = Lane("action", ACTION_SLOTS, ACTION_CALL_SECS)
    reports = SharedCalls(settings.publish_interval)
    gate = connections or ConnectionGate(settings.max_connections)
    guard = Guard(settings.admin_token)
    ctx = UiContext(view, hub, guard, settings, reads, actions, reports, gate)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        poll = asyncio.create_task(hub.run(), name="sparkstorm-ui-poller")
        try:
            yield
        finally:
            hub.close()
            poll.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poll
            hub.poller.close()
            reads.close()
            actions.close()

    STATIC_DIR.mkdir(exist_ok=True)
    app = Starlette(
        routes=[
            Mount("/api/v1", routes=api_routes()),
            *(Route(path, firstpaint.page) for path in firstpaint.PAGES),
            Mount("/", StaticFiles(directory=STATIC_DIR, html=True)),
        ],
        exception_handlers={
            BadRequest: _bad_request,
            HTTPException: _http_error,
            Exception: _bug,
        },
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(
                TrustedHostMiddleware,
                allowed_hosts=allowed_hosts([settings.host, *hosts]),
                www_redirect=False,
            ),
        ],
        lifespan=lifespan,
    )
    app.state.ui = ctx
    return app
