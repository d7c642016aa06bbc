"""Pins left by a killed client: a pin whose process is gone (on this host) or whose lease
lapsed (a holder elsewhere) is dropped by the next compaction, so its checkpoint is
compacted like any other; a live holder's pin holds, and pinning again renews it; pin
records are read as hostile input."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topology.state.backends import (
    CheckpointGone,
    DirectoryBackend,
    SqliteBackend,
    StateBackend,
    pins,
)

pytestmark = pytest.mark.timeout(60)

WORKTREE = str(Path(__file__).resolve().parents[2])
OPENERS = {
    "sqlite": "SqliteBackend({path!r})",
    "directory": "DirectoryBackend({path!r})",
}


def _open(kind: str, tmp_path: Path) -> tuple[StateBackend, str]:
    path = str(tmp_path / ("state.sqlite" if kind == "sqlite" else "dir"))
    return (SqliteBackend(path) if kind == "sqlite" else DirectoryBackend(path)), path


def _checkpoint(backend: StateBackend, k: int) -> None:
    backend.write(k, 1, "s", [(b"hot", str(k).encode())])
    backend.complete(k, 1, {"n": k})


@pytest.mark.parametrize("kind", sorted(OPENERS))
def test_a_killed_clients_pin_is_dropped_at_the_next_compaction(tmp_path: Path, kind: str) -> None:
    backend, path = _open(kind, tmp_path)
    for k in (1, 2):
        _checkpoint(backend, k)
    client = (
        "import os, signal\n"
        "from topology.state.backends import SqliteBackend, DirectoryBackend\n"
        f"b = {OPENERS[kind].format(path=path)}\n"
        "b.pin(2)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": WORKTREE}
    done = subprocess.run([sys.executable, "-c", client], env=env, timeout=30, check=False)
    assert done.returncode == -9
    for k in range(3, 8):
        _checkpoint(backend, k)
    with pytest.raises(CheckpointGone):
        backend.info(2)  # compacted: the dead client's pin did not hold it
    assert backend.read(7, "s", lambda key: True) == {b"hot": b"7"}


@pytest.mark.parametrize("kind", sorted(OPENERS))
def test_a_live_holders_pin_holds_and_pinning_again_renews_it(tmp_path: Path, kind: str) -> None:
    backend, _ = _open(kind, tmp_path)
    for k in (1, 2):
        _checkpoint(backend, k)
    backend.pin(2)
    for k in range(3, 9):
        _checkpoint(backend, k)
    backend.pin(2)  # a renewal while it copies, long after 2 fell out of the retained
    for k in range(9, 12):
        _checkpoint(backend, k)
    assert backend.info(2) == {"n": 2}
    assert backend.read(2, "s", lambda key: True) == {b"hot": b"2"}
    backend.unpin(2)
    _checkpoint(backend, 12)
    with pytest.raises(CheckpointGone):
        backend.info(2)


@pytest.mark.parametrize("age", [pins.LEASE_SECS + 5, 5.0])
def test_a_pin_held_elsewhere_lapses_with_its_lease(tmp_path: Path, age: float) -> None:
    backend = DirectoryBackend(str(tmp_path / "dir"))
    for k in (1, 2):
        _checkpoint(backend, k)
    record = {"host": "another-host.invalid", "pid": os.getpid(), "at": time.time() - age}
    (tmp_path / "dir" / "pinned").mkdir(exist_ok=True)
    (tmp_path / "dir" / "pinned" / f"{2:012d}").write_text(json.dumps(record))
    for k in range(3, 8):
        _checkpoint(backend, k)
    if age > pins.LEASE_SECS:
        with pytest.raises(CheckpointGone):
            backend.info(2)
    else:
        assert backend.info(2) == {"n": 2}


def test_a_pin_held_elsewhere_in_sqlite_lapses_with_its_lease(tmp_path: Path) -> None:
    backend = SqliteBackend(str(tmp_path / "state.sqlite"))
    for k in (1, 2):
        _checkpoint(backend, k)
    backend.pin(2)
    old = {"host": "another-host.invalid", "pid": 1, "at": time.time() - pins.LEASE_SECS - 5}
    backend._db().execute("UPDATE pinned SET holder = ?", (json.dumps(old).encode(),))
    for k in range(3, 8):
        _checkpoint(backend, k)
    with pytest.raises(CheckpointGone):
        backend.info(2)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
def test_any_pin_record_parses_to_an_owner_or_none(raw: bytes) -> None:
    pin = pins.parse(raw, 123.0)
    assert (pin.host is None) == (pin.pid is None)
    if pin.host is None:
        assert pin.at == 123.0
    pins.stale(pin)  # never raises


def test_hostile_pin_records_have_no_owner() -> None:
    for raw in (
        b"",
        b"[]",
        b'{"host": 1, "pid": 2, "at": 3}',
        b'{"at": NaN, "host": "h", "pid": 1}',
        b"x" * (pins.MAX_RECORD_BYTES + 1),
        b"[" * 10_000,
    ):
        assert pins.parse(raw, 9.0) == pins.Pin(None, None, 9.0)


def test_renewing_renews_on_its_period_while_items_are_taken() -> None:
    now = [0.0]
    renewed: list[float] = []

    def tick() -> float:
        now[0] += 25.0
        return now[0]

    items = list(pins.renewing(range(6), lambda: renewed.append(now[0]), every=60.0, clock=tick))
    assert items == list(range(6))
    assert renewed and all(b - a >= 60.0 for a, b in zip(renewed, renewed[1:], strict=False))


def test_a_sqlite_store_from_before_pins_had_holders_gets_the_column(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE pinned (checkpoint INTEGER PRIMARY KEY)")
    db.execute("INSERT INTO pinned VALUES (1)")  # an old client's pin
    db.commit()
    db.close()
    backend = SqliteBackend(str(path))
    for k in (1, 2):
        _checkpoint(backend, k)
    for k in range(3, 8):
        _checkpoint(backend, k)
    assert backend.info(1) == {"n": 1}  # the old pin gets a lease from when it is seen
    holder = backend._db().execute("SELECT holder FROM pinned").fetchone()[0]
    assert pins.parse(holder, 0.0).at > 0.0


def test_a_dead_pid_in_another_pid_namespace_of_this_host_name_waits_for_the_lease() -> None:
    """A container sharing the host name but not the pids: its pin's pid means nothing
    here, so only the lease ends it."""
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    dead = int(gone.stdout)
    here = pins.Pin(pins.this_host(), dead, time.time())
    elsewhere = pins.Pin(f"{socket.gethostname()} pid:[1]", dead, time.time())
    assert pins.stale(here)
    assert not pins.stale(elsewhere)
    assert pins.stale(elsewhere, time.time() + pins.LEASE_SECS + 1)


def test_a_savepoint_renews_its_pin_while_it_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.test_savepoints import _backend_with, record
    from topology.deploy import savepoints

    backend = _backend_with(2)
    pinned: list[int] = []
    pin = backend.pin

    def counting_pin(checkpoint: int) -> None:
        pinned.append(checkpoint)
        pin(checkpoint)

    monkeypatch.setattr(backend, "pin", counting_pin)
    monkeypatch.setattr(
        savepoints, "Renewal", lambda renew: pins.Renewal(renew, every=0.0)
    )  # due at every entry
    info = savepoints.take_savepoint(
        backend,
        record(),
        str(tmp_path),
        topology_id="t",
        newer_than=1,
        waiting=savepoints.Waiting(timeout=1),
    )
    assert info.checkpoint == 2
    assert pinned[0] == 2 and len(pinned) > 50  # the pin, then a renewal an entry
    assert set(pinned) == {2}
