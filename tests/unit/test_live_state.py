"""Live state backends: the factory and its conf, directories, the cache bound, size(),
TTL sweeps with a simulated clock, streaming loads, stored values."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from topology import config as cfg
from topology.errors import ConfigError
from topology.state.kv import KeyValueState, key_bytes
from topology.state.live import LiveState, StateSize, stored_value
from topology.state.live.codec import encode_ttl
from topology.state.live.factory import BACKENDS, open_live_state, task_dir
from topology.state.live.lmdb_store import LmdbState
from topology.state.live.lmdb_ttl import LmdbTtlState
from topology.state.live.memory import TtlKeyValueState

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def conf(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {cfg.STATE_LOCAL_DIR: str(tmp_path), **extra}


def opened(tmp_path: Path, backend: str, **extra: Any) -> Any:
    return open_live_state(
        conf(tmp_path, **{cfg.STATE_BACKEND: backend}, **extra),
        location="topo-1/count#0",
        key_groups=128,
        clock=Clock(),
    )


def test_the_factory_opens_what_the_conf_names(tmp_path: Path) -> None:
    memory = open_live_state({}, location="t/c#0", key_groups=8, clock=Clock())
    assert type(memory) is KeyValueState and memory.key_groups == 8
    assert isinstance(memory, LiveState)
    ttl = opened(tmp_path, "memory", **{cfg.STATE_TTL_SECS: 5})
    assert isinstance(ttl, TtlKeyValueState) and ttl.ttl == 5.0
    disk = opened(tmp_path, "lmdb", **{cfg.STATE_CACHE_ENTRIES: 7})
    assert type(disk) is LmdbState and disk.capacity == 7 and isinstance(disk, LiveState)
    disk.close()
    disk_ttl = opened(tmp_path, "lmdb", **{cfg.STATE_TTL_SECS: 1.5})
    assert isinstance(disk_ttl, LmdbTtlState) and disk_ttl.ttl == 1.5
    disk_ttl.close()
    with pytest.raises(ConfigError, match="memory"):
        opened(tmp_path, "rocks")


def test_the_backend_names_are_the_choices_of_the_key() -> None:
    assert BACKENDS == ("memory", "lmdb")
    cfg.check_value(cfg.STATE_BACKEND, "lmdb")
    with pytest.raises(ConfigError, match="lmdb"):
        cfg.check_value(cfg.STATE_BACKEND, "rocksdb")


def test_a_task_directory_is_safe_distinct_cleared_at_open_and_deleted_at_close(
    tmp_path: Path,
) -> None:
    c = conf(tmp_path)
    paths = {task_dir(c, loc) for loc in ("t/c#0", "t/c#1", "t_c_0", "../../etc", "")}
    assert len(paths) == 5
    assert all(os.path.dirname(p) == str(tmp_path) for p in paths)
    assert all(os.path.basename(p) not in ("", ".", "..") for p in paths)
    path = task_dir(c, "topo-1/count#0")
    os.makedirs(path)
    Path(path, "stale").write_text("from an earlier run")
    state = opened(tmp_path, "lmdb")
    assert not os.path.exists(os.path.join(path, "stale")) and len(state) == 0
    state.put("k", 1)
    state.close()
    state.close()  # twice is fine
    assert not os.path.exists(path)


def test_the_default_local_dir_is_this_users_under_tmp() -> None:
    import tempfile

    mine = os.path.join(tempfile.gettempdir(), f"sparkstorm-{os.geteuid()}", "live")
    assert task_dir({}, "x").startswith(mine + os.sep)


def test_the_cache_stays_within_its_bound_and_writes_back_what_it_evicts(
    tmp_path: Path,
) -> None:
    state = LmdbState(str(tmp_path / "s"), cache_entries=100, write_batch=30)
    for i in range(1000):
        state.put(i, state.get(i, 0) + i)
        assert state._entries() <= 100 and len(state._unwritten) <= 100
    assert 900 <= state.size().keys < 1000  # the evicted entries are on disk
    assert [state.get(i) for i in range(0, 1000, 97)] == list(range(0, 1000, 97))
    assert state._entries() <= 100
    assert len(state) == 1000
    changes = state.take_changes()
    assert len(changes) == 1000 and state.take_changes() == []
    state.close()


def test_a_hot_key_is_written_once_per_checkpoint_not_per_put(tmp_path: Path) -> None:
    state = LmdbState(str(tmp_path / "s"), cache_entries=100)
    for _ in range(50):
        for key in range(10):
            state.put(key, state.get(key, 0) + 1)
    assert state.size().keys == 0  # all of it in the cache so far
    assert dict(state.take_changes()) == {key_bytes(k): msgpack.packb(50) for k in range(10)}
    assert state.size().keys == 10
    state.close()


def test_size_counts_keys_and_bytes(tmp_path: Path) -> None:
    memory = KeyValueState()
    assert memory.size() == StateSize(0, memory.size().bytes)
    for i in range(1000):
        memory.put(f"key{i}", i)
    size = memory.size()
    assert size.keys == 1000 and 50_000 < size.bytes < 500_000
    disk = LmdbState(str(tmp_path / "s"), write_batch=100)
    assert disk.size().keys == 0
    for i in range(1000):
        disk.put(f"key{i}", i)
    assert disk.size().keys == 0  # in the cache only
    disk.take_changes()  # a checkpoint writes them to disk
    assert disk.size().keys == 1000
    assert 10_000 < disk.size().bytes < 1_000_000
    disk.close()


def test_a_load_streams_and_replaces_everything(tmp_path: Path) -> None:
    consumed = []

    def entries() -> Iterator[tuple[bytes, bytes]]:
        for i in range(25_000):
            consumed.append(i)
            yield key_bytes(i), msgpack.packb(i * 2)

    state = LmdbState(str(tmp_path / "s"), cache_entries=10)
    state.put("old", 1)
    state.load(entries())
    assert len(consumed) == 25_000 and state.take_changes() == []
    assert "old" not in state and len(state) == 25_000 and state.get(24_999) == 49_998
    assert sum(1 for _ in state.items()) == 25_000
    state.close()
    memory = KeyValueState()
    memory.put("old", 1)
    memory.load(iter([(key_bytes("a"), msgpack.packb(1)), (key_bytes(["b", 2]), encode_ttl(3, 4))]))
    assert dict(memory.items()) == {"a": 1, ("b", 2): 4} and memory.take_changes() == []


def test_restore_still_makes_a_state() -> None:
    state = KeyValueState.restore({key_bytes("a", 4): msgpack.packb([1])}, key_groups=4)
    assert state.get("a") == [1] and state.key_groups == 4 and state.take_changes() == []


def test_stored_value_reads_both_forms() -> None:
    assert stored_value(msgpack.packb({"a": [1, 2]})) == {"a": [1, 2]}
    assert stored_value(encode_ttl(12.5, "v")) == "v"


@pytest.mark.parametrize("backend", ["memory", "lmdb"])
def test_keys_expire_ttl_seconds_after_their_last_put(tmp_path: Path, backend: str) -> None:
    clock = Clock(50.0)
    state = open_live_state(
        conf(tmp_path, **{cfg.STATE_BACKEND: backend, cfg.STATE_TTL_SECS: 10}),
        location="t/c#0",
        key_groups=128,
        clock=clock,
    )
    state.put("a", 1)
    state.put("b", 2)
    clock.now = 55.0
    state.put("b", 3)  # b's TTL starts again
    state.take_changes()
    clock.now = 59.9
    assert state.get("a") == 1 and "b" in state
    clock.now = 60.0
    assert state.get("a") is None and "a" not in state  # expired: dropped lazily
    assert state.get("b") == 3
    assert state.take_changes() == [(key_bytes("a"), None)]
    clock.now = 100.0
    assert sorted(state.items()) == []
    assert state.expire(100.0, 10) == 1  # b
    assert len(state) == 0
    assert state.take_changes() == [(key_bytes("b"), None)]
    state.close()


@pytest.mark.parametrize("backend", ["memory", "lmdb"])
def test_expire_drops_at_most_its_budget(tmp_path: Path, backend: str) -> None:
    clock = Clock(0.0)
    state = open_live_state(
        conf(tmp_path, **{cfg.STATE_BACKEND: backend, cfg.STATE_TTL_SECS: 1}),
        location="t/c#0",
        key_groups=128,
        clock=clock,
    )
    for i in range(100):
        clock.now = i / 100
        state.put(i, i)
    clock.now = 0.99
    for i in range(50):
        state.put(i, -i)  # written again at 0.99, as 99 was
    state.take_changes()
    assert state.expire(1.985, 0) == 0  # 50..98 (written at 0.50 .. 0.98) are expired
    assert state.expire(1.985, 20) == 20
    assert state.expire(1.985, 1000) == 29
    assert state.expire(1.985, 1000) == 0
    assert len(state) == 51 and state.get(0) == 0 and state.get(49) == -49
    assert len(state.take_changes()) == 49
    assert state.expire(3.0, 1000) == 51 and len(state) == 0
    state.close()


def test_a_restored_ttl_value_keeps_its_write_time(tmp_path: Path) -> None:
    clock = Clock(100.0)
    entries = [(key_bytes("old"), encode_ttl(91.0, "o")), (key_bytes("new"), encode_ttl(99.0, 1))]
    for state in (
        TtlKeyValueState(10.0, clock),
        LmdbTtlState(str(tmp_path / "s"), 10.0, clock, cache_entries=1),
    ):
        state.load(iter(entries))
        assert state.get("old") == "o"
        clock.now = 101.0
        assert "old" not in state and state.get("new") == 1
        assert dict(state.take_changes()) == {key_bytes("old"): None}
        clock.now = 100.0
        state.close()


def test_a_memory_state_without_ttl_is_the_plain_key_value_state() -> None:
    state = open_live_state(
        {cfg.STATE_BACKEND: "memory"}, location="x", key_groups=128, clock=Clock()
    )
    assert type(state) is KeyValueState
    assert state.expire(1e9, 100) == 0
    state.close()


def test_the_file_is_mapped_afresh_every_so_many_reads_without_losing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from topology.state.live import lmdb_store

    monkeypatch.setattr(lmdb_store, "REMAP_READS", 5)
    clock = Clock(0.0)
    for state in (
        LmdbState(str(tmp_path / "a"), cache_entries=2, write_batch=3),
        LmdbTtlState(str(tmp_path / "b"), 100.0, clock, cache_entries=2, write_batch=3),
    ):
        model: dict[int, int] = {}
        for i in range(300):
            key = (i * 37) % 41
            model[key] = state.get(key, 0) + 1
            state.put(key, model[key])
            seen = 0
            if i % 50 == 0:  # reads while an iteration holds the old mapping
                for key, value in state.items():
                    assert state.get(key) == model[key] == value
                    seen += 1
                assert seen == len(model)
        assert dict(state.items()) == model
        assert state.expire(50.0, 100) == 0
        state.close()


def test_opening_a_task_directory_again_closes_the_state_opened_there_before(
    tmp_path: Path,
) -> None:
    first = opened(tmp_path, "lmdb")
    first.put("a", 1)
    second = opened(tmp_path, "lmdb")  # a restore replaces the task's state
    assert first._closed and len(second) == 0
    second.put("b", 2)
    assert dict(second.items()) == {"b": 2}
    second.close()
