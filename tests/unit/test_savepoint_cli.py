"""``sparkstorm savepoint --inspect`` (text and JSON) and the savepoint flags' usage errors,
without a cluster."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# -- savepoint content is hostile: printed escaped, read from regular files only ---------------


def _with_fields(tmp_path: Path, **fields: str) -> str:
    writer = SavepointWriter(str(tmp_path), "wc")
    writer.add_scope("count", "count", [(b"\x00\x01k", b"\x05")])
    return writer.finish(
        topology_id=fields.get("topology_id", "wc-1-1"),
        checkpoint=1,
        key_groups=128,
        backend=fields.get("backend", "sqlite"),
        components={"count": {"uid": "count", "kind": "bolt", "tasks": 1, "state": ["keyed"]}},
    ).path


def _only_printable(out: str) -> bool:
    return all(c.isprintable() or c == "\n" for c in out)


def test_escape_sequences_in_the_metadata_are_printed_escaped(tmp_path: Path) -> None:
    path = _with_fields(
        tmp_path, topology_id="wc-1\x1b[2J\x1b]0;owned\x07\x9b31m", backend="sql\u202eetil\r"
    )
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", path], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert _only_printable(result.output)
    assert "(from wc-1\\x1b[2J\\x1b]0;owned\\x07\\x9b31m)" in result.output
    assert "the sql\\u202eetil\\r state provider" in result.output
    as_json = CliRunner().invoke(cli, ["savepoint", "--inspect", path, "--json"])
    assert _only_printable(as_json.output) and "\\u001b[2J" in as_json.output


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    topology_id=st.text(min_size=1, max_size=40),
    backend=st.text(alphabet=st.characters(max_codepoint=0x3000), min_size=1, max_size=20),
)
def test_any_text_in_the_metadata_is_printed_printable(
    tmp_path: Path, topology_id: str, backend: str
) -> None:
    path = _with_fields(tmp_path, topology_id=topology_id, backend=backend)
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", path], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert _only_printable(result.output)


@pytest.mark.timeout(20)
def test_a_fifo_as_metadata_is_refused_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "savepoint-fifo"
    folder.mkdir()
    os.mkfifo(folder / "_metadata.json")  # nobody writes to it: opening it would wait
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", str(folder)])
    assert time.monotonic() - started < 5
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: savepoint {folder}: _metadata.json is a FIFO or device, not a regular "
        "file: not read"
    ]


@pytest.mark.parametrize("kind", ["directory", "symlink", "device"])
def test_other_files_than_regular_ones_are_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "savepoint-odd"
    folder.mkdir()
    metadata = folder / "_metadata.json"
    if kind == "directory":
        metadata.mkdir()
    elif kind == "symlink":
        (tmp_path / "elsewhere.json").write_text("{}")
        metadata.symlink_to(tmp_path / "elsewhere.json")
    else:
        metadata.symlink_to("/dev/zero")
    result = CliRunner().invoke(cli, ["savepoint", "--inspect", str(folder)])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "not read" in result.output or "is a directory" in result.output.lower()
