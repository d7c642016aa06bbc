"""The persistent "started" mark keeps when a worker *first* became ready in an attempt,
so a process that Spark relaunched by itself shows as a relaunch (its start is later) —
what tells a drain that counters lost with the dead process will never balance."""

from __future__ import annotations

import time
from typing import Any

import pytest

from topology import config as cfg
from topology.deploy.zk.state import ZkState

pytestmark = [pytest.mark.spark, pytest.mark.timeout(60)]


def test_a_relaunched_process_keeps_the_first_ready_time_of_its_attempt(
    zk_conf: dict[str, Any],
) -> None:
    with ZkState(cfg.resolve(zk_conf)) as zk:
        zk.client.ensure_path(zk.paths.storm("t-1"))
        zk.mark_started("t-1", 1, attempt=1)
        [first] = zk.first_ready_at("t-1", 1).values()
        relaunched_at = time.time()
        zk.mark_started("t-1", 1, attempt=1)  # the relaunched process becomes ready
        assert zk.first_ready_at("t-1", 1) == {1: first}
        assert first <= relaunched_at  # so its start (later) reads as a relaunch
        zk.mark_started("t-1", 1, attempt=2)  # a new attempt starts afresh
        assert zk.first_ready_at("t-1", 1) == {}
        assert zk.first_ready_at("t-1", 2)[1] >= relaunched_at
