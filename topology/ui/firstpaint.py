"""First paint: the cluster and topology pages filled from the latest snapshot at load.

``GET /api/v1/snapshot?topology=NAME`` is the JSON of the event stream's ``snapshot``
event (:meth:`topology.ui.hub.Snapshot.event_data`): ``{"seq", "generated_at", "summary",
"topologies": {name: report}}``, from the poller's latest snapshot, never a call into the
cluster.

The cluster page (``/``, ``/index.html``) and the topology page (``/topology.html``) are
served with that JSON (the cluster page: with the summary only) and ``GET /api/v1/ui``'s
inside, as a data block before their scripts::

    <script type="application/json" id="first-snapshot">{"ui": {...}, "snapshot": {...}}</script>

The page draws it before anything else (the graph, the tables, the actions), then goes
live on the event stream: what a browser shows at its ``load`` event — and what a headless
``chromium --dump-dom`` prints — is already filled.  A page asked for before the poller's
first snapshot waits up to :data:`FIRST_PAINT_WAIT_SECS` for it, then is served without
the block (it fetches ``/api/v1/snapshot`` instead).  The JSON is made safe to sit in HTML:
``<``, ``>`` and ``&`` are written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (so no string in
it can end the block), which ``JSON.parse`` reads back unchanged.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from topology.names import name_problem

from . import params
from .api import ui_info
from .context import JSON, context, latest
from .hub import Snapshot, encode

#: Seconds a page waits for the poller's first snapshot before it is served without one.
FIRST_PAINT_WAIT_SECS = 3.0
#: The id of the data block a page reads at load.
BLOCK_ID = "first-snapshot"
#: The pages served with a snapshot inside, by path (files of ``static/``).
PAGES = {"/": "index.html", "/index.html": "index.html", "/topology.html": "topology.html"}
_STATIC = Path(__file__).resolve().parent / "static"
_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def html_safe_json(text: str) -> str:
    """JSON ``text`` that cannot end the ``<script>`` element it sits in (nor open a
    comment): ``<``, ``>`` and ``&`` as JSON escapes.  They occur only inside strings of
    JSON, where the escapes mean the same characters.

    >>> html_safe_json('{"a":"</script>&"}')
    '{"a":"\\\\u003c/script\\\\u003e\\\\u0026"}'
    """
    return text.translate(_HTML_SAFE)


def with_block(page: str, data: str) -> str:
    """``page`` with the data block holding ``data`` (JSON) before its first script."""
    block = f'<script type="application/json" id="{BLOCK_ID}">{html_safe_json(data)}</script>\n'
    at = page.find("<script")
    if at < 0:
        at = page.rfind("</body>")
    return page[:at] + block + page[at:] if at >= 0 else page + block


def page_data(ui: dict[str, object], snapshot: Snapshot, only: str | None) -> str:
    """The block's JSON: ``{"ui": <GET /api/v1/ui>, "snapshot": <snapshot event>}`` with
    ``only``'s report, or (None: the cluster page) the summary alone."""
    if only is None:
        event = (
            f'{{"seq":{snapshot.seq},"generated_at":{snapshot.generated_at!r},'
            f'"summary":{snapshot.summary_json},"topologies":{{}}}}'
        )
    else:
        event = snapshot.event_data(only)
    return f'{{"ui":{encode(ui)},"snapshot":{event}}}'


def _topology_param(request: Request, parameter: str) -> str | None:
    """The checked topology name of a request (``parameter`` in its query), or None."""
    query = params.query_params(request.query_params.multi_items(), (parameter,))
    only = query.get(parameter)
    return None if only is None else params.name(only, parameter=parameter)


async def snapshot(request: Request) -> Response:
    """``GET /api/v1/snapshot?topology=NAME``: the latest snapshot event's JSON."""
    only = _topology_param(request, "topology")
    return JSON((await latest(context(request))).event_data(only))


async def page(request: Request) -> Response:
    """A page of :data:`PAGES` with the latest snapshot inside (see the module
    docstring).  A topology page whose ``name`` is missing or breaks the name rule is
    served as it is: the page itself says what is wrong."""
    ctx = context(request)
    text = (_STATIC / PAGES[request.url.path]).read_text(encoding="utf-8")
    only: str | None = None
    served = True
    if request.url.path == "/topology.html":
        only = request.query_params.get("name")
        served = bool(only) and name_problem("topology", only) is None
    current = await ctx.hub.current(FIRST_PAINT_WAIT_SECS) if served else None
    if current is not None:
        text = with_block(text, page_data(ui_info(ctx), current, only))
    return HTMLResponse(text, headers={"Cache-Control": "no-store"})
