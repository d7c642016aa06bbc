"""The read side of the REST API (``GET /api/v1/...``; paths and shapes in docs/UI.md and
:mod:`topology.ui.openapi`).

Summaries come from the poller's latest snapshot (at most one publish interval old); a
topology's report, a component's page and logs are asked of the cluster for the request,
on a worker thread, exactly as ``sparkstorm status`` / ``logs`` ask for them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from topology.config import MAX_WORKERS
from topology.redaction import redact
from topology.runtime.worker_log import MAX_CHUNK_BYTES

from . import params
from .auth import CSRF_COOKIE, CSRF_HEADER, HOW_TO_ENABLE
from .component import component_page
from .context import JSON, REQUEST_TIMEOUT_SECS, UiContext, call, context, known, latest
from .graph import build_graph
from .params import BadRequest
from .rates import component_rates
from .svg import graph_svg as draw

#: Bytes of the end of each log shown when ``bytes`` is not given.
DEFAULT_LOG_BYTES = 16 * 1024


async def cluster_summary(request: Request) -> Response:
    """``/api/v1/cluster/summary``: nimbuses, totals and every topology's summary row."""
    params.query_params(request.query_params.multi_items(), ())
    snapshot = await latest(context(request))
    return JSON(snapshot.summary_json)


async def topology_summary(request: Request) -> Response:
    """``/api/v1/topology/summary``: every topology's summary row."""
    params.query_params(request.query_params.multi_items(), ())
    snapshot = await latest(context(request))
    return JSON(
        {
            "seq": snapshot.seq,
            "generated_at": snapshot.generated_at,
            "topologies": snapshot.summary["topologies"],
        }
    )


async def _topology_request(
    request: Request, allowed: tuple[str, ...]
) -> tuple[str, dict[str, str]]:
    """The checked ``name`` and query parameters of a request about one topology (whether
    it runs is checked after its own parameters: :func:`known`)."""
    query = params.query_params(request.query_params.multi_items(), allowed)
    name = params.name(request.path_params["name"])
    return name, query


async def _report(request: Request) -> tuple[UiContext, str, dict[str, Any], dict[str, Any]]:
    """The context, name, status report over ``?window=`` and graph of a topology.  The
    report (with the topology's conf) is shared by every request for that topology and
    window within one publish interval: N open pages ask the workers once per interval."""
    name, query = await _topology_request(request, ("window",))
    window = params.window(query)
    ctx = context(request)

    async def fetch() -> tuple[dict[str, Any], dict[str, Any]]:
        await known(ctx, name)
        report = await call(ctx.reads, 503, ctx.view.ops.stats, name, window)
        info = await call(ctx.reads, 503, ctx.view.describe, name)
        return {**report, "conf": info["conf"]}, info["components"]

    report, components = await ctx.reports.get((name, window), fetch)
    snapshot = ctx.hub.latest
    rates = snapshot.rates.get(name, {}) if snapshot is not None else {}
    return ctx, name, report, build_graph(components, report, rates)


async def topology(request: Request) -> Response:
    """``/api/v1/topology/{name}?window=``: the status report (``sparkstorm status NAME
    --json``) with ``graph``, live ``rates`` and the redacted ``conf``."""
    ctx, name, report, graph = await _report(request)
    snapshot = ctx.hub.latest
    return JSON(
        {
            **report,
            "graph": graph,
            "rates": (snapshot.topologies.get(name) or {}).get("rates") if snapshot else None,
            "rates_at": snapshot.generated_at if snapshot is not None else None,
            "conf": redact(report["conf"], ctx.settings.redact_patterns),
        }
    )


async def graph_svg(request: Request) -> Response:
    """``/api/v1/topology/{name}/graph.svg?window=``: the graph drawn
    (:func:`topology.ui.svg.graph_svg`): edge rates, bolts coloured by capacity."""
    _, name, _, graph = await _report(request)
    return Response(draw(graph, title=name), media_type="image/svg+xml")


