"""A savepoint's files read as hostile input: whatever ``_metadata.json`` or a data file
holds, reading it gives a savepoint or a :class:`SavepointError` naming the file and the
field, never another exception; no data file outside the savepoint's directory is read."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology.state.savepoint import (
    METADATA,
    SavepointError,
    SavepointWriter,
    read_savepoint,
    read_scope,
)

pytestmark = pytest.mark.timeout(120)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def _valid(tmp_path: Path) -> tuple[str, dict[str, Any]]:
    writer = SavepointWriter(str(tmp_path), "wc")
    writer.add_scope("count", "count", [(b"\x00\x01k", b"\x01")])
    writer.add_scope("words#0", "words", [(b"position", b"\x05")])
    info = writer.finish(
        topology_id="wc-1-1",
        checkpoint=4,
        key_groups=128,
        backend="sqlite",
        components={
            "count": {"uid": "count", "kind": "bolt", "tasks": 2, "state": ["keyed"]},
            "words": {"uid": "words", "kind": "spout", "tasks": 1, "state": ["position"]},
        },
    )
    return info.path, info.metadata()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _read_all(path: str) -> None:
    info = read_savepoint(path)
    for scope in info.scopes:
        list(read_scope(info, scope))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_change_to_the_metadata_is_read_or_refused_cleanly(tmp_path: Path, data: Any) -> None:
    path, meta = _valid(tmp_path)
    hostile = copy.deepcopy(meta)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(_paths(hostile)))
        if not where:
            hostile = data.draw(JSON)
            break
        parent = hostile
        for part in where[:-1]:
            parent = parent[part]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = data.draw(JSON)
        if not isinstance(hostile, dict):
            break
    (Path(path) / METADATA).write_text(json.dumps(hostile))
    try:
        _read_all(path)
    except SavepointError as exc:
        assert METADATA in str(exc) or ".msgpack" in str(exc)
        assert "\n" not in str(exc)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=300))
def test_any_bytes_as_metadata_or_data_are_refused_cleanly(tmp_path: Path, raw: bytes) -> None:
    path, meta = _valid(tmp_path)
    (Path(path) / meta["scopes"]["count"]["file"]).write_bytes(raw)
    try:
        _read_all(path)
    except SavepointError as exc:
        assert "scope 'count'" in str(exc)
    (Path(path) / METADATA).write_bytes(raw)
    with pytest.raises(SavepointError, match=METADATA):
        _read_all(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            ("scopes", "count", "file"),
            "../../etc/passwd",
            "field 'scopes.count.file': must be a file name",
        ),
        (("scopes", "count", "file"), "/etc/passwd", "field 'scopes.count.file'"),
        (("scopes", "count", "file"), ".hidden", "field 'scopes.count.file'"),
        (("scopes", "count", "uid"), "ghost", "field 'scopes.count.uid': 'ghost' is the uid of no"),
        (("scopes", "count", "uid"), "words", "scope 'count' is not one of uid 'words'"),
        (("format",), 2, "reads savepoint format 1, got 2"),
        (("key_groups",), 0, "field 'key_groups': must be an integer from 1 to"),
        (("checkpoint",), "4", "field 'checkpoint': must be an integer"),
        (("components", "count", "tasks"), True, "field 'components.count.tasks'"),
        (("components", "count", "kind"), {"a": 1}, "must be 'spout' or 'bolt', got a dict"),
        (("topology",), "a/b", "field 'topology': invalid name"),
    ],
)
def test_bad_fields_are_named(
    tmp_path: Path, field: tuple[str, ...], value: Any, message: str
) -> None:
    path, meta = _valid(tmp_path)
    parent = meta
    for part in field[:-1]:
        parent = parent[part]
    parent[field[-1]] = value
    (Path(path) / METADATA).write_text(json.dumps(meta))
    with pytest.raises(SavepointError, match=f"savepoint {path}: {METADATA}: .*") as refused:
        read_savepoint(path)
    assert message in str(refused.value)


def test_entries_other_than_the_metadata_says_are_refused(tmp_path: Path) -> None:
    path, meta = _valid(tmp_path)
    meta["scopes"]["count"]["entries"] = 2
    (Path(path) / METADATA).write_text(json.dumps(meta))
    with pytest.raises(SavepointError, match=r"holds 1 entries, _metadata.json says 2"):
        _read_all(path)
    meta["scopes"]["count"]["entries"] = 0
    (Path(path) / METADATA).write_text(json.dumps(meta))
    with pytest.raises(SavepointError, match=r"holds more than 0 entries"):
        _read_all(path)
    (Path(path) / meta["scopes"]["count"]["file"]).unlink()
    with pytest.raises(SavepointError, match=r"scope-00000.msgpack \(scope 'count'\) is missing"):
        _read_all(path)


def test_an_oversized_metadata_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import topology.state.savepoint as savepoint

    path, _ = _valid(tmp_path)
    monkeypatch.setattr(savepoint, "MAX_METADATA_BYTES", 100)
    with pytest.raises(SavepointError, match=r"bytes, more than 100"):
        read_savepoint(path)


@pytest.mark.timeout(20)
def test_a_data_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    path, meta = _valid(tmp_path)
    data = Path(path) / meta["scopes"]["count"]["file"]
    data.unlink()
    os.mkfifo(data)  # nobody writes to it: reading it would wait for ever
    with pytest.raises(SavepointError, match=r"\(scope 'count'\) is a FIFO or device, not a regu"):
        _read_all(path)
    data.unlink()
    data.symlink_to("/etc/passwd")
    with pytest.raises(SavepointError, match=r"\(scope 'count'\) is a symbolic link: not read"):
        _read_all(path)


def test_a_data_file_larger_than_the_metadata_says_is_not_read(tmp_path: Path) -> None:
    path, meta = _valid(tmp_path)
    data = Path(path) / meta["scopes"]["count"]["file"]
    data.write_bytes(data.read_bytes() + b"\x90" * 1000)
    with pytest.raises(SavepointError, match=r"has 1,0\d\d bytes, more than \d+: not read"):
        _read_all(path)


def test_metadata_of_empty_arrays_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path, _ = _valid(tmp_path)
    (Path(path) / METADATA).write_bytes(b"[" + b"[]," * 100_000 + b"[]]")
    with pytest.raises(SavepointError, match=r"100,002 arrays and objects in 300,004 bytes"):
        read_savepoint(path)
