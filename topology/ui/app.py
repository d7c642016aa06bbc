"""The ASGI application: routes, error handling, the poller's lifetime, the pages.

``create_app(view, settings)`` is a starlette app serving the REST API under ``/api/v1/``
(:mod:`topology.ui.api`, :mod:`topology.ui.actions`, :mod:`topology.ui.events`,
:mod:`topology.ui.openapi`) and the files of ``topology/ui/static/`` at ``/``
(``index.html`` for ``/``).  Every error under ``/api/`` is JSON ``{"error", "message",
"parameter"}`` with a 4xx status (5xx only for a bug, without its traceback); the poller
(:class:`topology.ui.hub.Hub`) runs while the app does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from . import api, events
from .actions import ACTIONS, action_endpoint, csrf
from .auth import Guard, UiSettings
from .context import JSON, UiContext, error_response
from .hub import Hub, Poller
from .openapi import openapi
from .params import BadRequest
from .source import ClusterView

log = logging.getLogger("sparkstorm.ui")

#: The pages' files (the index, scripts, styles), served at ``/``.
STATIC_DIR = Path(__file__).resolve().parent / "static"


def api_routes() -> list[Route]:
    """Every route under ``/api/v1`` (paths relative to it)."""
    routes = [
        Route("/cluster/summary", api.cluster_summary),
        Route("/topology/summary", api.topology_summary),
        Route("/topology/{name}", api.topology),
        Route("/topology/{name}/graph.svg", api.graph_svg),
        Route("/topology/{name}/component/{component}", api.component),
        Route("/topology/{name}/logs", api.logs),
        Route("/topology/{name}/logs/download", api.logs_download),
        Route("/events", events.events),
        Route("/csrf", csrf),
        Route("/ui", api.ui),
        Route("/openapi.json", _openapi),
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


def create_app(view: ClusterView, settings: UiSettings | None = None) -> Starlette:
    """The UI over ``view`` (``settings``: defaults when None); ``app.state.ui`` is its
    :class:`~topology.ui.context.UiContext`."""
    settings = settings or UiSettings()
    hub = Hub(Poller(view, settings.publish_interval))
    ctx = UiContext(view, hub, Guard(settings.admin_token), settings)

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

    STATIC_DIR.mkdir(exist_ok=True)
    app = Starlette(
        routes=[
            Mount("/api/v1", routes=api_routes()),
            Mount("/", StaticFiles(directory=STATIC_DIR, html=True)),
        ],
        exception_handlers={
            BadRequest: _bad_request,
            HTTPException: _http_error,
            Exception: _bug,
        },
        lifespan=lifespan,
    )
    app.state.ui = ctx
    return app
