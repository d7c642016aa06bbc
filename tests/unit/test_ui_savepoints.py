"""The savepoints taken of a topology: listed from its savepoint directory (newest first,
each read as hostile input) and served at ``/api/v1/topology/{name}/savepoints``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_ui_server import HeldView, get_json
from topology.state.savepoint import SavepointWriter, list_savepoints
from topology.ui.auth import UiSettings
from topology.ui.server import UiServer

pytestmark = pytest.mark.timeout(60)


def _take(directory: Path, topology: str, hour: int, entries: int) -> str:
    writer = SavepointWriter(str(directory), topology, datetime(2026, 11, 29, hour, tzinfo=UTC))
    writer.add_scope("count", "count", ((b"k%d" % i, b"v") for i in range(entries)))
    components = {"count": {"uid": "count", "kind": "bolt", "tasks": 1, "state": ["keyed"]}}
    info = writer.finish(
        topology_id=f"{topology}-1",
        checkpoint=hour,
        key_groups=128,
        backend="memory",
        components=components,
    )
    return info.path


def test_the_newest_savepoints_of_a_topology_come_first_and_others_are_left_out(
    tmp_path: Path,
) -> None:
    older = _take(tmp_path, "t", 1, 10)
    newer = _take(tmp_path, "t", 3, 20)
    _take(tmp_path, "t-2", 4, 5)  # another topology whose name starts the same
    unfinished = tmp_path / "savepoint-t-20261129T020000Z-abcdef"
    unfinished.mkdir()
    rows = list_savepoints(str(tmp_path), "t")
    assert [r["path"] for r in rows] == [newer, str(unfinished), older]
    assert rows[0]["created_at"] == "2026-11-29T03:00:00Z"
    assert (rows[0]["checkpoint"], rows[0]["entries"], rows[0]["topology_id"]) == (3, 20, "t-1")
    assert rows[0]["bytes"] > rows[2]["bytes"] > 0
    assert "_metadata.json is missing" in rows[1]["error"]
    assert list_savepoints(str(tmp_path), "t", limit=1) == rows[:1]
    assert list_savepoints(str(tmp_path / "none"), "t") == []


class SavepointsView(HeldView):
    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__()
        self.conf = conf

    def describe(self, name: str) -> dict[str, Any]:
        return {"id": name, "components": {}, "conf": self.conf}


def test_the_api_lists_them_from_the_topologys_savepoint_directory(tmp_path: Path) -> None:
    path = _take(tmp_path, "t", 5, 3)
    view = SavepointsView({"topology.state.savepoints.dir": str(tmp_path)})
    with UiServer(view, UiSettings(publish_interval=30.0), port=0) as server:
        status, body = get_json(server.url, "/api/v1/topology/t/savepoints")
        assert status == 200
        assert body["topology"] == "t" and body["directory"] == str(tmp_path)
        assert body["error"] is None and [s["path"] for s in body["savepoints"]] == [path]
        assert body["savepoints"][0]["entries"] == 3
        status, body = get_json(server.url, "/api/v1/topology/t/savepoints?x=1")
        assert status == 400 and body["parameter"] == "x"
        view.conf = {}
        status, body = get_json(server.url, "/api/v1/topology/t/savepoints")
        assert (status, body["directory"], body["savepoints"]) == (200, None, [])
