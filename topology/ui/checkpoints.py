"""``GET /api/v1/topology/{name}/savepoints``: the savepoints taken of a topology.

Savepoints are self-describing directories (:mod:`topology.state.savepoint`); those of a
topology are listed from its ``topology.state.savepoints.dir`` (where ``sparkstorm
savepoint NAME`` writes them when no ``--dir`` is given), newest first, each read as
hostile input.  The listing runs on a read thread, like every call to the cluster.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from topology import config as cfg
from topology.redaction import redact
from topology.state.savepoint import SavepointError, list_savepoints

from . import params
from .context import JSON, call, context, known


def _listing(directory: str, name: str) -> dict[str, Any]:
    try:
        return {"savepoints": list_savepoints(directory, name), "error": None}
    except SavepointError as exc:
        return {"savepoints": [], "error": str(exc)[:300]}


async def savepoints(request: Request) -> Response:
    """``{"topology", "directory", "savepoints": [{"path", "created_at", "checkpoint",
    "topology_id", "entries", "bytes"} | {"path", "error"}], "error"}``: the newest 20 in
    the topology's savepoint directory (``directory`` null: it has none configured)."""
    params.query_params(request.query_params.multi_items(), ())
    name = params.name(request.path_params["name"])
    ctx = context(request)
    await known(ctx, name)
    conf = (await call(ctx.reads, 503, ctx.view.describe, name))["conf"]
    directory = conf.get(cfg.SAVEPOINTS_DIR)
    if not isinstance(directory, str) or not directory:
        return JSON({"topology": name, "directory": None, "savepoints": [], "error": None})
    listing = await call(ctx.reads, 503, _listing, directory, name)
    # shown as the conf is (redacted when a redaction pattern names its key), paths too
    shown = str(
        redact({cfg.SAVEPOINTS_DIR: directory}, ctx.settings.redact_patterns)[cfg.SAVEPOINTS_DIR]
    )
    rows = [
        {**r, "path": str(r["path"]).replace(directory, shown, 1)} for r in listing["savepoints"]
    ]
    return JSON({"topology": name, "directory": shown, **listing, "savepoints": rows})
