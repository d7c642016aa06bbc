"""First paint (topology/ui/firstpaint.py): the pages carry the latest snapshot in a data
block that no value can break out of, and ``/api/v1/snapshot`` is the event's JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.unit.test_ui_server import get_json, request
from topology.deploy.local.cluster import LocalCluster
from topology.ui.firstpaint import BLOCK_ID, html_safe_json, with_block

pytestmark = pytest.mark.timeout(60)

BLOCK = re.compile(rf'<script type="application/json" id="{BLOCK_ID}">(.*?)</script>', re.S)
PAGE = '<html><body><main></main>\n<script src="a.js"></script></body></html>'


def test_the_block_sits_before_the_scripts_and_no_value_ends_it() -> None:
    data = {"name": "</script><script>alert(1)</script>", "x": "<!-- & -->", "n": [1.5, None]}
    page = with_block(PAGE, json.dumps(data))
    assert page.index(BLOCK_ID) < page.index('src="a.js"')
    found = BLOCK.findall(page)
    assert len(found) == 1 and "<" not in found[0] and ">" not in found[0]
    assert json.loads(found[0]) == data
    assert html_safe_json('"a&b"') == '"a\\u0026b"'


def test_a_page_without_scripts_gets_the_block_before_its_end() -> None:
    page = with_block("<html><body></body></html>", "{}")
    assert page.endswith("</script>\n</body></html>")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with LocalCluster({"ui.publish.interval.secs": 0.2}, ui_port=0) as local:
        assert local.ui_url is not None
        yield local.ui_url


def test_the_pages_carry_the_snapshot_event_and_the_server_info(url: str) -> None:
    for path in ("/", "/index.html", "/topology.html?name=wc"):
        status, headers, body = request(url, "GET", path)
        assert status == 200 and headers["cache-control"] == "no-store"
        assert headers["content-type"].startswith("text/html")
        (block,) = BLOCK.findall(body.decode())
        data = json.loads(block)
        assert set(data) == {"ui", "snapshot"}
        assert data["ui"]["actions_enabled"] is False
        assert {"seq", "generated_at", "summary", "topologies"} <= set(data["snapshot"])
        assert data["snapshot"]["topologies"] == {}  # none runs; the cluster page: never
    status, event = get_json(url, "/api/v1/snapshot?topology=wc")
    assert status == 200 and event["topologies"] == {} and "summary" in event


def test_a_bad_name_gets_the_page_without_a_block_and_the_api_names_it(url: str) -> None:
    status, _, body = request(url, "GET", "/topology.html?name=%3Cimg%3E")
    assert status == 200 and BLOCK_ID not in body.decode()
    status, error = get_json(url, "/api/v1/snapshot?topology=%3Cimg%3E")
    assert status == 400 and error["parameter"] == "topology"
    status, error = get_json(url, "/api/v1/snapshot?name=wc")
    assert status == 400 and error["parameter"] == "name"
