"""Draw a topology from its JSON component summary: plain text, rich, DOT, Mermaid, SVG.

Every function takes the summary that :func:`topology.spec.describe_components` builds
(and that ZooKeeper stores as a running topology's ``record["components"]``)::

    {component: {"kind": "spout" | "bolt", "tasks": int,
                 "streams": {stream: [field, ...]},
                 "inputs": [{"component", "stream", "grouping", "fields"?}, ...]}}

so a local ``FILE:ATTR`` and a running topology are drawn by the same code.  ``fields``
(the key of a ``fields`` / ``partial_key`` grouping) is optional in each input: without it
an input shows the grouping kind only.

Each also takes, for a running topology, its live ``graph`` (the web UI's,
:mod:`topology.ui.graph`): then nodes show their rates and capacities and edges their
rates, and the SVG is the UI's own (:func:`topology.ui.svg.graph_svg`, what
``/api/v1/topology/NAME/graph.svg`` serves).

Nothing here does I/O; the ``sparkstorm visualize`` command prints the results (and
rasterises the SVG for ``--format png``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from topology.constants import DEFAULT_STREAM
from topology.ui.svg import capacity_level, format_rate, graph_svg, render_svg
from topology.ui.svg_layout import Arrow, arrows, order

Components = Mapping[str, Mapping[str, Any]]
#: A running topology's live graph (:mod:`topology.ui.graph`), or None.
Graph = Mapping[str, Any] | None


#: One subscription, drawn as an arrow from ``source`` to ``target`` (the SVG's own).
Edge = Arrow


# -- the graph ----------------------------------------------------------------------------


def _tasks(info: Mapping[str, Any]) -> int:
    return int(info.get("tasks") or 0)


def edges(components: Components) -> list[Edge]:
    """Every subscription, ordered by source then subscriber (both in :func:`order`)."""
    rank = {c: n for n, c in enumerate(order(components))}
    # Sources missing from the summary sort last; Python's sort is stable.
    return sorted(arrows(components), key=lambda e: (rank.get(e.source, len(rank)), rank[e.target]))


def _streams(info: Mapping[str, Any]) -> list[str]:
    """``["default(word, count)", ...]`` for a component's output streams."""
    return [f"{s}({', '.join(fields)})" for s, fields in (info.get("streams") or {}).items()]


def _node(component: str, info: Mapping[str, Any]) -> str:
    return f"{component} x{_tasks(info)}"


def _operators(info: Mapping[str, Any]) -> list[str]:
    """A Streams API component's operators as one line (``fused: a > b`` when several)."""
    ops = [str(o) for o in info.get("operators") or []]
    if not ops:
        return []
    return [f"fused: {' > '.join(ops)}" if len(ops) > 1 else f"operator: {ops[0]}"]


def _target(edge: Edge, components: Components) -> str:
    info = components.get(edge.target)
    return _node(edge.target, info) if info is not None else edge.target


def _source(edge: Edge) -> str:
    return edge.source if edge.stream == DEFAULT_STREAM else f"{edge.source}:{edge.stream}"


def _summary(components: Components) -> str:
    spouts = sum(1 for info in components.values() if info.get("kind") == "spout")
    bolts = len(components) - spouts
    tasks = sum(_tasks(info) for info in components.values())
    return (
        f"{spouts} spout{'s' * (spouts != 1)}, {bolts} bolt{'s' * (bolts != 1)}, "
        f"{tasks} task{'s' * (tasks != 1)}"
    )


def node_notes(graph: Graph) -> dict[str, str]:
    """component -> what the live graph says of it, for the text drawings:
    ``emitted 12.3k/s`` (spouts) or ``executed 950/s, capacity 0.42`` (bolts)."""
    notes = {}
    for node in (graph or {}).get("components") or []:
        spout = node.get("kind") == "spout"
        what = "emitted" if spout else "executed"
        parts = [f"{what} {format_rate(float(node.get(f'{what}_per_sec') or 0.0))}"]
        capacity = node.get("capacity")
        if not spout and isinstance(capacity, int | float):
            parts.append(f"capacity {capacity:.2f}")
        notes[str(node.get("id"))] = ", ".join(parts)
    return notes


def edge_rates(graph: Graph) -> dict[tuple[str, str, str], str]:
    """(source, stream, target) -> the edge's rate as the SVG labels it (``1.2k/s``)."""
    out = {}
    for edge in (graph or {}).get("edges") or []:
        rate = edge.get("tuples_per_sec")
        if isinstance(rate, int | float):
            key = (str(edge.get("from")), str(edge.get("stream")), str(edge.get("to")))
            out[key] = format_rate(float(rate))
    return out


def _capacities(graph: Graph) -> dict[str, str]:
    """bolt -> its capacity level (:func:`topology.ui.svg.capacity_level`)."""
    return {
        str(n.get("id")): capacity_level(n.get("capacity"))
        for n in (graph or {}).get("components") or []
        if n.get("kind") != "spout"
    }


