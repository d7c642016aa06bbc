"""Where :mod:`topology.ui.svg` puts each box and edge: a layered, left-to-right layout.

Columns: a spout is in column 0, every other component in the column of the longest path
to it over forward edges (edges closing a cycle, found by the topological order of
:func:`order`, which ``cli.drawing`` draws with too, are drawn but not counted).  An edge
spanning several columns gets a waypoint in each column it crosses, which takes a slot
there like a small box, so no edge runs through a box.  Rows: a forward, a backward and a
forward sweep sort each column by the mean row of its neighbours in the previous (next)
column, ties by declaration order.

Contracts: pure and deterministic; boxes in one column are stacked with gaps and columns
are separated by gaps, so no two boxes overlap; every input of every component is an
:class:`Arrow` (a source named by an input but missing from the summary gets a box of kind
``missing``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topology.constants import DEFAULT_STREAM

Components = Mapping[str, Mapping[str, Any]]
EdgeKey = tuple[str, str, str]
Item = str | tuple[int, int]  # a component, or edge i's waypoint in column c

NAME_PX, DETAIL_PX, LABEL_PX = 13, 11, 10
BOX_H, V_GAP, MARGIN, TOP, PAD_X = 56, 28, 24, 34, 12
WAY_H, WAY_GAP = 14, 8
MIN_BOX_W, MIN_COL_GAP, MAX_NAME = 110, 70, 32
LOOP_STEP = 12


def text_width(text: str, px: float, bold: bool = False) -> float:
    """An estimate of ``text``'s width in pixels (wide East Asian characters count double)."""
    units = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    return units * px * (0.68 if bold else 0.62)


def shorten(text: str, limit: int = MAX_NAME) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (the full name goes in a title)."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Arrow:
    """One subscription: tuples of ``source``'s ``stream`` go to ``target``."""

    source: str
    stream: str
    target: str
    grouping: str
    fields: tuple[str, ...] = ()

    @property
    def key(self) -> EdgeKey:
        return (self.source, self.stream, self.target)

    @property
    def grouping_label(self) -> str:
        """``shuffle``, or ``fields[word]`` / ``partial_key[a, b]`` when key fields are known."""
        return f"{self.grouping}[{', '.join(self.fields)}]" if self.fields else self.grouping

    @property
    def label(self) -> str:
        """The grouping, prefixed ``stream:`` when the stream is not ``default``."""
        grouping = self.grouping_label
        return grouping if self.stream == DEFAULT_STREAM else f"{self.stream}: {grouping}"


@dataclass(frozen=True)
class Box:
    """A component's box: top-left corner, size, column and kind (spout, bolt, missing)."""

    component: str
    kind: str
    x: float
    y: float
    width: float
    height: float
    column: int


@dataclass
class Layout:
    """Boxes by component, edges in :func:`arrows` order, waypoints of the edges that cross
    columns (``(x_left, x_right, y)`` per crossed column), the back edges' depth below the
    boxes, and the drawing's size."""

    boxes: dict[str, Box]
    edges: list[Arrow]
    waypoints: dict[int, list[tuple[float, float, float]]] = field(default_factory=dict)
    below: dict[int, float] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


def arrows(components: Components) -> list[Arrow]:
    """Every subscription, in declaration order of the subscriber, then of its inputs."""
    return [
        Arrow(
            source=str(i.get("component")),
            stream=str(i.get("stream") or DEFAULT_STREAM),
            target=str(target),
            grouping=str(i.get("grouping") or "?"),
            fields=tuple(str(f) for f in i.get("fields") or ()),
        )
        for target, info in components.items()
        for i in info.get("inputs") or []
    ]


def kind_of(components: Components, name: str) -> str:
    """``spout``, ``bolt``, or ``missing`` (named by an input, not described)."""
    info = components.get(name)
    if info is None:
        return "missing"
    return "spout" if info.get("kind") == "spout" else "bolt"


