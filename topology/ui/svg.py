"""Draw a topology as a self-contained SVG: the web UI's graph and ``visualize --format svg``.

:func:`render_svg` takes the component summary that :func:`topology.spec.describe_components`
builds (a running topology's ``record["components"]``)::

    {component: {"kind": "spout" | "bolt", "tasks": int, "streams": {...},
                 "inputs": [{"component", "stream", "grouping", "fields"?}, ...]}}

plus, optionally, tuple rates per edge (keyed ``(source, stream, target)``) and a capacity
per bolt (0..1, the busiest task's share of time spent executing).  The layout is
:mod:`topology.ui.svg_layout`'s: left to right, spouts first, each component in the column
of its longest path from a spout.  A bolt with a capacity is coloured by it
(:func:`capacity_level`: green below 0.5, amber below 0.8, red from 0.8 — the bottleneck);
edges carry arrowheads and their grouping and rate; a backpressured edge (its target's
queue is full) is drawn thick and red, with the class ``backpressured``.

Contracts: pure (no I/O, no clock); the same arguments give the same text; all text is
escaped (characters XML 1.0 cannot hold become U+FFFD).  Nodes carry ``data-component`` /
``data-kind`` and a ``cap-<level>`` class, edges ``data-source`` / ``data-stream`` /
``data-target`` and a ``text.rate``, so a page can update rates and colours in place.
Only the standard library and ``topology`` core modules are imported (``cli`` uses it).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from topology.constants import DEFAULT_STREAM

from .svg_layout import (
    DETAIL_PX,
    LABEL_PX,
    MARGIN,
    NAME_PX,
    Arrow,
    Box,
    Components,
    EdgeKey,
    Layout,
    box_lines,
    layout,
    shorten,
    text_width,
)

#: An edge's (stroke, width): normal, and backpressured (frames wait for its target).
EDGE_STROKE = {False: ("#475569", 1.4), True: ("#dc2626", 3.5)}

#: (fill, stroke) per level: spouts, bolts by capacity, bolts without one, missing sources.
PALETTE = {
    "spout": ("#dbeafe", "#2563eb"),
    "low": ("#dcfce7", "#16a34a"),
    "medium": ("#fef3c7", "#d97706"),
    "high": ("#fee2e2", "#dc2626"),
    "unknown": ("#f1f5f9", "#64748b"),
    "missing": ("#ffffff", "#94a3b8"),
}

_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
_TITLE_H = 28
_INVALID_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
Point = tuple[float, float]


def capacity_level(capacity: float | None) -> str:
    """``low`` (< 0.5), ``medium`` (< 0.8), ``high`` (>= 0.8), or ``unknown`` for None."""
    if capacity is None:
        return "unknown"
    if capacity < 0.5:
        return "low"
    return "medium" if capacity < 0.8 else "high"


def format_rate(rate: float) -> str:
    """A tuple rate for a label: ``0/s``, ``12.5/s``, ``950/s``, ``12.3k/s``, ``4.1M/s``."""
    if rate >= 1e6:
        return f"{rate / 1e6:.1f}M/s"
    if rate >= 1e4:
        return f"{rate / 1e3:.1f}k/s"
    if rate >= 100 or rate == int(rate):
        return f"{rate:,.0f}/s"
    return f"{rate:.1f}/s"


def _clean(text: object) -> str:
    return _INVALID_XML.sub("\ufffd", str(text))


def _text(text: object) -> str:
    return escape(_clean(text))


def _attr(text: object) -> str:
    return quoteattr(_clean(text))


def _chain_points(lay: Layout) -> dict[int, list[Point]]:
    """Each forward edge's points: its source port, waypoint ends, its target port.

    Ports spread the edges leaving (entering) a box down its right (left) side, ordered by
    the height of the next (previous) point so that they do not cross at the box."""
    boxes = lay.boxes
    inner: dict[int, list[Point]] = {}
    for i, e in enumerate(lay.edges):
        s, t = boxes[e.source], boxes[e.target]
        if e.source != e.target and t.x > s.x:
            inner[i] = [p for x0, x1, y in lay.waypoints.get(i, []) for p in ((x0, y), (x1, y))]
    centre = {n: b.y + b.height / 2 for n, b in boxes.items()}
    starts: dict[str, list[tuple[float, int]]] = {}
    ends: dict[str, list[tuple[float, int]]] = {}
    for i, pts in inner.items():
        e = lay.edges[i]
        starts.setdefault(e.source, []).append((pts[0][1] if pts else centre[e.target], i))
        ends.setdefault(e.target, []).append((pts[-1][1] if pts else centre[e.source], i))
    port: dict[tuple[int, int], float] = {}
    for side, groups in ((0, starts), (1, ends)):
        for name, group in groups.items():
            b = boxes[name]
            for k, (_, i) in enumerate(sorted(group)):
                port[(i, side)] = b.y + b.height * (k + 1) / (len(group) + 1)
    out: dict[int, list[Point]] = {}
    for i, pts in inner.items():
        s, t = boxes[lay.edges[i].source], boxes[lay.edges[i].target]
        out[i] = [(s.x + s.width, port[(i, 0)]), *pts, (t.x, port[(i, 1)])]
    return out


def _curve(points: list[Point]) -> str:
    """A path through ``points``: curves with level tangents between columns, straight
    runs across the columns an edge crosses (pairs of waypoint ends)."""
    (x, y), d = points[0], [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
    for k, (nx, ny) in enumerate(points[1:], start=1):
        if k % 2 == 0:  # across a crossed column
            d.append(f"L{nx:.1f},{ny:.1f}")
        else:
            dx = max((nx - x) / 2, 10)
            d.append(f"C{x + dx:.1f},{y:.1f} {nx - dx:.1f},{ny:.1f} {nx:.1f},{ny:.1f}")
        x, y = nx, ny
    return " ".join(d)


def _loop(e: Arrow, s: Box, t: Box, depth: float | None) -> tuple[str, Point]:
    """A self-subscription's loop above its box, or a back edge's detour under every box;
    and where its label goes (the label's centre)."""
    if depth is None:
        x0, x1, top = s.x + s.width * 0.3, s.x + s.width * 0.55, s.y - 22
        d = f"M{x0:.1f},{s.y:.1f} C{x0:.1f},{top:.1f} {x1:.1f},{top:.1f} {x1:.1f},{s.y:.1f}"
        return d, (x1 + 6 + text_width(e.label, LABEL_PX) / 2, s.y - 16)
    sx, tx = s.x + s.width / 2, t.x + t.width / 2
    d = (
        f"M{sx:.1f},{s.y + s.height:.1f} C{sx:.1f},{depth:.1f} {sx:.1f},{depth:.1f} "
        f"{sx - 12:.1f},{depth:.1f} L{tx + 12:.1f},{depth:.1f} "
        f"C{tx:.1f},{depth:.1f} {tx:.1f},{depth:.1f} {tx:.1f},{t.y + t.height:.1f}"
    )
    return d, ((sx + tx) / 2, depth)


def _label_size(e: Arrow, rate: float | None, tall: bool) -> tuple[float, float]:
    rate_text = format_rate(rate) if rate is not None else ""
    width = max(text_width(e.label, LABEL_PX), text_width(rate_text, LABEL_PX)) + 8
    return width, 26.0 if tall else 14.0


def _edge_geometry(
    lay: Layout, rates: Mapping[EdgeKey, float | None] | None
) -> dict[int, list[Any]]:
    """``[d, label centre x, label centre y]`` per edge; labels of edges leaving the same
    column are pushed down so that none overlaps another."""
    chains = _chain_points(lay)
    out: dict[int, list[Any]] = {}
    by_gap: dict[int, list[int]] = {}
    for i, e in enumerate(lay.edges):
        if i in chains:
            (x0, y0), (x1, y1) = chains[i][0], chains[i][1]
            out[i] = [_curve(chains[i]), (x0 + x1) / 2, (y0 + y1) / 2]
            by_gap.setdefault(lay.boxes[e.source].column, []).append(i)
        else:
            s, t = lay.boxes[e.source], lay.boxes[e.target]
            d, (lx, ly) = _loop(e, s, t, lay.below.get(i))
            out[i] = [d, lx, ly]
    for group in by_gap.values():
        group.sort(key=lambda i: (out[i][2], i))
        floor = float("-inf")
        for i in group:
            h = _label_size(lay.edges[i], None, rates is not None)[1]
            out[i][2] = max(out[i][2], floor + h / 2 + 2)
            floor = out[i][2] + h / 2
    return out


def _edge_svg(
    i: int, e: Arrow, geometry: list[Any], rate: float | None, tall: bool, pressed: bool = False
) -> list[str]:
    d, lx, ly = geometry
    w, h = _label_size(e, rate, tall)
    rate_text = format_rate(rate) if rate is not None else ""
    attrs = (
        f'id="e{i}" class="edge{" backpressured" if pressed else ""}" '
        f"data-source={_attr(e.source)} "
        f"data-stream={_attr(e.stream)} data-target={_attr(e.target)}"
    )
    title = f"{e.source}:{e.stream} -> {e.target} ({e.label})"
    stroke, width = EDGE_STROKE[pressed]
    return [
        f"<g {attrs}>",
        f"<title>{_text(title + (': backpressured' if pressed else ''))}</title>",
        f'<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{width}" '
        f'marker-end="url(#ss-arrow)"/>',
        f'<rect x="{lx - w / 2:.1f}" y="{ly - h / 2:.1f}" width="{w:.1f}" height="{h:.0f}" '
        f'rx="3" fill="#ffffff" fill-opacity="0.85"/>',
        f'<text x="{lx:.1f}" y="{ly - h / 2 + 11:.1f}" text-anchor="middle" '
        f'font-size="{LABEL_PX}" fill="#334155">{_text(e.label)}</text>',
        f'<text class="rate" x="{lx:.1f}" y="{ly - h / 2 + 23:.1f}" text-anchor="middle" '
        f'font-size="{LABEL_PX}" font-weight="bold" fill="#0f172a">{_text(rate_text)}</text>',
        "</g>",
    ]


def _node_svg(
    i: int, box: Box, info: Mapping[str, Any] | None, cap: float | None, with_capacity: bool
) -> list[str]:
    level = box.kind if box.kind != "bolt" else capacity_level(cap)
    fill, stroke = PALETTE[level]
    cx = box.x + box.width / 2
    dash = ' stroke-dasharray="4 3"' if box.kind == "missing" else ""
    out = [
        f'<g id="n{i}" class="node {box.kind} cap-{level}" '
        f"data-component={_attr(box.component)} data-kind={_attr(box.kind)}>",
        f"<title>{_text(box.component)}</title>",
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="{14 if box.kind == "spout" else 4}" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{2.5 if level == "high" else 1.5}"{dash}/>',
        f'<text x="{cx:.1f}" y="{box.y + 18:.1f}" text-anchor="middle" '
        f'font-size="{NAME_PX}" font-weight="bold" fill="#0f172a">'
        f"{_text(shorten(box.component))}</text>",
    ]
    for k, line in enumerate(box_lines(info, cap, with_capacity)):
        cls = ' class="capacity"' if line.startswith("capacity") else ""
        out.append(
            f'<text{cls} x="{cx:.1f}" y="{box.y + 34 + 13 * k:.1f}" text-anchor="middle" '
            f'font-size="{DETAIL_PX}" fill="#334155">{_text(line)}</text>'
        )
    out.append("</g>")
    return out


def render_svg(
    components: Components,
    *,
    rates: Mapping[EdgeKey, float | None] | None = None,
    capacity: Mapping[str, float | None] | None = None,
    title: str | None = None,
    backpressured: Collection[EdgeKey] = (),
) -> str:
    """The whole drawing as an SVG document (a string ending in a newline).

    ``rates`` maps ``(source, stream, target)`` to tuples per second (an edge without one
    shows no rate; with ``rates`` None, labels have no room for one); ``capacity`` maps a
    bolt to its capacity (a bolt without one is grey and reads ``capacity –``; with
    ``capacity`` None, boxes have no capacity line); ``title`` goes above the graph;
    ``backpressured`` holds the edges drawn as backpressured."""
    lay = layout(components, capacity)
    geometry = _edge_geometry(lay, rates)
    top = _TITLE_H if title else 0
    w, h = lay.width, lay.height + top
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sparkstorm-graph" width="{w:.0f}" '
        f'height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}" font-family="{_FONT}">',
        '<defs><marker id="ss-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#475569"/></marker></defs>',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ]
    if title:
        out.append(
            f'<text x="{MARGIN}" y="20" font-size="15" font-weight="bold" '
            f'fill="#0f172a">{_text(title)}</text>'
        )
    out.append(f'<g transform="translate(0,{top})">')
    for i, e in enumerate(lay.edges):
        rate = rates.get(e.key) if rates is not None else None
        out += _edge_svg(i, e, geometry[i], rate, rates is not None, e.key in backpressured)
    for i, (name, box) in enumerate(lay.boxes.items()):
        cap = capacity.get(name) if capacity is not None else None
        out += _node_svg(i, box, components.get(name), cap, capacity is not None)
    out += ["</g>", "</svg>"]
    return "\n".join(out) + "\n"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _as_components(graph: Mapping[str, Any]) -> dict[str, Any]:
    """The graph as a describe_components dict: ``components`` given as that dict, or as a
    list of nodes (``{"id", "kind", "tasks", ...}``) whose inputs are the ``edges``
    (``{"from", "to", "stream", "grouping", "fields"}``, or ``source`` / ``target``)."""
    given = graph.get("components")
    if isinstance(given, Mapping):
        return {str(k): v for k, v in given.items()}
    if not isinstance(given, list):
        return {str(k): v for k, v in graph.items() if isinstance(v, Mapping) and "kind" in v}
    out: dict[str, Any] = {}
    for node in given:
        if isinstance(node, Mapping) and node.get("id") is not None:
            out[str(node["id"])] = {**node, "inputs": []}
    for e in graph.get("edges") or []:
        if not isinstance(e, Mapping):
            continue
        target = out.get(str(e.get("to", e.get("target"))))
        if target is not None:
            target["inputs"].append(
                {
                    "component": str(e.get("from", e.get("source"))),
                    "stream": str(e.get("stream") or DEFAULT_STREAM),
                    "grouping": e.get("grouping"),
                    "fields": list(e.get("fields") or []),
                }
            )
    return out


