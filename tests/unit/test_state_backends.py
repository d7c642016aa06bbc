"""Unit tests of the state backends (memory, SQLite, directory; an fsspec URL when fsspec is
installed): one contract, checked the same way for each."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from topology import config as cfg
from topology.errors import ConfigError
from topology.state.backends import (
    KEEP_COMPLETE,
    PROVIDERS,
    DirectoryBackend,
    MemoryBackend,
    SqliteBackend,
    StateBackend,
    open_backend,
    registry,
    remove_state,
)

pytestmark = pytest.mark.timeout(60)

ALL = lambda key: True  # noqa: E731


def _fsspec_memory(tmp_path: Path) -> StateBackend:
    pytest.importorskip("fsspec")
    return DirectoryBackend(f"memory://sparkstorm-test/{tmp_path.name}")


FACTORIES: dict[str, Callable[[Path], StateBackend]] = {
    "memory": lambda tmp: MemoryBackend(),
    "sqlite": lambda tmp: SqliteBackend(str(tmp / "state.sqlite")),
    "directory": lambda tmp: DirectoryBackend(str(tmp / "dir")),
    "file-url": lambda tmp: DirectoryBackend(f"file://{tmp}/url"),
    "fsspec-memory": _fsspec_memory,
}


@pytest.fixture(params=sorted(FACTORIES))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateBackend]:
    b = FACTORIES[request.param](tmp_path)
    yield b
    b.close()


def test_only_completed_checkpoints_are_read(backend: StateBackend) -> None:
    backend.write(1, 10, "count", [(b"a", b"1"), (b"b", b"1")])
    assert backend.read(1, "count", ALL) == {}  # written, not complete
    backend.complete(1, 10, {})
    assert backend.latest() == 1
    backend.write(2, 10, "count", [(b"a", b"2")])  # in flight
    assert backend.read(2, "count", ALL) == {b"a": b"1", b"b": b"1"}


def test_snapshots_are_incremental_and_deletes_hide_keys(backend: StateBackend) -> None:
    backend.write(1, 10, "s", [(b"a", b"1"), (b"b", b"1")])
    backend.complete(1, 10, {})
    backend.write(2, 10, "s", [(b"a", b"2"), (b"b", None)])
    backend.complete(2, 10, {})
    assert backend.read(2, "s", ALL) == {b"a": b"2"}
    assert backend.read(1, "s", ALL) == {b"a": b"1", b"b": b"1"}
    assert backend.read(2, "s", lambda key: key != b"a") == {}
    assert backend.read(2, "other", ALL) == {}


def test_rows_of_another_epoch_are_never_committed(backend: StateBackend) -> None:
    """A write that lands late from before a rollback, under the same checkpoint id, stays
    invisible: completion commits the (checkpoint, epoch) pair only."""
    backend.write(1, 10, "s", [(b"a", b"1")])
    backend.complete(1, 10, {})
    backend.write(2, 10, "s", [(b"a", b"stale")])  # epoch 10 rolled back before 2 completed
    backend.write(2, 11, "s", [(b"b", b"new")])
    backend.complete(2, 11, {})
    backend.write(2, 10, "s", [(b"c", b"later still")])
    assert backend.read(2, "s", ALL) == {b"a": b"1", b"b": b"new"}


def test_old_checkpoints_are_compacted_and_what_they_hold_survives(backend: StateBackend) -> None:
    for k in range(1, 11):
        backend.write(k, 1, "s", [(f"k{k}".encode(), str(k).encode()), (b"hot", str(k).encode())])
        backend.complete(k, 1, {})
    expected = {f"k{k}".encode(): str(k).encode() for k in range(1, 11)}
    assert backend.read(10, "s", ALL) == {**expected, b"hot": b"10"}
    # the last KEEP_COMPLETE checkpoints can still be restored exactly
    oldest = 10 - KEEP_COMPLETE + 1
    assert backend.read(oldest, "s", ALL)[b"hot"] == str(oldest).encode()


def test_a_scope_written_once_survives_every_later_compaction(backend: StateBackend) -> None:
    """A quiet scope (one write, e.g. a window key nobody touches again) outlives the
    completion record of its checkpoint."""
    backend.write(1, 1, "quiet", [(b"k", b"v")])
    for k in range(1, 3 * KEEP_COMPLETE + 2):
        backend.write(k, 1, "busy", [(b"n", str(k).encode())])
        backend.complete(k, 1, {})
        assert backend.read(k, "quiet", ALL) == {b"k": b"v"}, f"lost at checkpoint {k}"


def test_reserved_ids_grow_past_everything_written(backend: StateBackend) -> None:
    first = backend.reserve()
    backend.write(first + 5, 1, "s", [(b"a", b"1")])
    assert backend.reserve() > first + 5


def test_sqlite_and_directory_state_is_shared_between_instances(tmp_path: Path) -> None:
    """Another process (another worker of the machine, a restarted one) sees the same."""
    for make in (FACTORIES["sqlite"], FACTORIES["directory"]):
        one, two = make(tmp_path), make(tmp_path)
        one.write(1, 3, "s", [(b"a", b"1")])
        one.complete(1, 3, {"duration": 0.1})
        assert two.latest() == 1 and two.read(1, "s", ALL) == {b"a": b"1"}
        one.close()
        two.close()


def test_open_backend_by_provider_and_removal(tmp_path: Path) -> None:
    conf = {"topology.state.provider": "sqlite", "topology.state.dir": str(tmp_path)}
    b = open_backend(conf, "wc-1")
    b.write(1, 1, "s", [(b"a", b"1")])
    b.close()
    assert (tmp_path / "wc-1.sqlite").exists()
    remove_state(conf, "wc-1")
    assert not (tmp_path / "wc-1.sqlite").exists()
    conf["topology.state.provider"] = "directory"
    assert isinstance(open_backend(conf, "wc-2"), DirectoryBackend)
    remove_state(conf, "wc-2")
    assert not (tmp_path / "wc-2").exists()
    memory = {"topology.state.provider": "memory"}
    assert open_backend(memory, "x") is open_backend(memory, "x")
    with pytest.raises(ConfigError, match="memory, sqlite or directory"):
        open_backend({"topology.state.provider": "redis"}, "x")


def test_config_checks_the_provider_against_the_registry() -> None:
    assert list(PROVIDERS) == ["memory", "sqlite", "directory"]
    for bad in ("redis", ["sqlite"], 3):
        with pytest.raises(ConfigError, match="must be memory, sqlite or directory, got"):
            cfg.resolve({cfg.STATE_PROVIDER: bad})
    assert cfg.resolve({cfg.STATE_PROVIDER: "directory"})[cfg.STATE_PROVIDER] == "directory"


def test_a_provider_registers_itself_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new backend is one decorated class: config takes its name, open_backend and
    remove_state reach it."""
    monkeypatch.setattr(registry, "PROVIDERS", dict(registry.PROVIDERS))
    monkeypatch.setitem(cfg.SCHEMA, cfg.STATE_PROVIDER, cfg.SCHEMA[cfg.STATE_PROVIDER])
    removed: list[str] = []

    @registry.register("scratch")
    class ScratchBackend(MemoryBackend):
        @classmethod
        def open(cls, conf: Mapping[str, Any], state_id: str) -> ScratchBackend:
            return cls()

        @classmethod
        def remove(cls, conf: Mapping[str, Any], state_id: str) -> None:
            removed.append(state_id)

    conf = cfg.resolve({cfg.STATE_PROVIDER: "scratch"})
    assert isinstance(open_backend(conf, "t-1"), ScratchBackend)
    remove_state(conf, "t-1")
    assert removed == ["t-1"]
    with pytest.raises(ConfigError, match="memory, sqlite, directory or scratch, got 'redis'"):
        cfg.resolve({cfg.STATE_PROVIDER: "redis"})


def _open_together(path: str, barrier: Any, errors: Any) -> None:
    barrier.wait()
    try:
        backend = SqliteBackend(path)
        for checkpoint in range(1, 6):
            backend.write(checkpoint, 1, "scope", [(b"k", b"v")])
    except Exception as exc:  # reported to the test
        errors.put(repr(exc))


def test_sqlite_store_opened_by_many_processes_at_once(tmp_path: Path) -> None:
    """The worker processes of a machine create the same file at the same moment: none
    may fail with "database is locked" while another switches it to WAL."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier, errors = ctx.Barrier(16), ctx.Queue()
    path = str(tmp_path / "together.db")
    procs = [ctx.Process(target=_open_together, args=(path, barrier, errors)) for _ in range(16)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
    assert [proc.exitcode for proc in procs] == [0] * 16
    assert errors.empty(), errors.get()
