"""The write side of the REST API: ``POST /api/v1/topology/{name}/{action}`` and the CSRF
token they need (:mod:`topology.ui.auth`).

Each action calls the method the CLI verb calls — ``activate``, ``deactivate``,
``kill_topology``, ``set_log_level`` of ``ClusterOps``, and ``rebalance`` — and answers
once it returned: ``{"topology", "action", "status": "success", ...}``, or a 4xx JSON error
(``409`` with the cluster's own message when it refused).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from . import params
from .auth import CSRF_COOKIE, CSRF_HEADER
from .context import (
    ACTION_CALL_SECS,
    JSON,
    REQUEST_TIMEOUT_SECS,
    UiContext,
    body_params,
    call,
    context,
    known,
)

#: Seconds a kill or rebalance given no wait is allowed for its default wait (the
#: topology's message timeout on a cluster).
MAX_DEFAULT_WAIT_SECS = 300.0
#: Seconds a CSRF cookie lives (the pages fetch a new token when it is gone).
CSRF_MAX_AGE = 12 * 3600

Action = Callable[[UiContext, str, dict[str, Any]], Awaitable[dict[str, Any]]]


async def csrf(request: Request) -> Response:
    """``GET /api/v1/csrf``: a fresh CSRF token, also set as the ``sparkstorm_csrf``
    cookie (``SameSite=Strict``); send it back in ``X-CSRF-Token`` with every POST."""
    params.query_params(request.query_params.multi_items(), ())
    ctx = context(request)
    token = ctx.guard.new_csrf()
    response = JSON(
        {
            "csrf_token": token,
            "header": CSRF_HEADER,
            "cookie": CSRF_COOKIE,
            "actions_enabled": ctx.guard.enabled,
        }
    )
    response.set_cookie(
        CSRF_COOKIE, token, max_age=CSRF_MAX_AGE, path="/", httponly=True, samesite="strict"
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _limit(wait: float | None) -> float:
    """Seconds an action that waits ``wait`` seconds (None: the cluster's default, at most
    the longest message timeout) may take before it answers 503."""
    return (wait if wait is not None else MAX_DEFAULT_WAIT_SECS) + ACTION_CALL_SECS


async def _activate(ctx: UiContext, name: str, query: dict[str, Any]) -> dict[str, Any]:
    await call(ctx.actions, 409, ctx.view.ops.activate, name)
    return {}


async def _deactivate(ctx: UiContext, name: str, query: dict[str, Any]) -> dict[str, Any]:
    await call(ctx.actions, 409, ctx.view.ops.deactivate, name)
    return {}


async def _kill(ctx: UiContext, name: str, query: dict[str, Any]) -> dict[str, Any]:
    wait = params.seconds(query, "wait_secs")
    await call(ctx.actions, 409, ctx.view.ops.kill_topology, name, wait, timeout=_limit(wait))
    return {"wait_secs": wait}


async def _rebalance(ctx: UiContext, name: str, query: dict[str, Any]) -> dict[str, Any]:
    components = params.components(query)
    workers = params.workers(query, required=not components)
    wait = params.seconds(query, "wait_secs")
    rebalance = ctx.view.rebalance
    await call(ctx.actions, 409, rebalance, name, workers, wait, components, timeout=_limit(wait))
    return {"workers": workers, "wait_secs": wait, "components": components or {}}


async def _log_level(ctx: UiContext, name: str, query: dict[str, Any]) -> dict[str, Any]:
    level = params.level(query)
    revert = params.seconds(query, "timeout", positive=True)
    replies = await call(
        ctx.actions, 409, ctx.view.ops.set_log_level, name, level, revert, REQUEST_TIMEOUT_SECS
    )
    return {"level": level, "timeout": revert, "workers": len(replies)}


#: action -> (its handler, the parameters it takes).
ACTIONS: dict[str, tuple[Action, tuple[str, ...]]] = {
    "activate": (_activate, ()),
    "deactivate": (_deactivate, ()),
    "kill": (_kill, ("wait_secs",)),
    "rebalance": (_rebalance, ("workers", "wait_secs", "components")),
    "log-level": (_log_level, ("level", "timeout")),
}


def action_endpoint(action: str) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of ``POST /api/v1/topology/{name}/<action>``: the admin and CSRF
    tokens first, then the name and parameters, then the cluster."""
    handler, allowed = ACTIONS[action]

    async def endpoint(request: Request) -> Response:
        ctx = context(request)
        ctx.guard.check(request.headers, request.cookies)
        name = params.name(request.path_params["name"])
        query = await body_params(request, allowed)
        await known(ctx, name)
        extra = await handler(ctx, name, query)
        return JSON({"topology": name, "action": action, "status": "success", **extra})

    endpoint.__name__ = f"post_{action.replace('-', '_')}"
    return endpoint
