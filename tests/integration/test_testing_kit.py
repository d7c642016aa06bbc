"""The testing kit on a LocalCluster: simulated time, feeding a running FeederSpout, and
capturing what components emit per stream while the topology runs."""

from __future__ import annotations

import time

import pytest

from tests.integration.testkit_components import Shout, TickCounter
from topology import ClusterError, LocalCluster, TopologyBuilder
from topology import config as cfg
from topology.testing import Capture, FeedError, FeederSpout, complete_topology, with_capture

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TIMEOUT_SECS = 20


def test_ticks_and_message_timeouts_follow_simulated_time() -> None:
    feeder = FeederSpout(["word"])
    builder = TopologyBuilder()
    builder.set_spout("words", feeder)
    builder.set_bolt("ticks", TickCounter(), parallelism=2).shuffle_grouping(
        "words"
    ).add_configuration(cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 10)
    conf = {cfg.TOPOLOGY_WORKERS: 2, cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS: TIMEOUT_SECS}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("sim", conf, with_capture(builder.create_topology()))
        capture = Capture(cluster, "sim")
        began = time.monotonic()
        assert cluster.advance_time(29.9) == pytest.approx(29.9)
        assert sorted(cluster.results("sim")["ticks"].values()) == [2, 2]
        cluster.advance_time(0.1)
        assert sorted(cluster.results("sim")["ticks"].values()) == [3, 3]
        assert time.monotonic() - began < 3.0  # 30 simulated seconds, no real waiting

        msg_id = feeder.feed(["never acked"])  # TickCounter never acks: the tree pends
        capture.wait_for("words", 1)
        cluster.advance_time(TIMEOUT_SECS - 0.5, step=TIMEOUT_SECS / 4)
        assert capture.observe().failures("words") == []
        cluster.advance_time(TIMEOUT_SECS)  # past 1.5 x the timeout (rotating buckets)
        assert capture.observe().failures("words") == [(msg_id, "timeout")]


def test_feed_a_running_topology_and_capture_each_stream() -> None:
    feeder = FeederSpout(["word"], [["a"]])
    builder = TopologyBuilder()
    builder.set_spout("words", feeder, parallelism=2)
    builder.set_bolt("shout", Shout(), parallelism=2).shuffle_grouping("words")
    with LocalCluster() as cluster:
        cluster.submit_topology(
            "fed", {cfg.TOPOLOGY_WORKERS: 2}, with_capture(builder.create_topology())
        )
        capture = Capture(cluster, "fed")
        assert capture.wait_for("shout", 1) == [["A"]]
        assert feeder.feed(["bb"]) == 1
        assert sorted(capture.wait_for("shout", 2)) == [["A"], ["BB"]]
        feeder.feed(["ccc"])
        assert sorted(capture.wait_for("shout", 3, stream="lengths")) == [
            ["a", 1],
            ["bb", 2],
            ["ccc", 3],
        ]
        done = capture.wait_until(lambda o: sorted(o.acked("words")) == [0, 1, 2], "3 acks")
        assert done.failed("words") == []
        with pytest.raises(FeedError, match=r"component 'words'.*declares 1 field"):
            feeder.feed(["too", "many"])
        with pytest.raises(AssertionError, match=r"'shout/lengths': 3.*\['ccc', 3\]"):
            capture.wait_for("shout", 4, stream="lengths", timeout=0.2)
        with pytest.raises(ClusterError, match="runs on real time"):
            cluster.advance_time(1)


def test_complete_topology_on_simulated_time_times_out_unacked_trees() -> None:
    builder = TopologyBuilder()
    builder.set_spout("words", FeederSpout(["word"], [["x"], ["y"]]))
    builder.set_bolt("ticks", TickCounter()).shuffle_grouping("words")
    began = time.monotonic()
    result = complete_topology(
        builder.create_topology(),
        {cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30},
        simulated_time=True,
        time_step=5.0,
    )
    assert sorted(result.failures("words")) == [(0, "timeout"), (1, "timeout")]
    assert result.tuples("words") == [["x"], ["y"]] or result.tuples("words") == [["y"], ["x"]]
    assert time.monotonic() - began < 15.0  # 30-45 simulated seconds of timeout
