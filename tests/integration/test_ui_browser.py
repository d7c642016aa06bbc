"""The web UI in a real browser: headless Chromium, driven by Playwright, against a
LocalCluster running examples/wordcount.py with the UI on a free port (issue 28).

It opens the cluster and topology pages, reads the spouts' rates rising, finds the graph
and its capacity colours, deactivates the topology with the button (confirmed, with the
admin token) and sees the spouts stop, sets the log level and reads it in a worker's log
on the logs page, opens a component page, checks that a UI without an admin token
disables the actions, and kills the topology with the button.  Screenshots go to the
test's tmp dir and are copied to ``tests/artifacts/ui/`` (gitignored).

Uses Debian's ``chromium`` (``/usr/bin/chromium``; Playwright's own browsers are never
downloaded) and the ``playwright`` module; skips, naming the one missing, without them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from cli.visualize import CHROMIUM_FLAGS
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts" / "ui"
TOKEN = "ui-browser-test-admin-token-0123456789"
CHROMIUM_ARGS = list(CHROMIUM_FLAGS)  # what visualize --format png runs it with
#: Milliseconds a page has to show what the test waits for.
WAIT_MS = 60_000


def missing() -> str | None:
    """Why this test cannot run here, or None."""
    if not CHROMIUM.exists():
        return "needs Chromium at /usr/bin/chromium: apt-get install chromium"
    if importlib.util.find_spec("playwright") is None:
        return "needs Playwright for Python: pip install playwright (no browser download)"
    for module in ("starlette", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            return f"needs {module}: pip install -e '.[ui]'"
    return None


@contextmanager
def browser_page() -> Iterator[Any]:
    """A page of a fresh headless Chromium; the browser and Playwright's driver process
    are gone when the block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


def shoot(page: Any, shots: Path, name: str) -> Path:
    """A full-page screenshot ``ui-<name>.png`` in ``shots``, copied to the artifacts."""
    path = shots / f"ui-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, ARTIFACTS / path.name)
    return path


def number(text: str) -> float:
    """``1,234/s`` or ``1,234`` as a number (``–`` as 0)."""
    digits = text.replace(",", "").replace("/s", "").strip()
    return float(digits) if digits and digits != "\u2013" else 0.0


EMITTED = "#spouts tbody tr:first-child td:nth-child(3)"
RATE = "#rate-emitted"


def watch_rates_rise(page: Any) -> None:
    """The spouts' emitted/s above 0, and their emitted count growing between snapshots."""
    page.wait_for_function(
        "s => parseFloat(document.querySelector(s)?.textContent.replace(/,/g, '')) > 0", arg=RATE
    )
    first = number(page.inner_text(EMITTED))
    page.wait_for_function(
        "([s, n]) => parseFloat(document.querySelector(s)?.textContent.replace(/,/g, '')) > n",
        arg=[EMITTED, first],
    )
    assert number(page.inner_text(RATE)) > 0


def check_graph(page: Any) -> None:
    """Three boxes, two edges with live rates, every bolt coloured by its capacity."""
    page.wait_for_function(
        """() => {
            const bolts = document.querySelectorAll('#graph g.node.bolt');
            const rates = [...document.querySelectorAll('#graph g.edge text.rate')];
            return bolts.length === 2 && [...bolts].every(b => !b.classList.contains('cap-unknown'))
                && rates.length === 2 && rates.every(r => /\\/s$/.test(r.textContent));
        }"""
    )
    nodes = page.eval_on_selector_all(
        "#graph g.node",
        "gs => gs.map(g => [g.dataset.component, g.getAttribute('class'),"
        " g.querySelector('rect').getAttribute('fill')])",
    )
    assert sorted(n[0] for n in nodes) == ["count", "sentences", "split"]
    palette = {"low": "#dcfce7", "medium": "#fef3c7", "high": "#fee2e2", "spout": "#dbeafe"}
    for name, classes, fill in nodes:
        level = next(c[4:] for c in classes.split() if c.startswith("cap-"))
        assert palette[level] == fill, (name, classes, fill)
    edges = page.eval_on_selector_all(
        "#graph g.edge", "gs => gs.map(g => g.dataset.source + '>' + g.dataset.target)"
    )
    assert sorted(edges) == ["sentences>split", "split>count"]


def act(page: Any, action: str, fields: dict[str, str] | None = None) -> None:
    """Click an action's button, fill the confirmation (and the token when asked), confirm,
    and wait for the page to say it is done."""
    page.click(f"button[data-action='{action}']")
    dialog = page.locator("#confirm-dialog")
    dialog.wait_for(state="visible")
    for name, value in (fields or {}).items():
        field = dialog.locator(f"[name='{name}']")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    if dialog.locator("input[name='token']").count():
        dialog.locator("input[name='token']").fill(TOKEN)
    dialog.locator("button.confirm-button").click()
    label = page.inner_text(f"button[data-action='{action}']")
    page.wait_for_function(
        "t => [...document.querySelectorAll('#messages .message')]"
        ".some(m => m.textContent.startsWith(t))",
        arg=label,
    )
    assert not page.locator("#messages .message.bad").count(), page.inner_text("#messages")


