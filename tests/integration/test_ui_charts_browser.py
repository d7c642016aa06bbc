"""The charts in a real browser (headless Chromium, Playwright): a LocalCluster runs
examples/wordcount.py with the UI publishing every 0.25 s; the topology page's charts
fill up to 10 points and more (the 10-minute window's points are 2 s apart), one line per
component, and the component page charts one component's figures; the window switch
changes what they cover.  Screenshots go to ``tests/artifacts/ui/`` like
test_ui_browser's (``ui-charts.png`` is docs/UI.md's)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from tests.integration.test_ui_browser import ARTIFACTS, ROOT, browser_page, missing, shoot
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Points each chart must show (the acceptance of issue 43: after a minute of running).
POINTS = 10
#: Milliseconds the charts have to fill up (10 points of 2 s, after the workers start).
FILL_MS = 120_000


def chart_points(page: Any) -> dict[str, int]:
    """Chart title -> the points of its longest line, as drawn."""
    return page.eval_on_selector_all(
        "#charts figure.chart-box",
        "fs => Object.fromEntries(fs.map(f => [f.dataset.chart,"
        " Number(f.querySelector('svg.chart').dataset.points)]))",
    )


def test_charts_on_the_topology_and_component_pages(tmp_path: Path) -> None:
    reason = missing()
    if reason:
        pytest.skip(reason)
    topology, _ = load_topology(f"{ROOT / 'examples' / 'wordcount.py'}:topology", None)
    with LocalCluster({"ui.publish.interval.secs": 0.25}, ui_port=0) as cluster:
        with browser_page() as page:
            cluster.submit_topology("wc", {"topology.workers": 2}, topology)
            url = cluster.ui_url
            assert url is not None
            page.goto(f"{url}topology.html?name=wc")
            page.wait_for_function(
                """n => {
                    const charts = [...document.querySelectorAll('#charts svg.chart')];
                    return charts.length === 6 && charts.slice(0, 1).concat(charts.slice(4))
                        .every(c => Number(c.dataset.points) >= n);
                }""",
                arg=POINTS,
                timeout=FILL_MS,
            )
            points = chart_points(page)
            throughput = next(t for t in points if t.startswith("Throughput"))
            assert points[throughput] >= POINTS, points
            lines = page.eval_on_selector_all(
                "#charts figure.chart-box:first-child polyline.line",
                "ls => ls.map(l => l.dataset.label)",
            )
            assert sorted(lines) == ["count", "sentences", "split"]
            busy = page.eval_on_selector_all(
                "#charts figure.chart-box:last-child polyline.line",
                "ls => ls.map(l => l.dataset.label)",
            )
            assert sorted(busy) == ["count", "sentences", "split"]  # spouts: in next_tuple
            note = page.inner_text("#charts .chart-note")
            assert "last 10m in 2 s steps" in note and "this UI's memory" in note
            page.locator("#charts").scroll_into_view_if_needed()
            shoot(page, tmp_path, "topology-charts")
            charts = tmp_path / "ui-charts.png"  # the charts card alone: docs/UI.md's
            page.locator("section.card:has(#charts)").screenshot(path=str(charts))
            shutil.copy(charts, ARTIFACTS / charts.name)

            page.click("#window button[data-window='3h']")
            page.wait_for_function(
                "() => (document.querySelector('#charts .chart-note')?.textContent || '')"
                ".includes('last 3h in 36 s steps')"
            )

            page.goto(f"{url}component.html?topology=wc&component=count")
            page.wait_for_function(
                """n => {
                    const charts = [...document.querySelectorAll('#charts svg.chart')];
                    return charts.length === 6 && Number(charts[0].dataset.points) >= n
                        && Number(charts[1].dataset.points) >= n;
                }""",
                arg=POINTS,
            )
            titles = list(chart_points(page))
            assert titles[:2] == ["Throughput", "Execute latency"], titles
            lines = page.eval_on_selector_all(
                "#charts figure.chart-box:nth-child(2) polyline.line",
                "ls => ls.map(l => l.dataset.label)",
            )
            assert lines == ["p50", "p95", "p99"]
            page.locator("#charts svg.chart").first.hover(position={"x": 300, "y": 80})
            assert "executed" in page.inner_text("#charts .readout >> nth=0")  # the values
            shoot(page, tmp_path, "component-charts")
