"""Issue 28 (papercut 2): one noisy component hides no other's errors.

"Last errors" listed 10 errors of one bolt while another had 3,000 and a third's
``ValueError: boom`` appeared nowhere.  Now a worker sends at most ``ERRORS_PER_SECOND``
error texts per *component*, every task counts all its errors (into the stats windows:
``status`` shows the true count per component), and the report lists each component's
last errors."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from cli.status_view import error_lines, errors_table
from tests.unit.status_helpers import render
from topology import BasicBolt, Spout, TopologyBuilder
from topology.deploy.error_log import ERRORS_KEPT
from topology.runtime.error_reporter import ERRORS_PER_SECOND, ErrorReporter
from topology.runtime.inprocess import InProcessRunner
from topology.spec import describe_components
from topology.stats.status_report import build_report

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(60)

SENTENCES = 3_000


class Numbers(Spout):
    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < SENTENCES:
            self.emit([self.i])
            self.i += 1


class Arity(BasicBolt):
    """Raises on every tuple (the noisy one)."""

    outputs = ["n"]

    def process(self, tup: Any) -> None:
        self.emit([1, 2])  # declares one field


class Boom(BasicBolt):
    """Raises on 3 tuples of 3,000."""

    outputs = ["n"]

    def process(self, tup: Any) -> None:
        if tup[0] % 1000 == 999:
            raise ValueError("boom")


class Told(BasicBolt):
    """Reports one error by hand, raises nothing."""

    outputs = ["n"]

    def process(self, tup: Any) -> None:
        if tup[0] == 0:
            self.report_error("told you")


def _run() -> tuple[InProcessRunner, Any]:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    for name, bolt in (("arity", Arity()), ("boom", Boom()), ("told", Told())):
        builder.set_bolt(name, bolt).shuffle_grouping("numbers")
    topology = builder.create_topology()
    runner = InProcessRunner(topology, FAIL_AT_ONCE)  # every raise reported at once
    runner.activate()
    runner.run_until(lambda: runner.task("boom").stats.executed == SENTENCES, 100_000)
    runner.run_until(lambda: runner.task("arity").stats.executed == SENTENCES, 100_000)
    return runner, topology


class _Client:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def test_a_noisy_component_does_not_use_up_another_ones_error_rate() -> None:
    client = _Client()
    report = ErrorReporter(client, "wc", 0)  # type: ignore[arg-type]
    for _ in range(SENTENCES):
        report("arity", 1, "EmitError: 2 values")
    report("boom", 2, ValueError("boom"))
    by_component: dict[str, int] = {}
    for message in client.sent:
        by_component[message["component"]] = by_component.get(message["component"], 0) + 1
    assert by_component == {"arity": ERRORS_PER_SECOND, "boom": 1}
    assert report.suppressed_by == {"arity": SENTENCES - ERRORS_PER_SECOND}


def test_status_counts_every_error_of_each_component_and_lists_each_ones_last() -> None:
    runner, topology = _run()
    kept: dict[str, deque[dict[str, Any]]] = {}  # as LocalCluster keeps them
    for component, task, text in runner.errors:
        entry = {"task": task, "time": float(len(runner.errors)), "text": text}
        kept.setdefault(component, deque(maxlen=ERRORS_KEPT)).append(entry)
    errors = {c: list(items) for c, items in kept.items()}
    summary = {"name": "wc", "id": "wc-1", "status": "ACTIVE"}
    report = build_report(summary, describe_components(topology), runner.status(), errors=errors)
    counts = {row["id"]: row["errors"] for row in report["bolts"]}
    assert counts == {"arity": SENTENCES, "boom": 3, "told": 1}
    listed = {e["component"] for e in report["errors"]}
    assert listed == {"arity", "boom", "told"}
    out = render(errors_table(report))
    assert "ValueError: boom" in out and "told you" in out
    assert "3,000" in out
    lines = error_lines(errors, counts)
    assert lines[0].startswith("[red]3,000 error(s) in arity[/red] (10 kept)")
    assert lines[1].startswith("[red]3 error(s) in boom[/red] (3 kept)")
