"""Testing a topology the Storm way, with pytest: feed a running spout, capture what a bolt
emits, and drive tick tuples and timeouts with simulated time.

    python3 -m pytest examples/testing_kit.py

Components live at module level so the LocalCluster's worker processes can import them.
"""

from __future__ import annotations

from topology import Bolt, LocalCluster, TopologyBuilder
from topology import config as cfg
from topology.testing import Capture, FeederSpout, with_capture


class Upper(Bolt):
    """Upper-cases each word; on every tick, emits how many words it saw on ``"totals"``."""

    outputs = {"default": ["word"], "totals": ["seen"]}

    def prepare(self, conf, context):
        self.seen = 0

    def execute(self, tup):
        if tup.is_tick():
            self.emit([self.seen], stream="totals")
            return
        self.seen += 1
        self.emit([tup["word"].upper()], anchors=tup)
        self.ack(tup)


def build(feeder: FeederSpout):
    builder = TopologyBuilder()
    builder.set_spout("words", feeder)
    builder.set_bolt("upper", Upper()).shuffle_grouping("words").add_configuration(
        cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 60
    )
    return with_capture(builder.create_topology())  # record what every component emits


def test_feed_while_running_and_capture_per_stream():
    feeder = FeederSpout(["word"])
    with LocalCluster() as cluster:
        cluster.submit_topology("upper", {}, build(feeder))
        capture = Capture(cluster, "upper")
        feeder.feed(["storm"])  # the worker's copy of the spout emits it
        assert capture.wait_for("upper", 1) == [["STORM"]]  # bounded wait, clear failure
        feeder.feed(["spark"])
        assert sorted(capture.wait_for("upper", 2)) == [["SPARK"], ["STORM"]]
        capture.wait_until(lambda seen: sorted(seen.acked("words")) == [0, 1], "both acked")


def test_a_tick_every_minute_without_waiting_a_minute():
    feeder = FeederSpout(["word"], [["a"], ["b"]])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("ticks", {}, build(feeder))
        capture = Capture(cluster, "ticks")
        capture.wait_for("upper", 2)
        cluster.advance_time(120)  # two ticks, in well under a second of real time
        assert capture.wait_for("upper", 2, stream="totals") == [[2], [2]]