def graph_svg(graph: Mapping[str, Any], title: str | None = None) -> str:
    """:func:`render_svg` of the web API's ``graph`` object (:mod:`topology.ui.graph`),
    read leniently (:func:`_as_components`); an edge's rate is its ``tuples_per_sec`` (or
    ``rate``), a bolt's capacity its node's ``capacity`` (or ``graph["capacity"][bolt]``),
    an edge with ``"backpressured": true`` is drawn so."""
    components = _as_components(graph)
    rates: dict[EdgeKey, float | None] = {}
    pressed: set[EdgeKey] = set()
    for e in graph.get("edges") or []:
        if isinstance(e, Mapping):
            source, target = e.get("from", e.get("source")), e.get("to", e.get("target"))
            key = (str(source), str(e.get("stream") or DEFAULT_STREAM), str(target))
            rates[key] = _number(e.get("tuples_per_sec", e.get("rate")))
            if e.get("backpressured") is True:
                pressed.add(key)
    given = graph.get("capacity")
    capacity = {
        name: _number(given.get(name) if isinstance(given, Mapping) else info.get("capacity"))
        for name, info in components.items()
    }
    return render_svg(
        components, rates=rates, capacity=capacity, title=title, backpressured=pressed
    )


__all__ = ["PALETTE", "capacity_level", "format_rate", "graph_svg", "render_svg"]
