"""The nimbus deletes a killed topology's checkpoints when it removes the topology, for every
provider (fsspec URLs included), after checking the record; savepoints stay."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from topology import config as cfg
from topology.deploy.cluster.nimbus import Nimbus
from topology.deploy.cluster.plan import RemoveTopology
from topology.state.backends import open_backend

pytestmark = pytest.mark.timeout(60)


class FakeZk:
    """The two ZooKeeper reads and the removal the nimbus's RemoveTopology makes."""

    def __init__(self, records: dict[str, dict[str, Any]]) -> None:
        self.records = records
        self.removed: list[str] = []

    def read_record(self, topology_id: str) -> dict[str, Any] | None:
        return self.records.get(topology_id)

    def unowned(self, topology_id: str) -> str | None:
        return None

    def remove_topology(self, topology_id: str) -> None:
        self.removed.append(topology_id)
        self.records.pop(topology_id, None)


def nimbus(zk: FakeZk, secret: bytes | None = None) -> Nimbus:
    n = Nimbus.__new__(Nimbus)  # only what carry_out(RemoveTopology) uses
    n.zk = zk  # type: ignore[assignment]
    n.secret = secret
    n._state_removals = {}
    return n


def _stored(conf: dict[str, Any], topology_id: str) -> None:
    backend = open_backend(conf, topology_id)
    backend.write(1, 1, "count", [(b"a", b"1")])
    backend.complete(1, 1, {})
    backend.close()


@pytest.mark.parametrize("provider", ["sqlite", "directory", "directory-url", "fsspec"])
def test_removing_a_killed_topology_deletes_its_checkpoints(tmp_path: Path, provider: str) -> None:
    folder = {
        "sqlite": str(tmp_path),
        "directory": str(tmp_path),
        "directory-url": f"file://{tmp_path}",
        "fsspec": f"memory://nimbus-cleanup/{tmp_path.name}",
    }[provider]
    conf = {
        cfg.STATE_PROVIDER: provider.split("-")[0].replace("fsspec", "directory"),
        cfg.STATE_DIR: folder,
    }
    _stored(conf, "wc-1-100")
    _stored(conf, "other-2-100")
    savepoint = tmp_path / "savepoints" / "savepoint-wc-x"
    savepoint.mkdir(parents=True)
    zk = FakeZk({"wc-1-100": {"name": "wc", "conf": conf}, "other-2-100": {"conf": conf}})
    assert nimbus(zk).carry_out(RemoveTopology("wc-1-100"))
    assert zk.removed == ["wc-1-100"]
    assert open_backend(conf, "wc-1-100").latest() == 0  # gone: a new, empty store
    assert open_backend(conf, "other-2-100").latest() == 1  # another topology's stays
    assert savepoint.exists()


def test_a_record_that_fails_its_check_keeps_its_state_and_is_still_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a cluster secret, an unsigned (forged) record never chooses what gets deleted."""
    conf = {cfg.STATE_PROVIDER: "sqlite", cfg.STATE_DIR: str(tmp_path)}
    _stored(conf, "wc-1-100")
    zk = FakeZk({"wc-1-100": {"name": "wc", "conf": conf}})
    assert nimbus(zk, secret=b"s" * 32).carry_out(RemoveTopology("wc-1-100"))
    assert zk.removed == ["wc-1-100"]
    assert (tmp_path / "wc-1-100.sqlite").exists()
    assert "its checkpoints were not removed" in capsys.readouterr().err


def test_what_stopping_workers_store_after_the_removal_is_removed_a_shutdown_later(
    tmp_path: Path,
) -> None:
    conf = {cfg.STATE_PROVIDER: "directory", cfg.STATE_DIR: str(tmp_path)}
    conf[cfg.WORKER_SHUTDOWN_SECS] = 10
    _stored(conf, "wc-1-100")
    n = nimbus(FakeZk({"wc-1-100": {"name": "wc", "conf": conf}}))
    n.carry_out(RemoveTopology("wc-1-100"))
    _stored(conf, "wc-1-100")  # a worker's last checkpoint, as it stopped
    n._remove_state_again(time.time() + 1)
    assert (tmp_path / "wc-1-100").exists()  # not yet: the workers may still be stopping
    n._remove_state_again(time.time() + 16)
    assert not (tmp_path / "wc-1-100").exists()
    assert n._state_removals == {}
