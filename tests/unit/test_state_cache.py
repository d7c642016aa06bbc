"""The ``lmdb`` live state's byte-bounded write-back cache: against a dict on a tiny byte
budget (hypothesis), its bookkeeping, the segmented FIFO keeping a hot set through a scan,
hit and miss counts, and ``topology.state.cache.bytes`` validated."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from topology import config as cfg
from topology.errors import ConfigError
from topology.state.kv import key_bytes
from topology.state.live.factory import open_live_state
from topology.state.live.lmdb_store import OVERHEAD, LmdbState

GROUPS = 16
#: Room for two or three small entries: nearly every step evicts.
BUDGET = 3 * OVERHEAD
KEYS = st.one_of(st.integers(0, 12), st.sampled_from(["a", "b", "ü"]))
VALUES = st.one_of(st.integers(0, 2**40), st.text(max_size=120), st.none())
GONE = object()


class CacheModel(RuleBasedStateMachine):
    """An :class:`LmdbState` on :data:`BUDGET` bytes against ``data``, and the changes a
    checkpoint takes against ``dirty`` (what changed since the last take)."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="cache-model-")
        self.state = LmdbState(
            os.path.join(self.folder, "s"), GROUPS, cache_bytes=BUDGET, write_batch=2
        )
        self.data: dict[Any, Any] = {}
        self.dirty: dict[Any, Any] = {}

    def teardown(self) -> None:
        self.state.close()
        os.rmdir(self.folder)

    @rule(key=KEYS, value=VALUES)
    def put(self, key: Any, value: Any) -> None:
        self.state.put(key, value)
        self.data[key] = self.dirty[key] = value

    @rule(key=KEYS)
    def get(self, key: Any) -> None:
        assert self.state.get(key, "dflt") == self.data.get(key, "dflt")

    @rule(key=KEYS)
    def contains(self, key: Any) -> None:
        assert (key in self.state) == (key in self.data)

    @rule(key=KEYS)
    def delete(self, key: Any) -> None:
        self.state.delete(key)
        if self.data.pop(key, GONE) is not GONE:
            self.dirty[key] = GONE

    @rule()
    def take_changes(self) -> None:
        changes = dict(self.state.take_changes())
        expected = {
            key_bytes(k, GROUPS): None if v is GONE else msgpack.packb(v, use_bin_type=True)
            for k, v in self.dirty.items()
        }
        assert changes == expected
        self.dirty = {}

    @rule()
    def everything(self) -> None:
        assert dict(self.state.items()) == self.data

    @invariant()
    def bounded_and_consistent(self) -> None:
        s = self.state
        assert s._bytes <= BUDGET
        assert s._bytes == sum(s._cost.values())
        assert s._protected_bytes == sum(s._cost[k] for k in s._protected)
        assert not set(s._probation) & set(s._protected)
        assert set(s._probation) | set(s._protected) == set(s._cost)
        assert set(s._unwritten) <= set(s._cost)
        assert len(s._sizes) <= BUDGET // OVERHEAD + 1  # the last write's, not every one's


@pytest.mark.timeout(300)
def test_the_cache_on_a_tiny_byte_budget_behaves_as_a_dict() -> None:
    run_state_machine_as_test(
        CacheModel,
        settings=settings(
            max_examples=60,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_a_hot_set_read_twice_survives_a_scan_of_keys_read_once(tmp_path: Any) -> None:
    state = LmdbState(str(tmp_path / "s"), GROUPS, cache_bytes=40 * OVERHEAD)
    hot = [f"hot{i}" for i in range(10)]
    for key in hot:
        state.put(key, 1)
    state.take_changes()
    for _ in range(2):
        for key in hot:
            state.get(key)
    for i in range(1_000):  # a scan: far more than the cache holds, each read once
        state.put(i, state.get(i, 0) + 1)
    before = state.cache_stats()
    assert [state.get(key) for key in hot] == [1] * 10
    after = state.cache_stats()
    assert (after.hits - before.hits, after.misses - before.misses) == (10, 0)
    assert after.bytes <= 40 * OVERHEAD
    assert [state.get(i) for i in range(1_000)] == [1] * 1_000  # evicted, never lost
    state.close()


def test_hits_and_misses_count_reads(tmp_path: Any) -> None:
    state = LmdbState(str(tmp_path / "s"), GROUPS)
    state.get("a")  # from the store (absent): a miss
    state.get("a")  # a hit
    state.put("a", 1)
    assert "a" in state  # a hit
    stats = state.cache_stats()
    assert (stats.hits, stats.misses, stats.entries) == (2, 1, 1)
    assert stats.bytes == OVERHEAD + len(key_bytes("a", GROUPS))
    state.take_changes()  # written: charged its value too
    assert state.cache_stats().bytes == stats.bytes + len(msgpack.packb(1))
    state.close()


def test_a_value_that_grows_is_charged_anew_when_written(tmp_path: Any) -> None:
    state = LmdbState(str(tmp_path / "s"), GROUPS, cache_bytes=8 * OVERHEAD)
    for i in range(4):
        state.put(i, "")
    state.take_changes()
    state.put(0, "x" * (6 * OVERHEAD))  # charged as before until written
    state.take_changes()  # now charged its size: the others make room
    assert state.cache_stats().bytes <= 8 * OVERHEAD
    assert [state.get(i) for i in range(4)] == ["x" * (6 * OVERHEAD), "", "", ""]
    state.close()


def test_the_conf_bounds_the_cache_and_is_validated(tmp_path: Any) -> None:
    conf = {
        cfg.STATE_BACKEND: "lmdb",
        cfg.STATE_LOCAL_DIR: str(tmp_path),
        cfg.STATE_CACHE_BYTES: 1 << 20,
    }
    state = open_live_state(conf, location="t-0", key_groups=GROUPS, clock=lambda: 0.0)
    assert isinstance(state, LmdbState)
    assert (state.budget, state.capacity > 1 << 40) == (1 << 20, True)
    state.close()
    for bad in (1_000, -1, "64MB", 1.5, True):
        with pytest.raises(ConfigError, match=cfg.STATE_CACHE_BYTES):
            cfg.check_value(cfg.STATE_CACHE_BYTES, bad)
    with pytest.raises(ConfigError, match=cfg.STATE_CACHE_ENTRIES):
        cfg.check_value(cfg.STATE_CACHE_ENTRIES, 0)
    cfg.check_value(cfg.STATE_CACHE_ENTRIES, None)
    cfg.check_value(cfg.STATE_CACHE_BYTES, 1 << 16)
