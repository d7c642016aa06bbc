"""``GET /api/v1/openapi.json``: the REST API described as OpenAPI 3.1 (hand-written, pure).

Shapes are given as far as clients rely on them; the topology report's fields are those of
docs/STATUS.md (schema 1), which adds keys only with a new schema number.
"""

from __future__ import annotations

from typing import Any

from topology.config import MAX_WORKERS
from topology.runtime.worker_log import LEVELS, MAX_CHUNK_BYTES

from .actions import ACTIONS
from .auth import CSRF_HEADER
from .series import FIELDS as SERIES_FIELDS

_JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _param(
    name: str, where: str, schema: dict[str, Any], text: str, required: bool = False
) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": schema, "description": text}


_NAME = _param(
    "name",
    "path",
    {"type": "string", "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"},
    "The topology's name.",
    True,
)
_WINDOW = _param(
    "window",
    "query",
    {"type": "string", "enum": ["10m", "3h", "1d", "all"], "default": "10m"},
    "The statistics window.",
)
_ERRORS = {
    status: {"description": text, "content": {_JSON: {"schema": _ref("Error")}}}
    for status, text in (
        ("400", "A bad parameter (named in the body)."),
        ("401", "No or a wrong admin token."),
        ("403", "Actions disabled, or no or a wrong CSRF token."),
        ("404", "No such topology, component, worker or path."),
        ("409", "The cluster refused the action (its message)."),
        ("413", "A request body over 64 KiB."),
        ("415", "A request body not sent as Content-Type: application/json."),
        ("503", "The cluster did not answer in time, or the server is busy."),
    )
}


def _get(
    summary: str, schema: dict[str, Any], parameters: list[dict[str, Any]], media: str = _JSON
) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": parameters,
            "responses": {
                "200": {"description": "OK", "content": {media: {"schema": schema}}},
                **_ERRORS,
            },
        }
    }


def _post(action: str, names: tuple[str, ...]) -> dict[str, Any]:
    props: dict[str, Any] = {
        "wait_secs": {"type": "number", "minimum": 0, "maximum": 86400},
        "workers": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS},
        "level": {"type": "string", "enum": list(LEVELS)},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
        "components": {
            "description": "New task counts (`sparkstorm rebalance -e`): an object, or "
            "`component=count,...` text; with it, `workers` may be left out.",
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": {"type": "integer", "minimum": 1},
                    "maxProperties": 1000,
                },
                {"type": "string"},
            ],
        },
    }
    body = {
        "type": "object",
        "properties": {k: props[k] for k in names},
        "additionalProperties": False,
    }
    return {
        "post": {
            "summary": f"{action} the topology (as `sparkstorm {action}`)",
            "security": [{"admin": []}],
            "parameters": [
                _NAME,
                _param(
                    CSRF_HEADER,
                    "header",
                    {"type": "string"},
                    "From GET /api/v1/csrf, with its cookie.",
                    True,
                ),
            ],
            "requestBody": {"required": False, "content": {_JSON: {"schema": body}}},
            "responses": {
                "200": {
                    "description": "Done",
                    "content": {_JSON: {"schema": _ref("ActionResult")}},
                },
                **_ERRORS,
            },
        }
    }


_SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error", "message", "parameter"],
        "properties": {
            "error": {"type": "string"},
            "message": {"type": "string"},
            "parameter": {"type": ["string", "null"]},
        },
    },
    "TopologyRow": {
        "type": "object",
        "properties": {
            k: {"type": t}
            for k, t in (
                ("id", ["string", "null"]),
                ("name", "string"),
                ("status", ["string", "null"]),
                ("uptime_secs", ["number", "null"]),
                ("workers", ["integer", "null"]),
                ("workers_alive", ["integer", "null"]),
                ("tasks", ["integer", "null"]),
                ("emitted_per_sec", "number"),
                ("acked_per_sec", "number"),
                ("failed_per_sec", "number"),
                ("emitted", "integer"),
                ("acked", "integer"),
                ("failed", "integer"),
                ("window", ["integer", "null"]),
                ("max_capacity", ["number", "null"]),
                ("error", ["string", "null"]),
            )
        },
    },
    "ClusterSummary": {
        "type": "object",
        "properties": {
            "seq": {"type": "integer"},
            "generated_at": {"type": "number"},
            "publish_interval_secs": {"type": "number"},
            "nimbus": {"type": ["object", "null"]},
            "error": {"type": ["string", "null"]},
            "topologies": {"type": "array", "items": _ref("TopologyRow")},
            "totals": {"type": "object"},
        },
    },
    "Graph": {
        "type": "object",
        "properties": {
            "components": {"type": "array", "items": {"type": "object"}},
            "edges": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string"},
                        "to": {"type": "string"},
                        "stream": {"type": "string"},
                        "grouping": {"type": "string"},
                        "fields": {"type": "array", "items": {"type": "string"}},
                        "tuples_per_sec": {"type": "number"},
                        "backpressured": {"type": "boolean"},
                    },
                },
            },
        },
    },
    "TopologyReport": {
        "description": "docs/STATUS.md schema 1, with graph, rates and the redacted conf",
        "type": "object",
        "properties": {
            "schema": {"type": "integer"},
            "window": {"type": "string"},
            "window_name": {"type": "string"},
            "topology": {"type": "object"},
            "spouts": {"type": "array"},
            "bolts": {"type": "array"},
            "workers": {"type": "array"},
            "errors": {"type": "array"},
            "graph": _ref("Graph"),
            "rates": {"type": ["object", "null"]},
            "conf": {"type": "object"},
        },
    },
    "Series": {
        "description": "Columns: every list as long as times; null where no figure",
        "type": "object",
        "properties": {
            "topology": {"type": "string"},
            "window": {"type": "string", "enum": ["10m", "3h", "1d"]},
            "step_secs": {"type": "number"},
            "span_secs": {"type": "number"},
            "points_max": {"type": "integer"},
            "fields": {"type": "array", "items": {"type": "string", "enum": list(SERIES_FIELDS)}},
            "times": {"type": "array", "items": {"type": "number"}},
            "components": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": ["string", "null"]},
                        **{
                            f: {"type": "array", "items": {"type": ["number", "null"]}}
                            for f in SERIES_FIELDS
                        },
                    },
                },
            },
            "source": {"type": "string", "enum": ["ring", "prometheus"]},
            "source_error": {"type": "string"},
            "generated_at": {"type": "number"},
        },
    },
    "ActionResult": {
        "type": "object",
        "properties": {
            "topology": {"type": "string"},
            "action": {"type": "string"},
            "status": {"const": "success"},
        },
    },
}


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API."""
    obj = {"type": "object"}
    paths: dict[str, Any] = {
        "/api/v1/cluster/summary": _get(
            "Nimbuses, totals, every topology", _ref("ClusterSummary"), []
        ),
        "/api/v1/topology/summary": _get("Every topology's summary row", obj, []),
        "/api/v1/topology/{name}": _get(
            "The status report, graph and conf", _ref("TopologyReport"), [_NAME, _WINDOW]
        ),
        "/api/v1/topology/{name}/graph.svg": _get(
            "The graph drawn as SVG", {"type": "string"}, [_NAME, _WINDOW], "image/svg+xml"
        ),
        "/api/v1/topology/{name}/component/{component}": _get(
            "One component's tasks, streams and errors",
            obj,
            [
                _NAME,
                _param("component", "path", {"type": "string"}, "The component id.", True),
                _WINDOW,
            ],
        ),
        "/api/v1/topology/{name}/series": _get(
            "Per-component time-series over a window (docs/UI.md, Charts)",
            _ref("Series"),
            _series_params(),
        ),
        "/api/v1/topology/{name}/logs": _get("Each worker's log chunk", obj, _log_params(True)),
        "/api/v1/topology/{name}/logs/download": _get(
            "The logs as a file", {"type": "string"}, _log_params(False), "text/plain"
        ),
        "/api/v1/topology/{name}/savepoints": _get(
            "The savepoints taken, from the topology's savepoint directory", obj, [_NAME]
        ),
        "/api/v1/events": _get(
            "Server-sent events: one snapshot per publish interval",
            {"type": "string"},
            [_param("topology", "query", {"type": "string"}, "Only this topology's report.")],
            "text/event-stream",
        ),
        "/api/v1/csrf": _get("A CSRF token (also set as a cookie)", obj, []),
        "/api/v1/ui": _get("This server: publish interval, actions, clients, connections", obj, []),
        "/api/v1/openapi.json": _get("This document", obj, []),
        "/api/v1/snapshot": _get(
            "The latest snapshot: what the event stream's snapshot event carries",
            obj,
            [_param("topology", "query", {"type": "string"}, "Only this topology's report.")],
        ),
    }
    for action, (_, names) in ACTIONS.items():
        paths[f"/api/v1/topology/{{name}}/{action}"] = _post(action, names)
    return {
        "openapi": "3.1.0",
        "info": {"title": "sparkstorm UI API", "version": "1", "description": "See docs/UI.md."},
        "paths": paths,
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {"admin": {"type": "http", "scheme": "bearer"}},
        },
    }


def _series_params() -> list[dict[str, Any]]:
    return [
        _NAME,
        _param(
            "window",
            "query",
            {"type": "string", "enum": ["10m", "3h", "1d"], "default": "10m"},
            "The window: 300 points of 2 s, 36 s or 288 s.",
        ),
        _param("component", "query", {"type": "string"}, "Only this component's series."),
        _param(
            "source",
            "query",
            {"type": "string", "enum": ["ring", "prometheus"]},
            "The UI's ring, or Prometheus (ui.prometheus.url); default: Prometheus when "
            "configured, the ring when it does not answer.",
        ),
    ]


def _log_params(paging: bool) -> list[dict[str, Any]]:
    out = [
        _NAME,
        _param(
            "worker",
            "query",
            {"type": "integer", "minimum": 0, "maximum": MAX_WORKERS - 1},
            "Only this worker.",
        ),
        _param(
            "bytes",
            "query",
            {"type": "integer", "minimum": 1, "maximum": MAX_CHUNK_BYTES},
            "How much of each log's end.",
        ),
        _param("component", "query", {"type": "string"}, "Only lines this component's code wrote."),
    ]
    if paging:
        out += [
            _param(
                "offset",
                "query",
                {"type": "integer", "minimum": 0},
                "Continue the worker's log here (a chunk's offset).",
            ),
            _param(
                "file",
                "query",
                {"type": "integer", "minimum": 0},
                "The chunk's file_id (detects rotation).",
            ),
        ]
    return out
