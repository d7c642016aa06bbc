"""A LocalCluster worker that dies before its code runs: the error says why."""

from __future__ import annotations

import pytest

from tests.integration.flow_components import PacedSpout
from tests.integration.stats_components import CountingSink
from topology import LocalCluster, TopologyBuilder
from topology.deploy import shipping
from topology.deploy.local.topology import ClusterError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_worker_that_cannot_import_sparkstorm_names_the_import_error(tmp_path, monkeypatch):
    """What a bare checkout run from the wrong place used to report as only "pid N exited
    with code 1": the worker's own last stderr line now comes with it."""
    broken = tmp_path / "topology"
    broken.mkdir()
    (broken / "__init__.py").write_text(
        'raise RuntimeError("sparkstorm test: broken on purpose")\n'
    )
    monkeypatch.setattr(shipping, "package_root", lambda: str(tmp_path))  # first on the path

    builder = TopologyBuilder()
    builder.set_spout("paced", PacedSpout(5, 0.1))
    builder.set_bolt("count", CountingSink()).shuffle_grouping("paced")
    with LocalCluster() as cluster, pytest.raises(ClusterError) as failed:
        cluster.submit_topology("broken", {"topology.workers": 1}, builder.create_topology())

    message = str(failed.value)
    assert "worker 0 failed to start" in message
    assert "exited with code 1" in message
    assert "sparkstorm test: broken on purpose" in message
