"""Unit tests for topology.ui.svg: the topology graph drawn as SVG (web UI, visualize)."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology.ui.svg import PALETTE, capacity_level, format_rate, graph_svg, render_svg
from topology.ui.svg_layout import arrows, columns, layout

pytestmark = pytest.mark.timeout(60)

SVG = "{http://www.w3.org/2000/svg}"


def spout(tasks: int = 1) -> dict[str, Any]:
    return {"kind": "spout", "tasks": tasks, "streams": {"default": ["x"]}, "inputs": []}


def bolt(*sources: str, tasks: int = 1, grouping: str = "shuffle") -> dict[str, Any]:
    inputs = [{"component": s, "stream": "default", "grouping": grouping} for s in sources]
    return {"kind": "bolt", "tasks": tasks, "streams": {"default": ["y"]}, "inputs": inputs}


WORDCOUNT = {
    "sentences": spout(2),
    "split": bolt("sentences", tasks=2),
    "count": {
        "kind": "bolt",
        "tasks": 2,
        "streams": {"default": ["word", "count"]},
        "inputs": [
            {"component": "split", "stream": "default", "grouping": "fields", "fields": ["word"]}
        ],
    },
}


def nodes(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)
    return {
        g.attrib["data-component"]: g for g in root.iter(f"{SVG}g") if "node" in g.get("class", "")
    }


def edge_groups(svg: str) -> list[ET.Element]:
    return [g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("class") == "edge"]


def rect(g: ET.Element) -> tuple[float, float, float, float]:
    r = g.find(f"{SVG}rect")
    assert r is not None
    return tuple(float(r.attrib[k]) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


def texts(g: ET.Element) -> list[str]:
    return [t.text or "" for t in g.iter(f"{SVG}text")]


def test_wordcount_has_boxes_edges_labels_and_rates() -> None:
    svg = render_svg(
        WORDCOUNT,
        rates={("sentences", "default", "split"): 1234.5, ("split", "default", "count"): 12345},
        capacity={"split": 0.31, "count": 0.92},
        title="wc",
    )
    found = nodes(svg)
    assert list(found) == ["sentences", "split", "count"]
    assert "spout \u00d7 2 tasks" in texts(found["sentences"])
    assert "capacity 0.920" in texts(found["count"])
    labels = [texts(g) for g in edge_groups(svg)]
    assert labels == [["shuffle", "1,234/s"], ["fields[word]", "12.3k/s"]]
    # left to right by longest path
    xs = [rect(found[c])[0] for c in ("sentences", "split", "count")]
    assert xs == sorted(xs) and len(set(xs)) == 3


@pytest.mark.parametrize(
    ("cap", "level"),
    [
        (None, "unknown"),
        (0.0, "low"),
        (0.49, "low"),
        (0.5, "medium"),
        (0.79, "medium"),
        (0.8, "high"),
        (1.7, "high"),
    ],
)
def test_capacity_levels(cap: float | None, level: str) -> None:
    assert capacity_level(cap) == level
    svg = render_svg({"s": spout(), "b": bolt("s")}, capacity={"b": cap})
    g = nodes(svg)["b"]
    assert f"cap-{level}" in g.attrib["class"]
    fill, stroke = PALETTE[level]
    r = g.find(f"{SVG}rect")
    assert r is not None and (r.attrib["fill"], r.attrib["stroke"]) == (fill, stroke)


def test_spouts_are_blue_whatever_the_capacity() -> None:
    g = nodes(render_svg({"s": spout()}, capacity={"s": 0.99}))["s"]
    assert "cap-spout" in g.attrib["class"]


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (0, "0/s"),
        (3.25, "3.2/s"),
        (12.0, "12/s"),
        (950.4, "950/s"),
        (1234.5, "1,234/s"),
        (12345, "12.3k/s"),
        (4_100_000, "4.1M/s"),
    ],
)
def test_format_rate(rate: float, text: str) -> None:
    assert format_rate(rate) == text


def test_text_is_escaped_and_invalid_characters_replaced() -> None:
    evil = "a<b>&\"c'\x01"
    comps = {evil: spout(), "</svg>": bolt(evil, grouping="<script>")}
    svg = render_svg(comps, title="<&>")
    assert "<script>" not in svg and "\x01" not in svg
    found = nodes(svg)
    assert set(found) == {"a<b>&\"c'\ufffd", "</svg>"}
    assert [texts(g)[0] for g in edge_groups(svg)] == ["<script>"]


def test_streams_fields_missing_sources_cycles_and_self_loops() -> None:
    comps = {
        "s": spout(),
        "a": {
            **bolt("s"),
            "inputs": [
                {"component": "s", "stream": "default", "grouping": "shuffle"},
                {"component": "b", "stream": "back", "grouping": "all"},
                {"component": "a", "stream": "tick", "grouping": "direct"},
                {"component": "ghost", "stream": "default", "grouping": "global"},
            ],
        },
        "b": bolt("a"),
    }
    svg = render_svg(comps)
    found = nodes(svg)
    assert set(found) == {"s", "a", "b", "ghost"}
    assert "missing" in found["ghost"].attrib["class"]
    labels = sorted(texts(g)[0] for g in edge_groups(svg))
    assert labels == ["back: all", "global", "shuffle", "shuffle", "tick: direct"]
    assert columns(comps) == {"s": 0, "ghost": 0, "a": 1, "b": 2}


def test_a_long_edge_goes_around_the_boxes_it_passes() -> None:
    comps = {"s": spout(), "a": bolt("s"), "b": bolt("a"), "c": bolt("b", "s")}
    lay = layout(comps)
    (i,) = [i for i, e in enumerate(lay.edges) if (e.source, e.target) == ("s", "c")]
    ys = [y for _, _, y in lay.waypoints[i]]
    for name in ("a", "b"):
        box = lay.boxes[name]
        assert all(not box.y <= y <= box.y + box.height for y in ys)


def test_graph_svg_reads_the_api_graph_leniently() -> None:
    graph = {
        "components": {**WORDCOUNT, "count": {**WORDCOUNT["count"], "capacity": 0.85}},
        "edges": [
            {"source": "sentences", "stream": "default", "target": "split", "rate": 10},
            {"source": "split", "target": "count", "tuples_per_sec": 2.5},
            {"source": "split", "target": "count", "rate": "n/a"},
            "junk",
        ],
    }
    svg = graph_svg(graph)
    assert "cap-high" in nodes(svg)["count"].attrib["class"]
    assert "cap-unknown" in nodes(svg)["split"].attrib["class"]
    assert [texts(g)[1] for g in edge_groups(svg)] == ["10/s", ""]
    by_capacity = graph_svg({"components": WORDCOUNT, "capacity": {"split": 0.6}})
    assert "cap-medium" in nodes(by_capacity)["split"].attrib["class"]
    assert nodes(graph_svg(WORDCOUNT)).keys() == WORDCOUNT.keys()


def test_graph_svg_reads_the_api_graph_schema() -> None:
    """topology.ui.graph's schema: components as a list of nodes, edges from/to."""
    graph = {
        "components": [
            {"id": "count", "kind": "bolt", "tasks": 2, "capacity": 0.9},
            {"id": "sentences", "kind": "spout", "tasks": 2, "capacity": None},
            {"id": "split", "kind": "bolt", "tasks": 2, "capacity": 0.1},
        ],
        "edges": [
            {
                "from": "sentences",
                "to": "split",
                "stream": "default",
                "grouping": "shuffle",
                "fields": [],
                "tuples_per_sec": 99.0,
            },
            {
                "from": "split",
                "to": "count",
                "stream": "default",
                "grouping": "fields",
                "fields": ["word"],
                "tuples_per_sec": 990.0,
            },
        ],
    }
    svg = graph_svg(graph)
    found = nodes(svg)
    assert "cap-high" in found["count"].attrib["class"]
    assert "cap-low" in found["split"].attrib["class"]
    assert rect(found["sentences"])[0] < rect(found["split"])[0] < rect(found["count"])[0]
    labels = sorted(texts(g) for g in edge_groups(svg))
    assert labels == [["fields[word]", "990/s"], ["shuffle", "99/s"]]


