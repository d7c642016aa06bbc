"""The state backends' savepoint support, for every provider: the scopes they hold, pinned
checkpoints that survive compaction (across instances: the CLI pins while the workers go on
checkpointing), the completion record's info, streamed reads, the number of checkpoints
retained (``topology.state.checkpoints.retained``) and removal under fsspec URLs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_state_backends import ALL, FACTORIES
from topology import config as cfg
from topology.state.backends import (
    CheckpointGone,
    DirectoryBackend,
    StateBackend,
    open_backend,
    remove_state,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=sorted(FACTORIES))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateBackend]:
    b = FACTORIES[request.param](tmp_path)
    yield b
    b.close()


def _checkpoint(backend: StateBackend, k: int, scope: str = "s") -> None:
    backend.write(k, 1, scope, [(b"hot", str(k).encode()), (f"k{k}".encode(), b"x")])
    backend.complete(k, 1, {"n": k})


def test_scopes_are_those_with_committed_rows(backend: StateBackend) -> None:
    assert backend.scopes() == []
    backend.write(1, 1, "count", [(b"a", b"1")])
    backend.write(1, 1, "words#0", [(b"position", b"3")])
    backend.write(1, 1, "count/windows", [(b"w", b"1")])
    assert backend.scopes() == []  # staged, not committed
    backend.complete(1, 1, {})
    backend.write(2, 1, "later", [(b"a", b"1")])  # in flight
    assert backend.scopes() == ["count", "count/windows", "words#0"]


def test_a_pinned_checkpoint_survives_compaction_until_unpinned(backend: StateBackend) -> None:
    for k in (1, 2):
        _checkpoint(backend, k)
    backend.pin(2)
    as_of_2 = backend.read(2, "s", ALL)
    for k in range(3, 12):
        _checkpoint(backend, k)
    assert backend.read(2, "s", ALL) == as_of_2 == {b"hot": b"2", b"k1": b"x", b"k2": b"x"}
    assert backend.info(2) == {"n": 2}
    assert backend.read(11, "s", ALL)[b"hot"] == b"11"
    backend.unpin(2)
    backend.unpin(2)  # unpinning twice is harmless
    _checkpoint(backend, 12)
    with pytest.raises(CheckpointGone, match="checkpoint 2 is not a complete checkpoint"):
        backend.info(2)
    assert backend.read(12, "s", ALL)[b"k1"] == b"x"  # what it needed was compacted, not lost


def test_only_a_kept_complete_checkpoint_can_be_pinned(backend: StateBackend) -> None:
    with pytest.raises(CheckpointGone, match=r"the newest is 0"):
        backend.pin(1)
    for k in range(1, 8):
        _checkpoint(backend, k)
    with pytest.raises(CheckpointGone, match=r"checkpoint 2 .*the newest is 7"):
        backend.pin(2)
    backend.write(8, 1, "s", [(b"a", b"1")])  # written, never completed
    with pytest.raises(CheckpointGone):
        backend.pin(8)
    backend.pin(7)
    backend.unpin(7)


def test_info_is_what_complete_recorded(backend: StateBackend) -> None:
    backend.write(1, 4, "s", [(b"a", b"1")])
    backend.complete(1, 4, {"duration": 0.25, "savepoint": "/x"})
    assert backend.info(1) == {"duration": 0.25, "savepoint": "/x"}
    with pytest.raises(CheckpointGone):
        backend.info(2)


def test_read_all_is_every_entry_of_the_scope(backend: StateBackend) -> None:
    backend.write(1, 1, "s", [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")])
    backend.complete(1, 1, {})
    backend.write(2, 1, "s", [(b"a", b"2"), (b"b", None)])
    backend.complete(2, 1, {})
    assert dict(backend.read_all(2, "s")) == backend.read(2, "s", ALL) == {b"a": b"2", b"c": b"1"}
    assert dict(backend.read_all(1, "s")) == {b"a": b"1", b"b": b"1", b"c": b"1"}
    assert list(backend.read_all(2, "none")) == []


@pytest.mark.parametrize("provider", ["memory", "sqlite", "directory"])
@pytest.mark.parametrize("retained", [1, 5])
def test_the_number_of_checkpoints_retained_comes_from_the_conf(
    tmp_path: Path, provider: str, retained: int
) -> None:
    conf = {
        cfg.STATE_PROVIDER: provider,
        cfg.STATE_DIR: str(tmp_path),
        cfg.CHECKPOINTS_RETAINED: retained,
    }
    backend = open_backend(conf, f"retained-{retained}")
    for k in range(1, 9):
        _checkpoint(backend, k)
    kept = [k for k in range(1, 9) if _complete(backend, k)]
    assert kept == list(range(9 - retained, 9))
    assert backend.read(8, "s", ALL)[b"k1"] == b"x"
    backend.close()
    remove_state(conf, f"retained-{retained}")


def _complete(backend: StateBackend, checkpoint: int) -> bool:
    try:
        backend.info(checkpoint)
    except CheckpointGone:
        return False
    return True


@pytest.mark.parametrize("kind", ["sqlite", "directory", "file-url"])
def test_a_pin_holds_for_every_instance_of_the_store(tmp_path: Path, kind: str) -> None:
    """The CLI's instance pins; the workers' instances (other processes) go on completing
    checkpoints and compacting: the pinned checkpoint stays whole."""
    workers, cli = FACTORIES[kind](tmp_path), FACTORIES[kind](tmp_path)
    for k in (1, 2):
        _checkpoint(workers, k)
    cli.pin(2)
    for k in range(3, 10):
        _checkpoint(workers, k)
    assert cli.read(2, "s", ALL) == {b"hot": b"2", b"k1": b"x", b"k2": b"x"}
    cli.unpin(2)
    _checkpoint(workers, 10)
    assert not _complete(cli, 2)
    workers.close()
    cli.close()


def test_directory_pin_refuses_a_checkpoint_a_compaction_may_have_missed(
    tmp_path: Path,
) -> None:
    """A pin written while ``retained`` newer checkpoints completed may have come too late
    for their compaction: refused (and removed) rather than trusted."""
    backend = DirectoryBackend(str(tmp_path / "d"), retained=2)
    for k in range(1, 4):
        _checkpoint(backend, k)
    backend.pin(3)
    backend.unpin(3)
    with pytest.raises(CheckpointGone):
        backend.pin(1)
    assert not (tmp_path / "d" / "pinned" / f"{1:012d}").exists()


def test_remove_deletes_a_directory_store_under_an_fsspec_url(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    url = f"memory://sparkstorm-remove/{tmp_path.name}"
    conf = {cfg.STATE_PROVIDER: "directory", cfg.STATE_DIR: url}
    backend = open_backend(conf, "gone-1")
    _checkpoint(backend, 1)
    keep = open_backend(conf, "other-1")
    _checkpoint(keep, 1)
    fs = fsspec.filesystem("memory")
    assert fs.exists(f"/sparkstorm-remove/{tmp_path.name}/gone-1/complete")
    remove_state(conf, "gone-1")
    assert not fs.exists(f"/sparkstorm-remove/{tmp_path.name}/gone-1")
    assert keep.latest() == 1  # another topology's state stays
    remove_state(conf, "never-there")