async def component(request: Request) -> Response:
    """``/api/v1/topology/{name}/component/{component}?window=``: per-task statistics,
    streams, inputs and outputs, errors (:mod:`topology.ui.component`)."""
    name, query = await _topology_request(request, ("window",))
    window = params.window(query)
    cid = params.name(request.path_params["component"], "component", "component")
    ctx = context(request)
    await known(ctx, name)
    components = (await call(ctx.reads, 503, ctx.view.describe, name))["components"]
    if cid not in components:
        known_ids = ", ".join(sorted(components))
        raise BadRequest(
            f"topology {name!r} has no component {cid!r} ({known_ids})", "component", 404
        )
    replies = await call(ctx.reads, 503, ctx.view.ops.worker_status, name, REQUEST_TIMEOUT_SECS)
    errors = (await call(ctx.reads, 503, ctx.view.ops.errors, name)).get(cid, [])
    snapshot = ctx.hub.latest
    rates = component_rates(snapshot.rates.get(name, {}) if snapshot else {}, cid)
    return JSON(component_page(name, cid, components, replies, errors, window, rates))


async def _log_chunks(
    request: Request, allowed: tuple[str, ...], default_bytes: int
) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
    """Check a log request and read the chunks (``worker``, ``bytes``, ``component``;
    ``offset`` and ``file`` continue a worker's log where the last chunk ended)."""
    name, query = await _topology_request(request, allowed)
    ctx = context(request)
    worker = params.integer(query, "worker", 0, MAX_WORKERS - 1)
    max_bytes = params.log_bytes(query, default_bytes)
    cid = query.get("component")
    if cid is not None:
        params.name(cid, "component", "component")
    offset = params.integer(query, "offset", 0, 2**62)
    file_id = params.integer(query, "file", 0, 2**62)
    if (offset is not None or file_id is not None) and worker is None:
        raise BadRequest("offset and file continue one worker's log: give worker too", "worker")
    await known(ctx, name)
    snapshot = ctx.hub.latest
    workers = ((snapshot.topologies.get(name) or {}).get("topology") or {}) if snapshot else {}
    count = workers.get("workers")
    if worker is not None and isinstance(count, int) and worker >= count:
        raise BadRequest(
            f"topology {name!r} has no worker {worker} (0..{count - 1})", "worker", 404
        )
    chunks = await call(
        ctx.reads,
        503,
        ctx.view.ops.worker_logs,
        name,
        worker,
        {worker: offset} if worker is not None and offset is not None else None,
        cid,
        max_bytes,
        REQUEST_TIMEOUT_SECS,
        {worker: file_id} if worker is not None and file_id is not None else None,
    )
    return name, query, chunks


async def logs(request: Request) -> Response:
    """``/api/v1/topology/{name}/logs?worker=&bytes=&component=&offset=&file=``: each
    worker's chunk, as ``ClusterOps.worker_logs`` gives it."""
    allowed = ("worker", "bytes", "component", "offset", "file")
    name, _, chunks = await _log_chunks(request, allowed, DEFAULT_LOG_BYTES)
    return JSON({"topology": name, "chunks": chunks})


async def logs_download(request: Request) -> Response:
    """``/api/v1/topology/{name}/logs/download?worker=&bytes=&component=``: the same text
    as a file (``Content-Disposition: attachment``), one header line per worker."""
    name, query, chunks = await _log_chunks(
        request, ("worker", "bytes", "component"), MAX_CHUNK_BYTES
    )
    parts = []
    for chunk in chunks:
        where = f"{chunk.get('host')} (pid {chunk.get('pid')}): {chunk.get('path')}"
        parts.append(f"==> worker {chunk.get('worker')} on {where} <==\n{chunk.get('text', '')}")
    which = f"worker-{query['worker']}" if "worker" in query else "workers"
    return PlainTextResponse(
        "\n".join(parts),
        headers={"Content-Disposition": f'attachment; filename="{name}-{which}.log"'},
    )


def ui_info(ctx: UiContext) -> dict[str, Any]:
    """``/api/v1/ui``: what the pages need to know about this server."""
    return {
        "publish_interval_secs": ctx.hub.interval,
        "actions_enabled": ctx.guard.enabled,
        "actions_how": HOW_TO_ENABLE,  # what the page says when actions are disabled
        "polls": ctx.hub.polls,
        "clients": ctx.hub.clients,
        "connections": ctx.connections.stats(),
        "csrf": {"path": "/api/v1/csrf", "header": CSRF_HEADER, "cookie": CSRF_COOKIE},
        "windows": ["10m", "3h", "1d", "all"],
    }


async def ui(request: Request) -> Response:
    params.query_params(request.query_params.multi_items(), ())
    return JSON(ui_info(context(request)))