def box_lines(
    info: Mapping[str, Any] | None, cap: float | None, with_capacity: bool = True
) -> list[str]:
    """The lines under a box's name: kind and tasks, then (``with_capacity``) a bolt's
    capacity, ``–`` when unknown."""
    if info is None:
        return ["not in the topology"]
    tasks = int(info.get("tasks") or 0)
    kind = "spout" if info.get("kind") == "spout" else "bolt"
    lines = [f"{kind} \u00d7 {tasks} task{'s' * (tasks != 1)}"]
    if kind == "bolt" and with_capacity:
        lines.append(f"capacity {cap:.3f}" if cap is not None else "capacity \u2013")
    return lines


def _nodes(components: Components, edges: list[Arrow]) -> list[str]:
    names = [str(c) for c in components]
    known = set(names)
    for e in edges:
        if e.source not in known:
            known.add(e.source)
            names.append(e.source)
    return names


def _topological(nodes: list[str], kinds: Mapping[str, str], edges: list[Arrow]) -> list[str]:
    preds: dict[str, set[str]] = {n: set() for n in nodes}
    for e in edges:
        if e.source != e.target:
            preds[e.target].add(e.source)
    placed = [n for n in nodes if kinds[n] != "bolt"]
    done = set(placed)
    remaining = [n for n in nodes if n not in done]
    while remaining:
        pick = next((n for n in remaining if preds[n] <= done), remaining[0])
        placed.append(pick)
        done.add(pick)
        remaining.remove(pick)
    return placed


def order(components: Components) -> list[str]:
    """Component ids in topological order: spouts first, then each bolt after everything it
    subscribes to; ties keep declaration order.  Components caught in a cycle (Storm allows
    bolt cycles) follow in declaration order, each as soon as it is the earliest left.
    Sources named by an input but not described are not listed."""
    edges = arrows(components)
    nodes = _nodes(components, edges)
    kinds = {n: kind_of(components, n) for n in nodes}
    return [n for n in _topological(nodes, kinds, edges) if n in components]


def columns(components: Components) -> dict[str, int]:
    """Each box's column: the longest forward path to it (spouts 0; bolts from column 1
    when the topology has a spout)."""
    edges = arrows(components)
    nodes = _nodes(components, edges)
    kinds = {n: kind_of(components, n) for n in nodes}
    topo = _topological(nodes, kinds, edges)
    pos = {n: i for i, n in enumerate(topo)}
    floor = 1 if any(kinds[n] != "bolt" for n in nodes) else 0
    col: dict[str, int] = {}
    for n in topo:
        sources = [col[e.source] for e in edges if e.target == n and pos[e.source] < pos[n]]
        col[n] = 0 if kinds[n] != "bolt" else max([floor, *(c + 1 for c in sources)])
    return col


def _chains(edges: list[Arrow], col: Mapping[str, int]) -> dict[int, list[Item]]:
    """Forward edges as their items column by column: source, waypoints, target."""
    out: dict[int, list[Item]] = {}
    for i, e in enumerate(edges):
        cs, ct = col[e.source], col[e.target]
        if ct > cs:
            out[i] = [e.source, *((i, c) for c in range(cs + 1, ct)), e.target]
    return out


def _sweep(layers: list[list[Item]], near: Mapping[Item, list[Item]], order: range) -> None:
    """Sort each layer in ``order`` by the mean row of its ``near`` items (already placed);
    an item with none keeps its row; ties keep the current order."""
    row: dict[Item, float] = {}
    for c in range(len(layers)):
        row.update({item: float(r) for r, item in enumerate(layers[c])})
    for c in order:
        layer = layers[c]

        def centre(item: Item, r: int) -> tuple[float, int]:
            ns = [row[n] for n in near.get(item, []) if n in row]
            return (sum(ns) / len(ns) if ns else float(r), r)

        keyed = sorted((centre(item, r), item) for r, item in enumerate(layer))
        layers[c] = [item for _, item in keyed]
        row.update({item: float(r) for r, item in enumerate(layers[c])})


