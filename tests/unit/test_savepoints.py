"""Savepoints without workers: the format (written in chunks, metadata last, read back),
``--inspect``'s description, taking one from a state backend that goes on checkpointing,
the checks of a restore against a new topology, and seeding the new topology's backend."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder
from topology import config as cfg
from topology.deploy.savepoint_restore import plan_restore, restore_savepoint
from topology.deploy.savepoints import Waiting, savepoints_dir, state_components, take_savepoint
from topology.errors import ConfigError
from topology.state.backends import MemoryBackend, open_backend, remove_state
from topology.state.kv import key_bytes, stored_key
from topology.state.savepoint import (
    METADATA,
    SavepointError,
    SavepointWriter,
    read_savepoint,
    read_scope,
)

pytestmark = pytest.mark.timeout(60)

ALL = lambda key: True  # noqa: E731


class Words(ReplayableSpout):
    outputs = ["word"]

    def next_tuple(self) -> None:
        pass

    def position(self) -> int:
        return 0

    def seek(self, position: Any) -> None:
        pass


class Count(StatefulBolt):
    outputs = ["word", "count"]

    def execute(self, tup: Any) -> None:
        pass


class StrictCount(Count):
    """Version 2: refuses a count that is not an int at submit."""

    def check_state(self, key: Any, value: Any) -> None:
        if not isinstance(value, int):
            raise TypeError(f"a count must be an int, got {type(value).__name__}")


def topology(bolt: Any = None, bolt_id: str = "count", uid: str | None = None, tasks: int = 2):
    builder = TopologyBuilder()
    builder.set_spout("words", Words(), 1)
    builder.set_bolt(bolt_id, bolt or Count(), tasks, uid=uid).fields_grouping("words", ["word"])
    return builder.create_topology()


CONF = cfg.resolve({cfg.CHECKPOINT_INTERVAL_MS: 100, cfg.CHECKPOINT_TIMEOUT_SECS: 1})


def record(top: Any = None, conf: dict[str, Any] = CONF) -> dict[str, Any]:
    return {"name": "wc", "conf": conf, "components": state_components(top or topology())}


def counts(n: int, checkpoint: int) -> list[tuple[bytes, bytes | None]]:
    import msgpack

    return [(key_bytes(f"w{i}"), msgpack.packb(i * checkpoint)) for i in range(n)]


def checkpoint(backend: Any, k: int, n: int = 50) -> None:
    backend.write(k, 1, "count", counts(n, k))
    backend.write(k, 1, "words#0", [(b"position", str(k).encode()), (b"tasks", b"\x01")])
    backend.complete(k, 1, {})


def _savepoint(tmp_path: Path, n: int = 50, top: Any = None) -> Any:
    """A savepoint of a memory backend where checkpoints 1 and 2 are complete and 3
    completes while it waits."""
    backend = MemoryBackend()
    checkpoint(backend, 1, n)
    checkpoint(backend, 2, n)
    waiting = Waiting(timeout=5, sleep=lambda s: None, tick=lambda: checkpoint(backend, 3, n))
    return take_savepoint(
        backend, record(top), str(tmp_path), topology_id="wc-1-1", waiting=waiting
    )


def test_a_savepoint_holds_the_first_checkpoint_complete_after_the_call(tmp_path: Path) -> None:
    lines: list[str] = []
    backend = MemoryBackend()
    checkpoint(backend, 1)
    ticks = iter(range(2, 10))
    waiting = Waiting(
        timeout=5, sleep=lambda s: None, tick=lambda: checkpoint(backend, next(ticks))
    )
    info = take_savepoint(
        backend,
        record(),
        str(tmp_path),
        topology_id="wc-1-1",
        progress=lines.append,
        waiting=waiting,
    )
    assert info.checkpoint == 2
    assert info.path.startswith(str(tmp_path / "savepoint-wc-"))
    assert sorted(info.scopes) == ["count", "words#0"]
    assert dict(read_scope(info, "count")) == dict(counts(50, 2))
    assert dict(read_scope(info, "words#0"))[b"position"] == b"2"
    assert any("checkpoint #2 complete" in line for line in lines)
    backend.complete(3, 1, {})  # unpinned after the copy: compacts as usual
    for k in range(4, 8):
        checkpoint(backend, k)
    with pytest.raises(Exception, match="checkpoint 2"):
        backend.pin(2)


def test_the_metadata_describes_the_topology_and_is_written_last(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    meta = json.loads((Path(info.path) / METADATA).read_text())
    assert meta["format"] == 1 and meta["topology"] == "wc" and meta["topology_id"] == "wc-1-1"
    assert meta["checkpoint"] == 3 and meta["key_groups"] == 128 and meta["backend"] == "sqlite"
    assert meta["components"]["count"] == {
        "uid": "count",
        "kind": "bolt",
        "tasks": 2,
        "state": ["keyed"],
    }
    assert meta["components"]["words"]["state"] == ["position"]
    assert meta["scopes"]["count"]["entries"] == 50
    assert read_savepoint(info.path) == info
    described = info.describe()
    assert described["components"]["count"]["entries"] == 50
    assert described["components"]["count"]["bytes"] == meta["scopes"]["count"]["bytes"] > 0
    # an unfinished savepoint (no metadata yet) is never taken for one
    writer = SavepointWriter(str(tmp_path), "half")
    writer.add_scope("count", "count", counts(3, 1))
    with pytest.raises(SavepointError, match=f"no savepoint at .*{METADATA} is missing"):
        read_savepoint(writer.path)
    writer.abort()
    assert not Path(writer.path).exists()


def test_a_large_scope_is_written_and_read_in_chunks(tmp_path: Path) -> None:
    writer = SavepointWriter(f"file://{tmp_path}", "big")
    n = 30_000
    writer.add_scope("count", "count", ((i.to_bytes(4, "big"), b"v") for i in range(n)))
    info = writer.finish(
        topology_id="big-1",
        checkpoint=1,
        key_groups=128,
        backend="memory",
        components={"count": {"uid": "count", "kind": "bolt", "tasks": 1, "state": ["keyed"]}},
    )
    assert info.path.startswith("file://")
    read = read_scope(read_savepoint(info.path), "count")
    assert next(read) == ((0).to_bytes(4, "big"), b"v")
    assert sum(1 for _ in read) == n - 1


def test_savepoints_go_to_any_fsspec_url(tmp_path: Path) -> None:
    info = take_savepoint(
        _backend_with(2),
        record(),
        f"memory://savepoints/{tmp_path.name}",
        topology_id="wc-1-1",
        newer_than=1,
        waiting=Waiting(timeout=1),
    )
    assert info.path.startswith(f"memory://savepoints/{tmp_path.name}/savepoint-wc-")
    assert dict(read_scope(read_savepoint(info.path), "count")) == dict(counts(50, 2))


def _backend_with(n: int) -> MemoryBackend:
    backend = MemoryBackend()
    for k in range(1, n + 1):
        checkpoint(backend, k)
    return backend


def test_no_checkpoint_in_time_and_no_state_are_errors(tmp_path: Path) -> None:
    clock = iter(range(100))
    waiting = Waiting(timeout=3, sleep=lambda s: None, clock=lambda: float(next(clock)))
    with pytest.raises(SavepointError, match=r"no checkpoint of topology 'wc' completed within 3s"):
        take_savepoint(_backend_with(1), record(), str(tmp_path), topology_id="x", waiting=waiting)
    builder = TopologyBuilder()
    builder.set_spout("words", Words(), 1)
    stateless = {
        "name": "s",
        "conf": CONF,
        "components": state_components(builder.create_topology()),
    }
    with pytest.raises(SavepointError, match="keeps no checkpointed state"):
        take_savepoint(MemoryBackend(), stateless, str(tmp_path), topology_id="x")
    assert list(tmp_path.iterdir()) == []


def test_the_directory_comes_from_the_argument_or_the_conf() -> None:
    assert savepoints_dir("s3://b/x", {cfg.SAVEPOINTS_DIR: "/y"}) == "s3://b/x"
    assert savepoints_dir(None, {cfg.SAVEPOINTS_DIR: None}, {cfg.SAVEPOINTS_DIR: "/y"}) == "/y"
    with pytest.raises(
        ConfigError, match=r"pass --dir URL .* or set topology.state.savepoints.dir"
    ):
        savepoints_dir(None, CONF)


# -- restoring -------------------------------------------------------------------------------


def test_a_savepoint_seeds_the_new_topology_as_its_first_checkpoint(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    conf = {**CONF, cfg.STATE_PROVIDER: "sqlite", cfg.STATE_DIR: str(tmp_path / "state")}
    lines: list[str] = []
    restore_savepoint(info.path, topology(StrictCount()), conf, "wc-2-1", progress=lines.append)
    backend = open_backend(conf, "wc-2-1")
    latest = backend.latest()
    assert latest >= 1 and backend.info(latest)["savepoint"] == info.path
    restored = backend.read(latest, "count", ALL)
    assert {stored_key(k): v for k, v in restored.items()} == {
        stored_key(k): v for k, v in counts(50, 3)
    }
    assert backend.read(latest, "words#0", ALL)[b"position"] == b"3"
    assert backend.reserve() > latest  # the coordinator's incarnation comes after it
    backend.close()
    remove_state(conf, "wc-2-1")


def test_a_renamed_component_restores_by_uid(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    plan = plan_restore(info, topology(bolt_id="counter", uid="count"), CONF, False)
    assert plan.scopes == ["count", "words#0"] and plan.dropped == []


def test_an_orphaned_uid_is_refused_unless_allowed(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    renamed = topology(bolt_id="counter")
    with pytest.raises(SavepointError) as refused:
        plan_restore(info, renamed, CONF, False)
    message = str(refused.value)
    assert "uid 'count'" in message and "--allow-non-restored-state" in message
    assert "uid='count'" in message
    plan = plan_restore(info, renamed, CONF, True)
    assert plan.dropped == ["count"] and plan.scopes == ["words#0"]


def test_other_key_groups_are_refused_naming_both(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    with pytest.raises(SavepointError, match=r"128 key groups, the new topology 64"):
        plan_restore(info, topology(), {**CONF, cfg.STATE_MAX_PARALLELISM: 64}, False)


def test_a_kind_of_state_the_new_component_lacks_is_refused(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    builder = TopologyBuilder()
    builder.set_spout("words", Words(), 1)
    builder.set_bolt("count", Count(), 2).shuffle_grouping("words")  # per-task state now
    with pytest.raises(SavepointError, match=r"component 'count' .* had keyed state, but the new"):
        plan_restore(info, builder.create_topology(), CONF, False)


def test_per_task_state_needs_the_same_task_count(tmp_path: Path) -> None:
    builder = TopologyBuilder()
    builder.set_spout("words", Words(), 1)
    builder.set_bolt("count", Count(), 2).shuffle_grouping("words")
    per_task = builder.create_topology()
    backend = MemoryBackend()
    backend.write(1, 1, "count#0", counts(3, 1))
    backend.complete(1, 1, {})
    backend.write(2, 1, "count#1", counts(3, 1))
    backend.complete(2, 1, {})
    info = take_savepoint(
        backend,
        record(per_task),
        str(tmp_path),
        topology_id="t",
        newer_than=1,
        waiting=Waiting(timeout=1),
    )
    builder = TopologyBuilder()
    builder.set_spout("words", Words(), 1)
    builder.set_bolt("count", Count(), 3).shuffle_grouping("words")
    with pytest.raises(SavepointError, match=r"had 2 task\(s\) of 'count', the new topology 3"):
        plan_restore(info, builder.create_topology(), CONF, False)
    # keyed state and positions move with a new task count
    assert plan_restore(_savepoint(tmp_path), topology(tasks=5), CONF, False).scopes


def test_check_state_refuses_a_value_naming_component_and_key(tmp_path: Path) -> None:
    import msgpack

    backend = _backend_with(2)
    backend.write(3, 1, "count", [(key_bytes("w7"), msgpack.packb("seven"))])
    backend.complete(3, 1, {})
    info = take_savepoint(
        backend,
        record(),
        str(tmp_path),
        topology_id="t",
        newer_than=2,
        waiting=Waiting(timeout=1),
    )
    conf = {**CONF, cfg.STATE_PROVIDER: "memory"}
    with pytest.raises(SavepointError, match=r"component 'count' refuses key 'w7'.*TypeError"):
        restore_savepoint(info.path, topology(StrictCount()), conf, "refused-1")
    assert open_backend(conf, "refused-1").latest() == 0  # nothing seeded
    restore_savepoint(info.path, topology(Count()), conf, "accepted-1")  # no hook: accepted
    assert open_backend(conf, "accepted-1").latest() >= 1


def test_a_corrupt_data_file_fails_the_restore_and_leaves_nothing(tmp_path: Path) -> None:
    info = _savepoint(tmp_path)
    data = Path(info.path) / info.scopes["count"].file
    data.write_bytes(data.read_bytes()[:-7])
    conf = {**CONF, cfg.STATE_PROVIDER: "sqlite", cfg.STATE_DIR: str(tmp_path / "state")}
    with pytest.raises(SavepointError, match=r"scope-\d+\.msgpack \(scope 'count'\)"):
        restore_savepoint(info.path, topology(), conf, "corrupt-1")
    assert not (tmp_path / "state" / "corrupt-1.sqlite").exists()


def test_a_savepoint_of_a_sqlite_store_that_workers_keep_writing(tmp_path: Path) -> None:
    """The workers (another instance, another thread) checkpoint and compact with one
    complete checkpoint retained while the savepoint copies: it is the pinned checkpoint's
    state exactly."""
    conf = {**CONF, cfg.STATE_DIR: str(tmp_path / "s"), cfg.CHECKPOINTS_RETAINED: 1}
    workers = open_backend(conf, "busy")
    checkpoint(workers, 1, 2000)
    stop = threading.Event()

    def keep_checkpointing() -> None:
        mine = open_backend(conf, "busy")
        k = 2
        while not stop.is_set():
            checkpoint(mine, k, 2000)
            k += 1
        mine.close()

    thread = threading.Thread(target=keep_checkpointing)
    thread.start()
    try:
        info = take_savepoint(
            open_backend(conf, "busy"),
            record(conf=conf),
            str(tmp_path),
            topology_id="busy",
            waiting=Waiting(timeout=10),
        )
    finally:
        stop.set()
        thread.join()
    assert dict(read_scope(info, "count")) == dict(counts(2000, info.checkpoint))