def _rate(edge: Edge, graph: Graph) -> str:
    """`` 1.2k/s`` for an edge of the live graph, else ""."""
    rate = edge_rates(graph).get(edge.key) if graph else None
    return f" {rate}" if rate else ""


# -- plain text ---------------------------------------------------------------------------


def to_text(components: Components, name: str | None = None, graph: Graph = None) -> str:
    """A plain drawing: one line per component in :func:`order`, then one per subscription::

        [spout] sentences x2  -> default(sentence)
        [bolt]  split x2      -> default(word)

        sentences --shuffle--> split x2
        split --fields[word]--> count x2

    A subscription to a stream other than ``default`` names it after the source
    (``split:errors --shuffle--> log x1``).  With a live ``graph``, each component has a
    ``live:`` line (``executed 950/s, capacity 0.42``) and each subscription its rate."""
    ids = order(components)
    notes = node_notes(graph)
    lines = [f"{name} ({_summary(components)})" if name else _summary(components), ""]
    nodes = {c: _node(c, components[c]) for c in ids}
    width = max((len(n) for n in nodes.values()), default=0)
    for c in ids:
        info = components[c]
        tag = f"[{info.get('kind', '?')}]".ljust(7)
        streams = _streams(info)
        if streams:
            lines.append(f"{tag} {nodes[c].ljust(width)}  -> {', '.join(streams)}")
        else:
            lines.append(f"{tag} {nodes[c]}")
        lines += [f"{'':7}   {op}" for op in _operators(info)]
        if c in notes:
            lines.append(f"{'':7}   live: {notes[c]}")
    arrows = [
        f"{_source(e)} --{e.grouping_label}--> {_target(e, components)}{_rate(e, graph)}"
        for e in edges(components)
    ]
    if arrows:
        lines += ["", *arrows]
    return "\n".join(lines) + "\n"


# -- rich ---------------------------------------------------------------------------------

_KIND_STYLE = {"spout": "bold cyan", "bolt": "bold green"}
#: A live note's style by its bolt's capacity level (the SVG's colours, roughly).
_LEVEL_STYLE = {"low": "green", "medium": "yellow", "high": "bold red", "unknown": "dim"}


def _rich_node(component: str, components: Components, graph: Graph = None) -> Text:
    info = components.get(component)
    if info is None:
        return Text(f"{component} (not in the topology)", style="red")
    kind = str(info.get("kind", "?"))
    text = Text.assemble(
        (component, _KIND_STYLE.get(kind, "bold")),
        (f" x{_tasks(info)}", "bold"),
        (f" {kind}", "dim"),
    )
    streams = _streams(info)
    if streams:
        text.append("  -> ", style="dim")
        text.append(", ".join(streams), style="blue")
    for op in _operators(info):
        text.append(f"  [{op}]", style="magenta")
    note = node_notes(graph).get(component)
    if note:
        level = _capacities(graph).get(component, "unknown")
        text.append(f"  ({note})", style=_LEVEL_STYLE.get(level, "dim"))
    return text


def _rich_edge(edge: Edge, graph: Graph = None) -> Text:
    text = Text()
    if edge.stream != DEFAULT_STREAM:
        text.append(f"{edge.stream} ", style="magenta")
    text.append("--", style="dim")
    text.append(edge.grouping, style="yellow")
    if edge.fields:
        text.append(f"[{', '.join(edge.fields)}]", style="yellow dim")
    text.append("-->", style="dim")
    rate = _rate(edge, graph)
    if rate:
        text.append(rate, style="bold")
    text.append(" ")
    return text


def to_rich(components: Components, name: str | None = None, graph: Graph = None) -> RenderableType:
    """A rich rendering for terminals: a tree rooted at each spout, following subscriptions.

    A component reached a second time (a diamond, or a cycle) is shown with ``(see above)``
    instead of repeating its subtree; components no spout reaches get their own tree."""
    out_edges: dict[str, list[Edge]] = {}
    for e in edges(components):
        out_edges.setdefault(e.source, []).append(e)
    shown: set[str] = set()

    def grow(tree: Tree, component: str) -> None:
        shown.add(component)
        for e in out_edges.get(component, []):
            label = _rich_edge(e, graph) + _rich_node(e.target, components, graph)
            if e.target in shown:
                tree.add(label + Text(" (see above)", style="dim italic"))
            else:
                grow(tree.add(label), e.target)

    trees: list[RenderableType] = []
    for c in order(components):
        if c not in shown:
            tree = Tree(_rich_node(c, components, graph), guide_style="dim")
            grow(tree, c)
            trees.append(tree)
    title = Text.assemble(
        (f"{name} " if name else "", "bold"), (f"({_summary(components)})", "dim")
    )
    return Group(title, *trees)


