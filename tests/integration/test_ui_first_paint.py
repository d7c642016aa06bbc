"""The cluster and topology pages are filled at load (issue 43): a headless
``chromium --dump-dom`` — which prints the page as it stands at its load event, before any
server-sent event can arrive — holds the graph (every component, the edges' live rates,
the bolts coloured by capacity), the spouts' and bolts' tables with numbers, the summary's
rates and the actions; the cluster page holds the topology's row.

A LocalCluster runs examples/wordcount.py with the UI on a free port, as in
``test_ui_browser.py``; Chromium is Debian's (``/usr/bin/chromium``), run as ``visualize
--format png`` runs it; the test skips without it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from cli.visualize import CHROMIUM_FLAGS
from tests.integration.helpers import wait_for
from tests.unit.test_ui_server import get_json
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
NAME = "wc"


class Node:
    """An element of a parsed page: its tag, attributes, children and text."""

    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.texts: list[str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def find(
        self, tag: str | None = None, cls: str | None = None, id: str | None = None
    ) -> list[Node]:
        return [
            n
            for n in self.walk()
            if (tag is None or n.tag == tag)
            and (cls is None or cls in n.classes)
            and (id is None or n.attrs.get("id") == id)
        ]

    def one(self, **how: str) -> Node:
        found = self.find(**how)
        assert len(found) == 1, (how, len(found))
        return found[0]

    def text(self) -> str:
        return "".join(self.texts) + "".join(c.text() for c in self.children)


VOID = {"br", "hr", "img", "input", "link", "meta", "source", "wbr", "col", "area", "base"}


class Tree(HTMLParser):
    """The DOM Chromium printed, as :class:`Node` s (it prints well-formed HTML)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self._at = self.root
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self._at)
        self._at.children.append(node)
        if tag not in VOID:
            self._at = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._at.children.append(Node(tag, {k: v or "" for k, v in attrs}, self._at))

    def handle_endtag(self, tag: str) -> None:
        at: Node | None = self._at
        while at is not None and at.tag != tag:
            at = at.parent
        if at is not None and at.parent is not None:
            self._at = at.parent

    def handle_data(self, data: str) -> None:
        self._at.texts.append(data)


