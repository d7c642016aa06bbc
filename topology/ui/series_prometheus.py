"""A topology's series read from Prometheus (``ui.prometheus.url``), in the shape of
:meth:`topology.ui.series.TopologySeries.series`.

One range query (``/api/v1/query_range``) over the window, at the window's step, asks for
every field at once: each field's PromQL expression (:func:`expressions`, over the
metrics of docs/METRICS.md) tagged with a ``field`` label and joined with ``or``.  Rates
are taken over :func:`rate_range` (at least a minute, so a few scrapes fall in it), and
``max without (instance)`` counts each series once when several nimbuses serve it
(docs/METRICS.md).

What Prometheus answers is checked as hostile input: its size (:data:`MAX_BODY_BYTES`),
its shape, the number of series and points, finite numbers.  Any failure raises
:class:`~topology.ui.params.BadRequest` (503) saying what went wrong.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .params import BadRequest
from .series import FIELDS, MAX_COMPONENTS, POINTS, SPANS, STEPS

#: Seconds one range query may take.
QUERY_TIMEOUT_SECS = 4.0
#: Largest answer read from Prometheus.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: The percentiles, as :data:`topology.ui.series.PERCENTILES`.
_QUANTILES = {"latency_p50_ms": 0.5, "latency_p95_ms": 0.95, "latency_p99_ms": 0.99}


def rate_range(step: float) -> int:
    """Seconds a ``rate()`` of a window with ``step`` looks back: two steps, at least 60."""
    return max(60, math.ceil(2 * step))


def _label(value: str) -> str:
    """``value`` as a PromQL string literal."""
    return json.dumps(value)


def expressions(topology: str, component: str | None, step: float) -> dict[str, str]:
    """Field -> the PromQL expression of its per-component series."""
    match = f"topology={_label(topology)}"
    if component is not None:
        match += f",component={_label(component)}"
    r = f"[{rate_range(step)}s]"

    def one(expr: str) -> str:  # every nimbus serves the same series: count one of them
        return f"max without (instance) ({expr})"

    def rate(metric: str) -> str:
        return f"sum by (component) ({one(f'rate({metric}{{{match}}}{r})')})"

    def quantile(q: float) -> str:
        parts = [
            f"histogram_quantile({q}, sum by (component, le) "
            f"({one(f'rate({m}_bucket{{{match}}}{r})')}))"
            for m in ("sparkstorm_complete_latency_seconds", "sparkstorm_execute_latency_seconds")
        ]
        return f"1000 * ({parts[0]} or {parts[1]})"

    def mean(metric: str) -> str:
        return f"avg by (component) ({one(f'rate({metric}{{{match}}}{r})')})"

    def gauge(metric: str) -> str:
        return f"sum by (component) ({one(f'{metric}{{{match}}}')})"

    out = {
        "emitted_per_sec": rate("sparkstorm_emitted_total"),
        "acked_per_sec": rate("sparkstorm_acked_total"),
        "executed_per_sec": rate("sparkstorm_executed_total"),
        "failed_per_sec": rate("sparkstorm_failed_total"),
        **{field: quantile(q) for field, q in _QUANTILES.items()},
        "queue": f"{gauge('sparkstorm_pending')} or {gauge('sparkstorm_queued')}",
        "backpressured": mean("sparkstorm_backpressured_seconds_total"),
        "busy": mean("sparkstorm_busy_seconds_total"),
    }
    assert list(out) == list(FIELDS)
    return out


def query(topology: str, component: str | None, step: float) -> str:
    """Every field's expression, each tagged with its ``field`` label, in one query."""
    return " or ".join(
        f'label_replace({expr}, "field", "{field}", "", "")'
        for field, expr in expressions(topology, component, step).items()
    )


def _get(url: str, params: dict[str, str]) -> Any:
    address = f"{url.rstrip('/')}/api/v1/query_range?{urllib.parse.urlencode(params)}"
    request = urllib.request.Request(address, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=QUERY_TIMEOUT_SECS) as response:
            body = response.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode(errors="replace")
        message = f"Prometheus at {url} answered {exc.code}: {detail:.300}"
        raise BadRequest(message, None, 503) from None
    except (OSError, ValueError) as exc:
        raise BadRequest(f"Prometheus at {url} did not answer: {exc}", None, 503) from None
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(f"Prometheus at {url}: an answer over {MAX_BODY_BYTES:,} bytes", None, 503)
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise BadRequest(f"Prometheus at {url}: an answer that is not JSON", None, 503) from None


def query_series(
    url: str,
    topology: str,
    window: str,
    component: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The series of ``topology`` over ``window`` (a key of :data:`STEPS`) from the
    Prometheus server at ``url``, with ``"source": "prometheus"``."""
    step = STEPS[window]
    end = time.time() if now is None else now
    start = end - SPANS[window]
    answer = _get(
        url,
        {
            "query": query(topology, component, step),
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
        },
    )
    data = answer.get("data") if isinstance(answer, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if answer.get("status") != "success" or not isinstance(result, list):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise BadRequest(f"Prometheus at {url}: the query failed ({error!s:.300})", None, 503)
    if len(result) > MAX_COMPONENTS * len(FIELDS):
        raise BadRequest(f"Prometheus at {url}: too many series", None, 503)
    found: dict[tuple[str, str], dict[float, float]] = {}
    for series in result:
        labels = series.get("metric") if isinstance(series, dict) else None
        values = series.get("values") if isinstance(series, dict) else None
        if not (isinstance(labels, dict) and isinstance(values, list)):
            continue
        name, field = labels.get("component"), labels.get("field")
        if not isinstance(name, str) or field not in FIELDS:
            continue
        points = found.setdefault((name, field), {})
        for pair in values[: POINTS + 1]:
            if isinstance(pair, list) and len(pair) == 2:
                at, value = _finite(pair[0]), _finite(pair[1])
                if at is not None:
                    points[round(at, 3)] = value if value is not None else math.nan
    times = sorted({t for points in found.values() for t in points})[-(POINTS + 1) :]
    columns: dict[str, Any] = {}
    for name in sorted({n for n, _ in found}):
        column: dict[str, Any] = {}
        for field in FIELDS:
            points = found.get((name, field), {})
            column[field] = [_shown(points.get(t)) for t in times]
        columns[name] = column
    return {
        "topology": topology,
        "window": window,
        "step_secs": step,
        "span_secs": SPANS[window],
        "points_max": POINTS + 1,
        "fields": list(FIELDS),
        "times": times,
        "components": columns,
        "source": "prometheus",
    }


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _shown(value: float | None) -> float | None:
    if value is None or math.isnan(value):
        return None
    return float(f"{value:.6g}")
