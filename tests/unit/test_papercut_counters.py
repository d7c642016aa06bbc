"""Issue 28 (papercut 4): counters stay with their component across a rebalance, and
every failure reason is documented.

After ``rebalance NAME -n 1`` a spout showed 6,000 failed of 3,000 emitted, with a reason
("error") only bolts have: carried statistics were keyed by task id, and task ids are
numbered with the ackers (one per worker by default) among the components, so with fewer
workers the spout got the id — and the carried counts — of a bolt.  Carries are now keyed
by component and task index."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from acker.protocol import FailReason
from topology import BasicBolt, Spout, TopologyBuilder
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.task_status import worker_status
from topology.runtime.tasks.collector import FAILED_BY_BOLT, FAILED_BY_ERROR
from topology.spec import describe_components
from topology.stats.carry import for_tasks, newest, save_reply
from topology.stats.rolling import StatsRecorder
from topology.stats.status_report import build_report

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
SENT = 300


class Numbers(Spout):
    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < SENT:
            self.emit([self.i], msg_id=self.i)
            self.i += 1


class Check(BasicBolt):
    outputs = ["n"]

    def process(self, tup: Any) -> None:
        raise ValueError("boom")


def _topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    builder.set_bolt("check", Check()).shuffle_grouping("numbers")
    return builder.create_topology()


def test_a_rebalance_to_fewer_workers_keeps_each_components_counts() -> None:
    topology = _topology()
    before = InProcessRunner(topology, {"topology.workers": 2, **FAIL_AT_ONCE})
    before.activate()
    for _ in range(2_000):  # ManualClock: lanes flush as topology time moves
        if before.task("numbers").stats.failed == SENT:
            break
        before.clock.advance(0.01)  # type: ignore[attr-defined]
        before.turn(5)
    assert before.task("numbers").stats.failed == SENT
    saves = [save_reply({**reply, "time": 100.0}) for reply in before.status()]

    after = InProcessRunner(topology, {"topology.workers": 1, **FAIL_AT_ONCE})  # 1 acker: ids shift
    ids = before.assignment.component_tasks, after.assignment.component_tasks
    assert ids[0]["numbers"] != ids[1]["numbers"]  # what made the bug

    carried = newest(saves)
    replies = []
    for worker in after.workers.values():
        tasks = [(t.task_id, t.component, t.context.task_index) for t in worker.tasks()]
        recorders = {t.task_id: StatsRecorder(0.0) for t in worker.tasks()}
        replies.append(worker_status(worker, recorders, 0.0, for_tasks(carried, tasks), 101.0))
    summary = {"name": "wc", "id": "wc-1", "status": "ACTIVE"}
    report = build_report(summary, describe_components(topology), replies, window="all", now=101.0)
    [spout] = report["spouts"]
    [bolt] = report["bolts"]
    assert (spout["emitted"], spout["failed"]) == (SENT, SENT)
    assert spout["failed_by"] == {"failed": SENT}  # a spout's reason, not "error"
    assert (bolt["executed"], bolt["failed_by"]) == (SENT, {FAILED_BY_ERROR: SENT})
    assert bolt["errors"] == SENT


def _kinds_in_code() -> set[str]:
    """Every FailReason kind the code creates, and the bolt-side reasons."""
    kinds = {FAILED_BY_BOLT, FAILED_BY_ERROR}
    for path in [*ROOT.glob("acker/*.py"), *ROOT.glob("topology/**/*.py")]:
        for match in re.finditer(r'FailReason\(\s*"(\w+)"', path.read_text()):
            kinds.add(match.group(1))
    assert FailReason("timeout").kind == "timeout"
    return kinds


@pytest.mark.parametrize("doc", ["docs/STATUS.md", "README.md"])
def test_every_failure_reason_is_documented(doc: str) -> None:
    text = (ROOT / doc).read_text()
    kinds = _kinds_in_code()
    assert {"timeout", "failed", "worker_lost", "rollback", "error"} <= kinds
    for kind in sorted(kinds):
        assert f"`{kind}`" in text, f"{doc} does not list the failure reason {kind!r}"
