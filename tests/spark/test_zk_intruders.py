"""Without a secret, on a loopback ZooKeeper: another OS user and an anonymous client can
neither read nor delete, rewrite, re-ACL or add to any node of a running topology and its
nimbus (docs/SECURITY.md, "Without a secret: the local identity"); the topology runs on
with exact counts.

The other user is real: created here with ``useradd`` and removed afterwards; its client
is ``tests/spark/zk_intruder.py``, which drops to that user's uid before it does anything.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.components import PacedCountingSpout, SinkBolt
from tests.spark.helpers import acked_ids, all_ready, spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.deploy.error_log import error_entry
from topology.deploy.zk.local_identity import identity_path
from topology.deploy.zk.state import ZkState
from topology.testing import LocalStack

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

WORKTREE = Path(__file__).resolve().parents[2]


@pytest.fixture
def other_user() -> Iterator[dict[str, Any]]:
    """A second OS user made for this test (uid, gid, a home of its own), removed after."""
    useradd, userdel = shutil.which("useradd"), shutil.which("userdel")
    if useradd is None or userdel is None:
        pytest.skip("useradd/userdel are missing (Debian/Ubuntu package: passwd)")
    if os.geteuid() != 0:
        pytest.skip("creating a second OS user needs root")
    name = f"sst{uuid.uuid4().hex[:10]}"
    home = tempfile.mkdtemp(prefix="sparkstorm-intruder-")
    subprocess.run(
        [useradd, "--no-create-home", "--home-dir", home, "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        user = pwd.getpwnam(name)
        os.chown(home, user.pw_uid, user.pw_gid)
        yield {"name": name, "uid": user.pw_uid, "gid": user.pw_gid, "home": home}
    finally:
        subprocess.run([userdel, name], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def _intrude(user: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """Run the intruder as ``user`` on ``job``; what it reports."""
    job = {**job, "uid": user["uid"], "gid": user["gid"], "home": user["home"]}
    result = subprocess.run(
        [sys.executable, "-m", "tests.spark.zk_intruder"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=WORKTREE,
        env={**os.environ, "PYTHONPATH": str(WORKTREE)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _tree(zk: ZkState) -> dict[str, list[Any]]:
    """Every node under the root and its ACL, read as the owner."""
    out, level = {}, [zk.paths.root]
    while level:
        below = []
        for path in level:
            out[path] = list(zk.client.get_acls(path)[0])
            below += [f"{path}/{child}" for child in zk.client.get_children(path)]
        level = below
    return out


def _topology() -> Any:
    builder = TopologyBuilder()
    # paced (about 500 a second): the sink's values fit in one reply at the end
    builder.set_spout("numbers", PacedCountingSpout(every=5, pause=0.01))
    builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
    return builder.create_topology()


def test_another_user_and_an_anonymous_client_change_nothing_of_a_running_topology(
    stack: LocalStack, cluster: Cluster, zk_conf: dict[str, Any], other_user: dict[str, Any]
) -> None:
    zk = cluster.zk
    assert zk.owner_acl is not None, f"no local ZooKeeper identity ({identity_path()})"
    topology_id = cluster.submit_topology("guarded", {"topology.workers": 2}, _topology())
    beats = wait_for(lambda: all_ready(cluster, topology_id, 2), 90, "both workers ready")
    wait_for(lambda: spout_acked(cluster, "guarded", polling=True) > 100, 60, "acks")
    zk.report_error(topology_id, "sink", error_entry("sink", "an error node to attack"))
    leader = cluster.leader()
    attempt = zk.read_assignment(topology_id)["attempt"]

    tree = _tree(zk)
    for kind in ("storms", "code", "assignments", "drivers", "workerbeats", "started", "errors"):
        assert any(p.startswith(f"{zk.paths.root}/{kind}/{topology_id}") for p in tree), kind
    assert any(p.startswith(f"{zk.paths.nimbus_leader}/") for p in tree)
    assert {str(acl) for acl in tree.values()} == {str(zk.owner_acl)}, "a node open to others"

    report = _intrude(
        other_user,
        {
            "hosts": zk.hosts,
            "conf": zk_conf,
            "nodes": sorted(tree),
            "storms": zk.paths.storms,
            "victim_identity": str(identity_path()),
        },
    )
    assert report["uid"] == other_user["uid"]
    assert report["victim_identity"] == "PermissionError"
    assert report["identity"] == f"sparkstorm-{other_user['uid']}"
    connect = report["connect"]  # a sparkstorm client of that user: one line, with the fix
    assert "\n" not in connect and zk.paths.root in connect and "storm.zookeeper.root" in connect
    # the root's own parent is ZooKeeper's "/", open to all: deleting the root is refused
    # only because it is not empty
    root_delete = (zk.paths.root, "delete")
    for who in ("anonymous", "other_user"):
        assert report[who]["flooded"] == 0
        for path, tried in report[who]["nodes"].items():
            for attempt_name, got in tried.items():
                allowed = {
                    "NoAuthError",
                    "NotEmptyError" if (path, attempt_name) == root_delete else "",
                }
                assert got in allowed, f"{who}: {attempt_name} {path}: {got}"

    after = _tree(zk)
    assert set(tree) - set(after) == set(), "a node was deleted"
    assert not [p for p in after if "evil" in p or "junk" in p]
    assert {str(acl) for acl in after.values()} == {str(zk.owner_acl)}
    assert cluster.leader() == leader
    assert zk.read_assignment(topology_id)["attempt"] == attempt
    assert {w: b["pid"] for w, b in cluster.current_beats(topology_id).items()} == {
        w: b["pid"] for w, b in beats.items()
    }, "a worker was relaunched"
    running = spout_acked(cluster, "guarded")
    wait_for(lambda: spout_acked(cluster, "guarded", polling=True) > running + 100, 60, "acks")

    cluster.deactivate("guarded")
    cluster.wait_until_drained("guarded", timeout=60)
    acked = acked_ids(cluster, "guarded")
    assert acked == set(range(len(acked)))  # one spout task: 0, 1, 2, ... all acked
    seen = [n for values in cluster.results("guarded")["sink"].values() for n in values]
    assert sorted(seen) == sorted(acked)  # each exactly once
    assert zk.ignored == 0 and stack.nimbus.zk.ignored == 0
