"""Every live state backend against a dict model: random put / get / delete / in / merge /
take_changes / load / items sequences (hypothesis state machines), without and with a TTL
on a simulated clock."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from topology.state.checkpoint import hashable
from topology.state.kv import KeyValueState, key_bytes
from topology.state.live.codec import encode_ttl, stored_entry
from topology.state.live.lmdb_store import LmdbState
from topology.state.live.lmdb_ttl import LmdbTtlState
from topology.state.live.memory import TtlKeyValueState

GROUPS = 16
TTL = 2.0
KEYS = st.one_of(
    st.integers(-3, 12),
    st.sampled_from(["a", "b", "c", "ü"]),
    st.lists(st.integers(0, 2), min_size=1, max_size=2),
)
VALUES = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=4),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 9), max_size=2),
    st.none(),
)
DELETED = object()
SETTINGS = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def encode(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def concatenate(first: Any, second: Any) -> list[Any]:
    """An associative, non-commutative merge defined on every value: the order of merges
    and whether a backend combines deltas first both show."""
    return _items(first) + _items(second)


def plain_state(kind: str, folder: str) -> Any:
    if kind == "memory":
        return KeyValueState(None, GROUPS)
    if kind == "lmdb-small":  # a cache of 3 entries, written every 2 writes
        return LmdbState(os.path.join(folder, "s"), GROUPS, cache_entries=3, write_batch=2)
    if kind == "lmdb-bytes":  # a cache of ~3 entries' bytes
        return LmdbState(os.path.join(folder, "s"), GROUPS, cache_bytes=1500, write_batch=2)
    return LmdbState(os.path.join(folder, "s"), GROUPS)


def ttl_state(kind: str, folder: str, clock: Callable[[], float]) -> Any:
    if kind == "memory":
        return TtlKeyValueState(TTL, clock, GROUPS)
    if kind == "lmdb-small":
        path = os.path.join(folder, "s")
        return LmdbTtlState(path, TTL, clock, GROUPS, cache_entries=3, write_batch=2)
    if kind == "lmdb-bytes":
        path = os.path.join(folder, "s")
        return LmdbTtlState(path, TTL, clock, GROUPS, cache_bytes=1500, write_batch=2)
    return LmdbTtlState(os.path.join(folder, "s"), TTL, clock, GROUPS)


class PlainModel(RuleBasedStateMachine):
    """A state without a TTL against ``data`` / ``dirty`` dicts."""

    kind = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="live-model-")
        self.state = plain_state(self.kind, self.folder)
        self.state.combine = concatenate
        self.data: dict[Any, Any] = {}
        self.dirty: dict[Any, Any] = {}

    def teardown(self) -> None:
        self.state.close()
        os.rmdir(self.folder)
        assert not os.path.exists(os.path.join(self.folder, "s"))

    @rule(key=KEYS, value=VALUES)
    def put(self, key: Any, value: Any) -> None:
        self.state.put(key, value)
        self.data[hashable(key)] = self.dirty[hashable(key)] = value

    @rule(key=KEYS, value=VALUES)
    def merge(self, key: Any, value: Any) -> None:
        self.state.merge(key, value)
        old = self.data.get(hashable(key), DELETED)
        new = value if old is DELETED else concatenate(old, value)
        self.data[hashable(key)] = self.dirty[hashable(key)] = new

    @rule(key=KEYS)
    def get(self, key: Any) -> None:
        assert self.state.get(key, "dflt") == self.data.get(hashable(key), "dflt")

    @rule(key=KEYS)
    def contains(self, key: Any) -> None:
        assert (key in self.state) == (hashable(key) in self.data)

    @rule(key=KEYS)
    def delete(self, key: Any) -> None:
        self.state.delete(key)
        if self.data.pop(hashable(key), DELETED) is not DELETED:
            self.dirty[hashable(key)] = DELETED

    @rule()
    def take_changes(self) -> None:
        changes = self.state.take_changes()
        assert len(changes) == len({k for k, _ in changes})
        expected = {
            key_bytes(k, GROUPS): None if v is DELETED else encode(v) for k, v in self.dirty.items()
        }
        assert dict(changes) == expected
        self.dirty = {}

    @rule(keep=st.sets(st.integers(0, 30)), extra=st.lists(st.tuples(KEYS, VALUES), max_size=3))
    def load(self, keep: set[int], extra: list[tuple[Any, Any]]) -> None:
        content = {k: v for i, (k, v) in enumerate(self.data.items()) if i in keep}
        content.update({hashable(k): v for k, v in extra})
        self.state.load((key_bytes(k, GROUPS), encode(v)) for k, v in content.items())
        self.data, self.dirty = content, {}

    @invariant()
    def same_content(self) -> None:
        assert len(self.state) == len(self.data)
        assert sorted(map(repr, self.state.items())) == sorted(map(repr, self.data.items()))
        assert sorted(map(repr, self.state)) == sorted(map(repr, self.data))
        assert self.state.take_merge_errors() == []


class TtlModel(RuleBasedStateMachine):
    """A state with a TTL on a simulated clock against ``data`` (key -> (written, value))."""

    kind = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0
        self.folder = tempfile.mkdtemp(prefix="live-ttl-model-")
        self.state = ttl_state(self.kind, self.folder, lambda: self.now)
        self.state.combine = concatenate
        self.data: dict[Any, tuple[float, Any]] = {}
        self.dirty: dict[Any, Any] = {}

    def teardown(self) -> None:
        self.state.close()
        os.rmdir(self.folder)

    def live(self, key: Any) -> bool:
        """As the state reads it: an expired key is dropped (and recorded deleted)."""
        entry = self.data.get(key)
        if entry is None:
            return False
        if self.now - entry[0] >= TTL:
            del self.data[key]
            self.dirty[key] = DELETED
            return False
        return True

    @rule(secs=st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0]))
    def advance(self, secs: float) -> None:
        self.now += secs

    @rule(key=KEYS, value=VALUES)
    def put(self, key: Any, value: Any) -> None:
        self.state.put(key, value)
        self.data[hashable(key)] = (self.now, value)
        self.dirty[hashable(key)] = (self.now, value)

    @rule(key=KEYS, value=VALUES)
    def merge(self, key: Any, value: Any) -> None:
        self.state.merge(key, value)
        key = hashable(key)
        new = concatenate(self.data[key][1], value) if self.live(key) else value
        self.data[key] = self.dirty[key] = (self.now, new)

    @rule(key=KEYS)
    def get(self, key: Any) -> None:
        key = hashable(key)
        expected = self.data[key][1] if self.live(key) else "dflt"
        assert self.state.get(key, "dflt") == expected

    @rule(key=KEYS)
    def contains(self, key: Any) -> None:
        key = hashable(key)
        assert (key in self.state) == self.live(key)

    @rule(key=KEYS)
    def delete(self, key: Any) -> None:
        self.state.delete(key)
        if self.data.pop(hashable(key), DELETED) is not DELETED:
            self.dirty[hashable(key)] = DELETED

    @rule()
    def expire_all(self) -> None:
        expired = [k for k, (at, _) in self.data.items() if self.now - at >= TTL]
        assert self.state.expire(self.now, 1000) == len(expired)
        for key in expired:
            del self.data[key]
            self.dirty[key] = DELETED

    @rule()
    def take_changes(self) -> None:
        expected = {
            key_bytes(k, GROUPS): None if v is DELETED else encode_ttl(*v)
            for k, v in self.dirty.items()
        }
        assert dict(self.state.take_changes()) == expected
        self.dirty = {}

    @rule(plain=st.booleans())
    def load(self, plain: bool) -> None:
        """Restore the content (stored with its times, or plain: written now)."""
        entries = [
            (key_bytes(k, GROUPS), encode(v) if plain else encode_ttl(at, v))
            for k, (at, v) in self.data.items()
        ]
        self.state.load(iter(entries))
        if plain:
            self.data = {k: (self.now, v) for k, (_, v) in self.data.items()}
        self.dirty = {}

    @invariant()
    def same_content(self) -> None:
        unexpired = {k: v for k, (at, v) in self.data.items() if self.now - at < TTL}
        assert sorted(map(repr, self.state.items())) == sorted(map(repr, unexpired.items()))
        assert len(self.state) == len(self.data)  # expired but not dropped yet included


def machine(base: type[RuleBasedStateMachine], kind: str) -> type[RuleBasedStateMachine]:
    return type(f"{base.__name__}_{kind}", (base,), {"kind": kind})


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["memory", "lmdb", "lmdb-small", "lmdb-bytes"])
def test_a_state_without_ttl_behaves_as_a_dict(kind: str) -> None:
    run_state_machine_as_test(machine(PlainModel, kind), settings=SETTINGS)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["memory", "lmdb", "lmdb-small", "lmdb-bytes"])
def test_a_state_with_ttl_behaves_as_a_dict_of_timed_values(kind: str) -> None:
    run_state_machine_as_test(machine(TtlModel, kind), settings=SETTINGS)


def test_the_model_reads_stored_ttl_values_back() -> None:
    assert stored_entry(encode_ttl(5.0, [1, "x"])) == (5.0, [1, "x"])
    assert stored_entry(encode({"a": 1})) == (None, {"a": 1})