# -- Graphviz DOT -------------------------------------------------------------------------


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_label(*lines: str) -> str:
    """A quoted label; lines joined with DOT's ``\\n`` escape."""
    return _dot_quote("\0".join(lines)).replace("\0", "\\n")


def to_dot(components: Components, name: str | None = None, graph: Graph = None) -> str:
    """Graphviz DOT, left to right: spouts as filled rounded boxes, bolts as ellipses, each
    labelled with its id, kind, task count and output streams; edges labelled with the
    grouping (and the stream when it is not ``default``).  ``dot -Tsvg`` draws it.  With
    a live ``graph``, nodes add their rates and capacity, edges their rate."""
    notes = node_notes(graph)
    lines = [
        f"digraph {_dot_quote(name or 'topology')} {{",
        "  rankdir=LR;",
        '  node [fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for c in order(components):
        info = components[c]
        kind = str(info.get("kind", "?"))
        live = [notes[c]] if c in notes else []
        label = _dot_label(c, f"{kind} x{_tasks(info)}", *_operators(info), *_streams(info), *live)
        if kind == "spout":
            attrs = 'shape=box, style="rounded,filled", fillcolor="#dbeafe"'
        else:
            attrs = 'shape=ellipse, style=filled, fillcolor="#dcfce7"'
        lines.append(f"  {_dot_quote(c)} [{attrs}, label={label}];")
    for e in edges(components):
        source, target = _dot_quote(e.source), _dot_quote(e.target)
        lines.append(f"  {source} -> {target} [label={_dot_label(e.label + _rate(e, graph))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- Mermaid ------------------------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for quotes and brackets)."""
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def _mermaid_ids(ids: list[str]) -> dict[str, str]:
    """Mermaid node ids: ``c_`` + the id with anything but letters/digits/_ replaced
    (the prefix keeps clear of keywords such as ``end``); clashes get a numeric suffix."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for c in ids:
        base = "c_" + re.sub(r"\W", "_", c, flags=re.ASCII)
        node, n = base, 2
        while node in used:
            node, n = f"{base}_{n}", n + 1
        used.add(node)
        out[c] = node
    return out


def to_mermaid(components: Components, name: str | None = None, graph: Graph = None) -> str:
    """A Mermaid ``flowchart LR``: spouts as stadiums, bolts as rectangles, each labelled
    with its id, kind, task count and output streams; edges labelled with the grouping (and
    the stream when it is not ``default``).  Renders in GitHub/GitLab Markdown.  With a
    live ``graph``, nodes add their rates and capacity, edges their rate."""
    ids = order(components)
    notes = node_notes(graph)
    all_edges = edges(components)
    missing = [e.source for e in all_edges if e.source not in components]
    node_ids = _mermaid_ids(ids + list(dict.fromkeys(missing)))
    lines = ["flowchart LR"]
    if name:
        lines.insert(0, f"%% topology {name}")
    for c in ids:
        info = components[c]
        kind = str(info.get("kind", "?"))
        label = "<br/>".join(
            _mermaid_text(s)
            for s in (
                c,
                f"{kind} x{_tasks(info)}",
                *_operators(info),
                *_streams(info),
                *([notes[c]] if c in notes else []),
            )
        )
        open_, close = ('(["', '"])') if kind == "spout" else ('["', '"]')
        lines.append(f"    {node_ids[c]}{open_}{label}{close}")
    for c in dict.fromkeys(missing):
        lines.append(f'    {node_ids[c]}["{_mermaid_text(c)}"]')
    for e in all_edges:
        src, dst = node_ids[e.source], node_ids[e.target]
        lines.append(f'    {src} -->|"{_mermaid_text(e.label + _rate(e, graph))}"| {dst}')
    spouts = [node_ids[c] for c in ids if components[c].get("kind") == "spout"]
    bolts = [node_ids[c] for c in ids if components[c].get("kind") == "bolt"]
    lines.append("    classDef spout fill:#dbeafe,stroke:#2563eb")
    lines.append("    classDef bolt fill:#dcfce7,stroke:#16a34a")
    if spouts:
        lines.append(f"    class {','.join(spouts)} spout")
    if bolts:
        lines.append(f"    class {','.join(bolts)} bolt")
    return "\n".join(lines) + "\n"


# -- SVG ----------------------------------------------------------------------------------


def to_svg(components: Components, name: str | None = None, graph: Graph = None) -> str:
    """The web UI's drawing: a self-contained SVG, spouts on the left, a column per longest
    path; with a live ``graph``, the UI's very graph (:func:`topology.ui.svg.graph_svg`:
    edge rates, bolts coloured by capacity), else without rates or capacities."""
    if graph is not None:
        return graph_svg(graph, title=name)
    return render_svg(components, title=name)


__all__ = [
    "Edge",
    "Graph",
    "edge_rates",
    "edges",
    "node_notes",
    "order",
    "to_dot",
    "to_mermaid",
    "to_rich",
    "to_svg",
    "to_text",
]