def test_the_topology_page_live_actions_and_logs(tmp_path: Path) -> None:
    reason = missing()
    if reason:
        pytest.skip(reason)
    topology, _ = load_topology(f"{ROOT / 'examples' / 'wordcount.py'}:topology", None)
    conf = {"ui.admin.token": TOKEN, "ui.publish.interval.secs": 1.0}
    with LocalCluster(conf, ui_port=0) as cluster, browser_page() as page:
        cluster.submit_topology("wc", {"topology.workers": 2}, topology)
        url = cluster.ui_url
        assert url is not None
        page.goto(f"{url}index.html")
        page.wait_for_selector("a.topology-link:text('wc')")
        shoot(page, tmp_path, "cluster")

        page.click("a.topology-link:text('wc')")
        page.wait_for_selector("#graph svg")
        watch_rates_rise(page)
        check_graph(page)
        assert page.is_enabled("button[data-action='deactivate']")
        shoot(page, tmp_path, "topology")

        act(page, "deactivate")
        page.wait_for_function(
            "() => document.querySelector('#stat-status')?.textContent === 'INACTIVE'"
        )
        page.wait_for_function("s => document.querySelector(s)?.textContent === '0/s'", arg=RATE)
        assert cluster.stats("wc")["topology"]["status"] == "INACTIVE"
        shoot(page, tmp_path, "deactivated")

        act(page, "log-level", {"level": "DEBUG", "timeout": "60"})
        page.click("#workers a.log-link >> nth=0")
        page.wait_for_selector("#log .worker-head")
        page.check("#follow")  # the level change may have come after the tail was read
        page.fill("#search", "log level set to DEBUG")
        page.wait_for_function(
            "() => document.querySelectorAll('#log mark').length > 0", timeout=WAIT_MS
        )
        assert "==> worker 0 on" in page.inner_text("#log")
        shoot(page, tmp_path, "logs")

        page.goto(f"{url}component.html?topology=wc&component=count")
        page.wait_for_selector("#tasks tbody tr")
        assert page.locator("#tasks tbody tr").count() == 2
        page.wait_for_selector("#charts svg.chart")
        shoot(page, tmp_path, "component")

        check_markup_shows_as_text(url, page)
        check_actions_disabled_without_a_token(cluster, page, tmp_path)

        page.goto(f"{url}topology.html?name=wc")
        act(page, "kill", {"wait_secs": "0"})
        page.goto(f"{url}index.html")
        page.wait_for_selector("#topologies p.empty:text('No topology runs.')")


#: Markup that would run a script if a page inserted it as HTML.
MARKUP = '<img src=x onerror="window.__injected = 1">'


def check_markup_shows_as_text(url: str, page: Any) -> None:
    """An error message (the API's own, naming a bad topology name) and a log line holding
    markup show as text: no element is made of them and nothing runs."""
    page.goto(f"{url}topology.html?name={urllib.parse.quote(MARKUP)}")
    page.wait_for_function(
        "() => (document.querySelector('#topology-error')?.textContent || '').includes('<img')"
    )
    assert page.locator("#topology-error img").count() == 0
    chunk = {"worker": 0, "host": "h", "pid": 1, "path": "w.log", "offset": 9, "file_id": 1}
    body = json.dumps({"topology": "wc", "chunks": [{**chunk, "text": f"a line {MARKUP}\n"}]})
    logs = re.compile(r"/api/v1/topology/wc/logs\?")
    page.route(logs, lambda route: route.fulfill(body=body, content_type="application/json"))
    try:
        page.goto(f"{url}logs.html?topology=wc&worker=0")
        page.wait_for_function(
            "() => (document.querySelector('#log')?.textContent || '').includes('<img')"
        )
        assert page.locator("#log img").count() == 0
        assert page.evaluate("() => window.__injected") is None
    finally:
        page.unroute(logs)


def check_actions_disabled_without_a_token(cluster: LocalCluster, page: Any, shots: Path) -> None:
    """A second UI over the same cluster, with no admin token: the buttons are disabled
    and the page says how to enable them.  From here on the browser has no EventSource,
    so the pages poll instead (as behind a proxy that buffers event streams)."""
    from topology.deploy.local.ui_view import LocalClusterView
    from topology.ui.server import UiServer

    page.add_init_script("delete window.EventSource")
    with UiServer(LocalClusterView(cluster), port=0) as server:
        page.goto(f"{server.url}topology.html?name=wc")
        page.wait_for_selector("#actions .actions-disabled")
        page.wait_for_selector("#live.polling")
        buttons = page.locator("#actions button.action")
        assert buttons.count() == 5
        assert all(buttons.nth(i).is_disabled() for i in range(5))
        assert "ui.admin.token" in page.inner_text("#actions")
        kill = page.locator("button[data-action='kill']")
        color = kill.evaluate("b => getComputedStyle(b).color")
        assert color != "rgb(220, 38, 38)", color  # a disabled Kill is not drawn in red
        shoot(page, shots, "actions-disabled")
