"""Worker log files read and tuned through LocalCluster (issue 13): what user code prints
is in its worker's log, tagged with its task; the level changes on a running topology."""

from __future__ import annotations

import pytest

from tests.integration.flow_components import Chatty, PacedSpout
from tests.integration.helpers import wait_for
from topology import LocalCluster, TopologyBuilder
from topology.deploy.log_requests import LogRequestError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_worker_logs_hold_user_output_by_task_and_the_level_changes_at_run_time() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", PacedSpout(10**9, 0.01))
    builder.set_bolt("chatty", Chatty(), parallelism=2).shuffle_grouping("numbers")

    def text(worker: int | None = None, component: str | None = None) -> str:
        chunks = cluster.worker_logs("logs", worker=worker, component=component)
        return "".join(chunk["text"] for chunk in chunks)

    with LocalCluster() as cluster:
        cluster.submit_topology("logs", {"topology.workers": 2}, builder.create_topology())
        mine = wait_for(lambda: text(worker=1), lambda t: "chatty got" in t, 30)
        assert " INFO [chatty:" in mine and "user.stdout: chatty got " in mine
        [chunk] = cluster.worker_logs("logs", worker=1)
        assert chunk["worker"] == 1 and chunk["path"].endswith("worker-1.log")
        assert "numbers" not in text(component="chatty")  # only chatty's lines
        assert "debug " not in text()

        replies = cluster.set_log_level("logs", "debug", revert_after=60)
        assert [r["level"] for r in replies] == ["DEBUG", "DEBUG"]
        wait_for(text, lambda t: "chatty: debug " in t, 30)

        with pytest.raises(LogRequestError, match="unknown log level 'loud'"):
            cluster.set_log_level("logs", "loud")
        with pytest.raises(LogRequestError, match="has no worker 7"):
            cluster.worker_logs("logs", worker=7)
