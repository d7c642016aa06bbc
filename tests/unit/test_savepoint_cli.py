"""``sparkstorm savepoint --inspect`` (text and JSON) and the savepoint flags' usage errors,
without a cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from topology.state.savepoint import SavepointWriter

pytestmark = pytest.mark.timeout(60)


def _savepoint(tmp_path: Path) -> str:
    writer = SavepointWriter(str(tmp_path), "wc")
    writer.add_scope("count", "count", [(b"\x00\x01k%d" % i, b"\x05") for i in range(1500)])
    writer.add_scope("words#0", "words", [(b"position", b"\x05")])
    return writer.finish(
        topology_id="wc-3-1767225600",
        checkpoint=42,
        key_groups=128,
        backend="sqlite",
        components={
            "counter": {"uid": "count", "kind": "bolt", "tasks": 2, "state": ["keyed"]},
            "words": {"uid": "words", "kind": "spout", "tasks": 1, "state": ["position"]},
            "split": {"uid": "split", "kind": "bolt", "tasks": 4, "state": []},
        },
    ).path


def test_inspect_prints_what_the_savepoint_holds(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", path], terminal_width=120)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"Savepoint {path} (format 1)" in out
    assert "Topology: wc (from wc-3-1767225600)" in out
    assert "Checkpoint: #42" in out and "sqlite" in out and "Key groups: 128" in out
    [counter] = [line for line in out.splitlines() if "counter" in line]
    assert "count" in counter and "keyed" in counter and "1,500" in counter
    [split] = [line for line in out.splitlines() if "split" in line]
    assert " - " in split and " 0 " in split


def test_inspect_as_json(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", path, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["path"] == path and data["checkpoint"] == 42 and data["key_groups"] == 128
    assert data["components"]["counter"]["entries"] == 1500
    assert data["components"]["words"] == {
        "uid": "words",
        "kind": "spout",
        "tasks": 1,
        "state": ["position"],
        "entries": 1,
        "bytes": data["scopes"]["words#0"]["bytes"],
    }


def test_inspect_of_no_savepoint_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: no savepoint at {tmp_path}: _metadata.json is missing (not a savepoint, or "
        "one that was never finished)"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["savepoint"], "give the NAME of a running topology, or --inspect PATH"),
        (["savepoint", "wc", "--inspect", "x"], "--inspect PATH takes no NAME or --dir"),
        (["savepoint", "wc", "--json"], "--json goes with --inspect PATH"),
        (["savepoint", "bad/name"], "invalid topology name"),
        (["kill", "wc", "--dir", "/x"], "--dir goes with --savepoint"),
        (
            ["submit", "x.py:t", "--name", "wc", "--allow-non-restored-state"],
            "--allow-non-restored-state goes with --from-savepoint PATH",
        ),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