def test_empty_topology() -> None:
    root = ET.fromstring(render_svg({}))
    assert root.tag == f"{SVG}svg"


# -- hypothesis: any DAG -------------------------------------------------------------------

names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Cn")), min_size=1, max_size=40
)


@st.composite
def dags(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(names, min_size=1, max_size=9, unique=True))
    spouts = draw(st.integers(min_value=1, max_value=len(ids)))
    comps: dict[str, Any] = {}
    for k, name in enumerate(ids):
        if k < spouts:
            comps[name] = spout(draw(st.integers(1, 64)))
            continue
        sources = draw(st.lists(st.sampled_from(ids[:k]), min_size=1, max_size=4))
        streams = draw(
            st.lists(
                st.sampled_from(["default", "errors", "<x&y>"]),
                min_size=len(sources),
                max_size=len(sources),
            )
        )
        groupings = draw(
            st.lists(
                st.sampled_from(["shuffle", "fields", "all", "global"]),
                min_size=len(sources),
                max_size=len(sources),
            )
        )
        comps[name] = {
            "kind": "bolt",
            "tasks": draw(st.integers(1, 64)),
            "streams": {},
            "inputs": [
                {"component": s, "stream": t, "grouping": g, "fields": ["f"] * (g == "fields")}
                for s, t, g in zip(sources, streams, groupings)
            ],
        }
    return comps


def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    comps=dags(),
    caps=st.lists(st.one_of(st.none(), st.floats(0, 2)), min_size=9, max_size=9),
    rates=st.lists(st.floats(0, 1e7), min_size=40, max_size=40),
)
def test_any_dag_is_valid_complete_and_without_overlaps(
    comps: dict[str, Any], caps: list[float | None], rates: list[float]
) -> None:
    capacity = dict(zip(comps, caps))
    edge_rates = {e.key: r for e, r in zip(arrows(comps), rates)}
    svg = render_svg(comps, rates=edge_rates, capacity=capacity, title="t")
    assert svg == render_svg(comps, rates=edge_rates, capacity=capacity, title="t")
    found = nodes(svg)  # parses: valid XML
    assert set(found) == set(comps)
    drawn = Counter(
        (g.attrib["data-source"], g.attrib["data-stream"], g.attrib["data-target"])
        for g in edge_groups(svg)
    )
    assert drawn == Counter(e.key for e in arrows(comps))
    for a, b in itertools.combinations(found.values(), 2):
        assert not overlap(rect(a), rect(b)), (a.attrib, b.attrib)
    col = columns(comps)
    assert all(col[e.target] > col[e.source] for e in arrows(comps))
    spout_right = max((rect(g)[0] for c, g in found.items() if comps[c]["kind"] == "spout"))
    assert all(rect(g)[0] > spout_right for c, g in found.items() if comps[c]["kind"] == "bolt")