def ordered_layers(components: Components) -> tuple[list[list[Item]], dict[int, list[Item]]]:
    """Items per column in row order, and each forward edge's chain of items."""
    edges = arrows(components)
    nodes = _nodes(components, edges)
    col = columns(components)
    chains = _chains(edges, col)
    count = max(col.values(), default=-1) + 1
    layers: list[list[Item]] = [[n for n in nodes if col[n] == c] for c in range(count)]
    for chain in chains.values():
        for item in chain[1:-1]:
            assert isinstance(item, tuple)
            layers[item[1]].append(item)
    prev: dict[Item, list[Item]] = {}
    succ: dict[Item, list[Item]] = {}
    for chain in chains.values():
        for a, b in zip(chain, chain[1:]):
            prev.setdefault(b, []).append(a)
            succ.setdefault(a, []).append(b)
    _sweep(layers, prev, range(1, count))
    _sweep(layers, succ, range(count - 2, -1, -1))
    _sweep(layers, prev, range(1, count))
    return layers, chains


def _column_widths(
    components: Components, layers: list[list[Item]], capacity: Mapping[str, float | None] | None
) -> list[float]:
    widths = []
    for layer in layers:
        w = float(MIN_BOX_W)
        for n in layer:
            if isinstance(n, str):
                cap = capacity.get(n) if capacity is not None else None
                lines = box_lines(components.get(n), cap, capacity is not None)
                w = max(w, text_width(shorten(n), NAME_PX, bold=True) + 2 * PAD_X)
                w = max(w, *(text_width(s, DETAIL_PX) + 2 * PAD_X for s in lines))
        widths.append(w)
    return widths


def _column_gaps(edges: list[Arrow], col: Mapping[str, int], count: int) -> list[float]:
    """The gap after each column: wide enough for the labels of edges leaving it."""
    gaps = [float(MIN_COL_GAP)] * max(count - 1, 0)
    for e in edges:
        c = col[e.source]
        if c < len(gaps) and col[e.target] > c:
            gaps[c] = max(gaps[c], text_width(e.label, LABEL_PX) + 40)
    return gaps


def _extent(layer: list[Item]) -> float:
    sizes = [BOX_H + V_GAP if isinstance(n, str) else WAY_H + WAY_GAP for n in layer]
    return sum(sizes) - (V_GAP if layer and isinstance(layer[-1], str) else WAY_GAP)


def layout(components: Components, capacity: Mapping[str, float | None] | None = None) -> Layout:
    """Every box, the waypoints of long edges, the back edges' depth, and the size (boxes
    leave room for a capacity line unless ``capacity`` is None)."""
    edges = arrows(components)
    col = columns(components)
    layers, chains = ordered_layers(components)
    widths = _column_widths(components, layers, capacity)
    gaps = _column_gaps(edges, col, len(layers))
    height = max((_extent(layer) for layer in layers), default=0.0)
    out = Layout(boxes={}, edges=edges)
    spots: dict[Item, tuple[float, float, float]] = {}
    x = float(MARGIN)
    for c, layer in enumerate(layers):
        y = TOP + (height - _extent(layer)) / 2
        for n in layer:
            if isinstance(n, str):
                box = Box(n, kind_of(components, n), x, y, widths[c], BOX_H, c)
                out.boxes[n] = box
                y += BOX_H + V_GAP
            else:
                spots[n] = (x, x + widths[c], y + WAY_H / 2)
                y += WAY_H + WAY_GAP
        x += widths[c] + (gaps[c] if c < len(gaps) else 0)
    for i, chain in chains.items():
        if len(chain) > 2:
            out.waypoints[i] = [spots[item] for item in chain[1:-1]]
    bottom = TOP + height
    back = [i for i, e in enumerate(edges) if e.source != e.target and i not in chains]
    for k, i in enumerate(back):
        out.below[i] = bottom + 22 + k * LOOP_STEP
    out.width = x + MARGIN
    out.height = bottom + MARGIN + 12 + (len(back) * LOOP_STEP + 22 if back else 0)
    return out


__all__ = [
    "Arrow",
    "Box",
    "Layout",
    "arrows",
    "box_lines",
    "columns",
    "kind_of",
    "layout",
    "ordered_layers",
    "shorten",
    "text_width",
]
