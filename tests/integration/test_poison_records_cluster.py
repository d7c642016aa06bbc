"""Poison records on a LocalCluster (worker processes, real sockets): examples/dead_letters.py
verifies (every bad order dead-lettered once, every total exact, no tree failed), and the
issue's checkpointed topology — a StatefulBolt that raises on one record — neither rolls
back nor replays, counts exactly and dead-letters the record once (docs/ERRORS.md)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from topology import (
    DEAD_LETTER_FIELDS,
    LocalCluster,
    ReplayableSpout,
    StatefulBolt,
    TopologyBuilder,
    Tuple,
)
from topology.testing import CaptureBolt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORDS = 30_000


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster({"topology.stats.interval.secs": 1}) as local:
        yield local


def test_the_example_dead_letters_each_bad_order_once_and_totals_every_good_one(
    cluster: LocalCluster,
) -> None:
    topology, module = load_topology(f"{EXAMPLES / 'dead_letters.py'}:topology", {})
    cluster.submit_topology("orders", {"topology.workers": 2}, topology)
    try:
        wait_for(
            lambda: cluster.stats("orders")["bolts"],
            lambda bolts: sum(b["dead_lettered"] for b in bolts) >= 5,
            90,
        )
        cluster.deactivate("orders")
        cluster.wait_until_drained("orders", timeout=60)
        results = cluster.results("orders")
        report = cluster.stats("orders", window="all")
    finally:
        cluster.kill_topology("orders")
    print(module.verify(results))
    parse = next(b for b in report["bolts"] if b["id"] == "parse")
    letters = [letter for task in results["dead-letters"].values() for letter in task]
    assert parse["dead_lettered"] == len(letters) >= 5
    assert parse["retried"] == 3 * len(letters)


class Words(ReplayableSpout):
    """Word i is ``w<i % 50>``; i % 1000 == 500 is ``poison``. Positions in checkpoints."""

    outputs = ["word"]

    def open(self, conf: Any, context: Any) -> None:
        self.next, self.acked = 0, 0

    def next_tuple(self) -> None:
        if self.next < WORDS:
            i = self.next
            self.emit(["poison" if i % 1000 == 500 else f"w{i % 50}"], msg_id=i)
            self.next += 1

    def ack(self, msg_id: Any) -> None:
        self.acked += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position

    def collect_results(self) -> dict[str, int]:
        return {"next": self.next, "acked": self.acked}


class Count(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        if tup[0] == "poison":
            raise ValueError("cannot count poison")
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)

    def collect_results(self) -> dict[str, int]:
        return dict(self.state.items())


def test_a_checkpointed_topology_dead_letters_the_record_a_stateful_bolt_raises_on(
    cluster: LocalCluster,
) -> None:
    builder = TopologyBuilder()
    builder.set_spout("words", Words())
    builder.set_bolt("count", Count(), 2).fields_grouping("words", ["word"])
    builder.set_bolt("dead", CaptureBolt()).dead_letters()
    conf = {
        "topology.workers": 2,
        "topology.state.provider": "memory",
        "topology.state.checkpoint.interval.ms": 200,
    }
    cluster.submit_topology("poison", conf, builder.create_topology())
    began = time.monotonic()
    try:
        wait_for(
            lambda: cluster.results("poison"),
            lambda r: sum(s["acked"] for s in r["words"].values()) == WORDS,
            120,
        )
        secs = time.monotonic() - began
        # Asked again: one reply per worker, each at its own moment, is no snapshot; but
        # every letter reached the dead-letter bolt before the spout heard the last commit.
        done = cluster.results("poison")
        report = cluster.stats("poison", window="all")
    finally:
        cluster.kill_topology("poison")
    counts: Counter[str] = Counter()
    for task in done["count"].values():
        counts.update(task)
    assert counts == Counter(f"w{i % 50}" for i in range(WORDS) if i % 1000 != 500)
    [dead] = done["dead"].values()
    letters = [dict(zip(DEAD_LETTER_FIELDS, values)) for _, _, values in dead]
    assert [letter["values"] for letter in letters] == [["poison"]] * (WORDS // 1000)
    assert report["checkpoints"]["recoveries"] == 0 and report["checkpoints"]["rollbacks"] == 0
    assert sum(b["dead_lettered"] for b in report["bolts"]) == WORDS // 1000
    print(f"{WORDS:,} words, {WORDS // 1000} poison, in {secs:.1f} s with no rollback")
