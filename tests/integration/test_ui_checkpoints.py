"""Checkpoints, state and savepoints of a running checkpointed topology
(examples/stateful_wordcount.py on a LocalCluster with the UI): the checkpoint history in
the API's report and in ``sparkstorm status``, the bolts' state column data, the savepoint
list, and the graph's edges saying whether they are backpressured; then the topology page
in headless Chromium (as tests/integration/test_ui_browser.py drives it): the Checkpoints
panel's summary, history and savepoints, the State column, and a backpressured edge drawn
red by the live graph.  Its screenshots go to ``tests/artifacts/ui/``: the page
(``ui-checkpoints.png``) and the panel (``ui-checkpoints-panel.png``, docs/img's
``ui-checkpoints.png``)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from cli.status_view import status_view
from tests.integration.helpers import wait_for
from tests.integration.test_ui_browser import ARTIFACTS, browser_page, missing, shoot
from tests.unit.status_helpers import render
from tests.unit.test_ui_server import get_json
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAME = "swc"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("checkpoints")


@pytest.fixture(scope="module")
def cluster(folder: Path) -> Iterator[LocalCluster]:
    topology, _ = load_topology(f"{EXAMPLES / 'stateful_wordcount.py'}:topology", {})
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(folder / "state"),
        "topology.state.checkpoint.interval.ms": 300,
        "topology.state.savepoints.dir": str(folder / "savepoints"),
    }
    base = {"ui.publish.interval.secs": 0.5, "topology.stats.interval.secs": 1}
    with LocalCluster(base, ui_port=0) as local:
        local.submit_topology(NAME, conf, topology)
        yield local


def report(cluster: LocalCluster) -> dict[str, Any]:
    assert cluster.ui_url is not None
    status, body = get_json(cluster.ui_url, f"/api/v1/topology/{NAME}")
    assert status == 200, body
    return body


def completed(body: dict[str, Any]) -> list[dict[str, Any]]:
    history = (body.get("checkpoints") or {}).get("history") or []
    return [r for r in history if r["status"] == "completed"]


def test_the_report_holds_each_checkpoint_with_its_size_per_component(
    cluster: LocalCluster,
) -> None:
    body = wait_for(
        lambda: report(cluster),
        lambda b: (
            len(completed(b)) >= 3 and any(r["components"]["count"]["bytes"] for r in completed(b))
        ),
        90,
    )
    history = body["checkpoints"]["history"]
    assert [r["id"] for r in history] == sorted((r["id"] for r in history), reverse=True)
    assert len(history) <= 50
    last = completed(body)[0]
    assert set(last["components"]) == {"sentences", "split", "count"}
    assert last["tasks_reported"] == 6  # two tasks of each
    assert last["components"]["count"]["tasks"] == 2
    assert last["bytes"] == sum(p["bytes"] for p in last["components"].values())
    assert 0 <= last["duration_secs"] < 60 and last["alignment_ms"] >= 0
    assert abs(last["triggered_at"] - body["generated_at"]) < 120  # unix time
    # the state column's data: the stateful bolt's live keys and bytes
    [count] = [b for b in body["bolts"] if b["id"] == "count"]
    assert count["state_keys"] > 0 and count["state_bytes"] > 0
    assert all(isinstance(e["backpressured"], bool) for e in body["graph"]["edges"])
    # sparkstorm status shows the same history
    text = render(status_view(cluster.stats(NAME), stale_after=30.0))
    assert "Recent checkpoints" in text and f"#{history[0]['id']}" in text


def test_a_savepoint_taken_is_listed_with_its_size(cluster: LocalCluster, folder: Path) -> None:
    assert cluster.ui_url is not None
    status, body = get_json(cluster.ui_url, f"/api/v1/topology/{NAME}/savepoints")
    assert status == 200 and body["savepoints"] == []
    assert body["directory"] == str(folder / "savepoints")
    path = cluster.savepoint(NAME)
    status, body = get_json(cluster.ui_url, f"/api/v1/topology/{NAME}/savepoints")
    assert status == 200 and body["error"] is None
    [taken] = body["savepoints"]
    assert taken["path"] == path and taken["entries"] > 0 and taken["bytes"] > 0
    assert taken["created_at"].endswith("Z") and taken["checkpoint"] >= 1


#: A graph the page draws with its one edge backpressured (the live graph's paint).
PRESSED = {
    "components": [
        {"id": "a", "kind": "spout", "tasks": 1},
        {"id": "b", "kind": "bolt", "tasks": 1, "capacity": 0.9},
    ],
    "edges": [
        {
            "from": "a",
            "to": "b",
            "stream": "default",
            "grouping": "shuffle",
            "fields": [],
            "tuples_per_sec": 5.0,
            "backpressured": True,
        }
    ],
}


def test_the_topology_page_shows_checkpoints_savepoints_and_state(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Run after the savepoint test: one savepoint is listed."""
    why = missing()
    if why:
        pytest.skip(why)
    with browser_page() as page:
        page.goto(f"{cluster.ui_url}topology.html?name={NAME}")
        page.wait_for_function(
            "() => document.querySelectorAll('#checkpoint-history tbody tr').length >= 3"
            " && document.querySelectorAll('#savepoint-list tbody tr').length === 1"
        )
        assert "Last complete: #" in page.inner_text("#checkpoint-summary")
        first = page.eval_on_selector_all(
            "#checkpoint-history tbody tr:first-child td", "tds => tds.map(t => t.textContent)"
        )
        assert re.fullmatch(r"#\d+", first[0]) and first[1].endswith("UTC")
        done = page.eval_on_selector_all(
            "#checkpoint-history tbody tr", "trs => trs.map(t => t.textContent)"
        )
        assert any("completed" in row and re.search(r"count \d", row) for row in done)
        headings = page.eval_on_selector_all("#bolts th", "ths => ths.map(t => t.textContent)")
        state = page.inner_text(
            f"#bolts tbody tr:has(a:text-is('count')) td:nth-child({headings.index('State') + 1})"
        )
        assert re.fullmatch(r"[\d,]+ keys, [\d.]+ (B|kB|MB|GB)", state), state
        assert "keys" not in page.inner_text("#bolts tbody tr:has(a:text-is('split'))")
        assert f"savepoint-{NAME}-" in page.inner_text("#savepoint-list tbody tr td:nth-child(5)")
        shoot(page, tmp_path, "checkpoints")
        panel = tmp_path / "ui-checkpoints-panel.png"  # docs/img/ui-checkpoints.png
        page.locator("section.card:has(#checkpoints)").screenshot(path=str(panel))
        shutil.copy(panel, ARTIFACTS / panel.name)
        # the live graph draws a backpressured edge thick and red, and back when it clears
        # (drawn and read in one go: the next snapshot redraws the page's own graph)
        paint = """g => { const box = document.querySelector('#graph');
            SSGraph.update(box, g);
            const p = box.querySelector('g.edge path');
            return [p.getAttribute('stroke'), p.getAttribute('stroke-width'),
                    p.parentNode.classList.contains('backpressured')]; }"""
        assert page.evaluate(paint, PRESSED) == ["#dc2626", "3.5", True]
        cleared = {**PRESSED, "edges": [{**PRESSED["edges"][0], "backpressured": False}]}
        assert page.evaluate(paint, cleared) == ["#475569", "1.4", False]
