"""``GET /api/v1/topology/{name}/series?window=&component=``: a topology's per-component
time-series (:mod:`topology.ui.series`), what the pages chart.

The series come from the UI's own ring (what its poller saw since it started) unless a
Prometheus server is configured (``ui.prometheus.url``): then from Prometheus's range
queries (:mod:`topology.ui.series_prometheus`), which remember what happened before this
UI started, with the ring as the fallback when Prometheus does not answer
(``source_error`` says why).  ``?source=ring`` or ``?source=prometheus`` picks one.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from topology.stats.rolling import WINDOW_NAMES

from . import params
from .context import JSON, call, context, known
from .params import BadRequest
from .series import STEPS
from .series_prometheus import query_series

#: Where the series may come from.
SOURCES = ("ring", "prometheus")


def series_window(query: dict[str, str]) -> str:
    """The ``window`` of a series request as a name of :data:`~topology.ui.series.STEPS`
    (default ``10m``; ``all`` is refused: a ring covers at most a day)."""
    name = WINDOW_NAMES[params.window(query)]
    if name not in STEPS:
        raise BadRequest(
            f"window: the series cover {', '.join(STEPS)} (not {query.get('window')!r})",
            "window",
        )
    return name


async def series(request: Request) -> Response:
    """The series of one topology, or of one of its components (``component``)."""
    query = params.query_params(
        request.query_params.multi_items(), ("window", "component", "source")
    )
    name = params.name(request.path_params["name"])
    window = series_window(query)
    cid = query.get("component")
    if cid is not None:
        params.name(cid, "component", "component")
    source = query.get("source")
    if source is not None and source not in SOURCES:
        raise BadRequest(f"source: expected one of {', '.join(SOURCES)}, got {source!r}", "source")
    ctx = context(request)
    await known(ctx, name)
    if cid is not None:
        components = (await call(ctx.reads, 503, ctx.view.describe, name))["components"]
        if cid not in components:
            known_ids = ", ".join(sorted(components))
            raise BadRequest(
                f"topology {name!r} has no component {cid!r} ({known_ids})", "component", 404
            )
    out: dict[str, Any] = {}
    prometheus = ctx.settings.prometheus_url
    if source == "prometheus" and not prometheus:
        raise BadRequest("source: no Prometheus is configured (ui.prometheus.url)", "source")
    if prometheus and source != "ring":
        try:
            out = await call(ctx.reads, 503, query_series, prometheus, name, window, cid)
        except BadRequest as exc:
            if source == "prometheus":
                raise
            out = {"source_error": exc.message}
    ring = await call(ctx.reads, 503, ctx.hub.poller.series.series, name, window, cid)
    if "times" not in out:
        out = {**ring, **out, "source": "ring"}
    for component, column in out["components"].items():  # Prometheus does not say kinds
        column.setdefault("kind", (ring["components"].get(component) or {}).get("kind"))
    return JSON({**out, "generated_at": time.time()})