def dump_dom(url: str, tmp: Path) -> Node:
    """The page at ``url`` as headless Chromium prints it at its load event."""
    done = subprocess.run(
        [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={tmp}/profile", "--dump-dom", url],
        capture_output=True,
        timeout=90,
        check=False,
    )
    html = done.stdout.decode()
    assert done.returncode == 0 and "<body" in html, done.stderr.decode()[-2000:]
    return Tree(html).root


def number(text: str) -> float:
    """``1,234``, ``1,234/s``, ``22.1k/s``, ``0.5 ms`` as a number; anything else (a dash
    for an unknown value) fails the test."""
    bare = text.replace(",", "").removesuffix("/s").removesuffix(" ms").strip()
    scale = {"k": 1e3, "M": 1e6}.get(bare[-1:], 1.0)
    return float(bare.rstrip("kM")) * scale


def table_rows(page: Node, box: str) -> dict[str, dict[str, str]]:
    """The rows of the table in ``#box``, keyed by their first cell, by column heading."""
    table = page.one(id=box).one(tag="table")
    heads = [th.text().strip() for th in table.one(tag="thead").find(tag="th")]
    rows = {}
    for tr in table.one(tag="tbody").find(tag="tr"):
        cells = [td.text().strip() for td in tr.find(tag="td")]
        rows[cells[0]] = dict(zip(heads, cells, strict=True))
    return rows


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    if not CHROMIUM.exists():
        pytest.skip("needs Chromium at /usr/bin/chromium: apt-get install chromium")
    topology, _ = load_topology(f"{ROOT / 'examples' / 'wordcount.py'}:topology", None)
    conf = {"ui.publish.interval.secs": 0.5, "topology.stats.interval.secs": 1}
    with LocalCluster(conf, ui_port=0) as local:
        local.submit_topology(NAME, {"topology.workers": 2}, topology)
        yield local


def ready(cluster: LocalCluster) -> dict[str, Any]:
    """The latest snapshot once it shows the topology running: spouts emitting, every
    edge with a rate above 0 and every bolt's capacity known (what the page will show)."""
    url = cluster.ui_url
    assert url is not None

    def shown(snap: dict[str, Any]) -> bool:
        report = snap["topologies"].get(NAME) or {}
        graph = report.get("graph") or {"components": [], "edges": []}
        bolts = [c for c in graph["components"] if c["kind"] == "bolt"]
        return (
            bool(graph["edges"] and bolts)
            and all((e["tuples_per_sec"] or 0) > 0 for e in graph["edges"])
            and all(b["capacity"] is not None for b in bolts)
            and all(s["emitted"] > 0 for s in report.get("spouts", []))
        )

    snap = wait_for(lambda: get_json(url, f"/api/v1/snapshot?topology={NAME}")[1], shown, 90, 0.3)
    assert snap is not None and shown(snap), snap
    return snap


def test_the_topology_page_is_filled_at_load(cluster: LocalCluster, tmp_path: Path) -> None:
    ready(cluster)
    page = dump_dom(f"{cluster.ui_url}topology.html?name={NAME}", tmp_path)

    # the graph: three boxes, the bolts coloured by a known capacity, live edge rates
    graph = page.one(id="graph")
    nodes = {n.attrs["data-component"]: n for n in graph.find(tag="g", cls="node")}
    assert sorted(nodes) == ["count", "sentences", "split"]
    for bolt in ("split", "count"):
        assert "cap-unknown" not in nodes[bolt].classes, nodes[bolt].classes
    rates = [e.one(tag="text", cls="rate").text() for e in graph.find(tag="g", cls="edge")]
    assert len(rates) == 2 and all(number(r) > 0 for r in rates), rates

    # the tables, with numbers
    spouts = table_rows(page, "spouts")
    assert list(spouts) == ["sentences"]
    assert number(spouts["sentences"]["Emitted"]) > 0
    assert number(spouts["sentences"]["Tasks"]) == 2
    bolts = table_rows(page, "bolts")
    assert sorted(bolts) == ["count", "split"]
    for row in bolts.values():
        assert number(row["Executed"]) > 0
        assert 0 <= number(row["Capacity"]) <= 1
    workers = table_rows(page, "workers")
    assert sorted(workers) == ["0", "1"]
    for worker in workers.values():  # the data port beside the pid (a LocalCluster's
        assert re.fullmatch(r"\d+ / \d+", worker["Port / pid"]), worker  # tcp endpoints)

    # the summary's live rates, the status, the actions: nothing waits for an event
    assert number(page.one(id="rate-emitted").text()) > 0
    assert page.one(id="stat-status").text() == "ACTIVE"
    actions = page.one(id="actions")
    assert len(actions.find(tag="button", cls="action")) == 5
    # no admin token here: disabled, the Kill button not drawn as a danger, and the hint
    # in the server's words (ui/auth.py, docs/UI.md)
    kill = actions.one(tag="button", cls="action-kill")
    assert "disabled" in kill.attrs and "danger" not in kill.classes
    hint = actions.one(tag="p", cls="actions-disabled").text()
    assert "ui.admin.token.file" in hint and "SPARKSTORM_UI_ADMIN_TOKEN" in hint
    assert "secret" not in hint
    assert page.one(id="live").text() == "snapshot \u00b7 connecting"  # no event had come yet


def test_the_cluster_page_is_filled_at_load(cluster: LocalCluster, tmp_path: Path) -> None:
    ready(cluster)
    page = dump_dom(f"{cluster.ui_url}index.html", tmp_path)
    rows = table_rows(page, "topologies")
    assert list(rows) == [NAME]
    assert rows[NAME]["Status"] == "ACTIVE"
    assert number(rows[NAME]["Emitted/s"]) > 0
    assert 0 <= number(rows[NAME]["Max capacity"]) <= 1
    assert "No nimbus" in page.one(id="nimbus").text()
    block = json.loads(page.one(tag="script", id="first-snapshot").text())
    assert block["snapshot"]["topologies"] == {}  # the summary only: no report it needs not
    assert [r["name"] for r in block["snapshot"]["summary"]["topologies"]] == [NAME]
