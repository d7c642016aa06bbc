"""Poison records: a bad order in every thousand never wedges the pipeline.

    sparkstorm local examples/dead_letters.py:topology --duration 10

orders (spout, msg ids) --shuffle--> parse (BasicBolt) --fields["customer"]--> totals (Bolt)
every component's dead letters ------------------------------------------> dead-letters (Bolt)

Order ``i`` is a JSON text ``{"id": i, "customer": "c<i % 37>", "amount": <cents>}``; every
thousandth (``i % 1000 == 999``) has ``"amount": "n/a"``, on which ``parse`` raises.  The
failure policy (``topology.errors.*``, docs/ERRORS.md) calls ``parse`` with it again 0.1,
0.2 and 0.4 s later — while ``parse`` goes on with the other orders — then sends it to
``parse``'s dead-letter stream and acks it: its tree completes, nothing is replayed.  The
``dead-letters`` bolt, subscribed to every component's dead letters with
``.dead_letters()``, keeps them; a connector sink works as well, e.g.
``RedisStreamSink(url, stream="dead-letters")`` or ``PostgresSink(dsn, "dead_letters",
DEAD_LETTER_FIELDS, json_columns=["values"])`` (a ``FileSink``, transactional, would make
this topology checkpointed).

``verify`` checks that every bad order emitted is in the dead letters exactly once, with
its error and 4 attempts, that every good one was added to its customer's total exactly
once, and that no tree failed.
"""

from __future__ import annotations

import json
from collections import Counter

from topology import DEAD_LETTER_FIELDS, BasicBolt, Bolt, Spout, TopologyBuilder


def order(i: int) -> str:
    amount = "n/a" if is_bad(i) else (i * 37) % 10_000
    return json.dumps({"id": i, "customer": f"c{i % 37}", "amount": amount})


def is_bad(i: int) -> bool:
    return i % 1000 == 999


class OrderSpout(Spout):
    """Emits order i, i + n, i + 2n, ... (n: its task count), each with msg id i."""

    outputs = ["order"]

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())
        self.failed = 0

    def next_tuple(self):
        self.emit([order(self.next)], msg_id=self.next)
        self.next += self.step

    def fail(self, msg_id):
        self.failed += 1

    def collect_results(self):
        return {"first": self.first, "step": self.step, "next": self.next, "failed": self.failed}


class ParseBolt(BasicBolt):
    """Parses an order; an amount that is not a number raises (the poison)."""

    outputs = ["customer", "amount"]

    def process(self, tup):
        data = json.loads(tup["order"])
        self.emit([data["customer"], int(data["amount"])])


class TotalsBolt(Bolt):
    """Adds each order's amount to its customer's total."""

    def prepare(self, conf, context):
        self.totals = Counter()

    def execute(self, tup):
        self.totals[tup["customer"]] += tup["amount"]
        self.ack(tup)

    def collect_results(self):
        return dict(self.totals)


class DeadLetterBolt(Bolt):
    """Keeps every dead letter it is sent: who gave up, on which order, why, how often."""

    def prepare(self, conf, context):
        self.letters = []

    def execute(self, tup):
        letter = dict(zip(DEAD_LETTER_FIELDS, tup.values))
        order_id = json.loads(letter["values"][0])["id"]
        self.letters.append([letter["component"], order_id, letter["error"], letter["attempts"]])
        self.ack(tup)

    def collect_results(self):
        return self.letters


builder = TopologyBuilder()
builder.set_spout("orders", OrderSpout(), parallelism=2)
builder.set_bolt("parse", ParseBolt(), parallelism=2).shuffle_grouping("orders")
builder.set_bolt("totals", TotalsBolt(), parallelism=2).fields_grouping("parse", ["customer"])
builder.set_bolt("dead-letters", DeadLetterBolt()).dead_letters()
topology = builder.create_topology()


def verify(results: dict) -> str:
    """Every bad order dead-lettered once, every good one totalled once, no tree failed."""
    expected: Counter = Counter()
    bad, failed = [], 0
    for state in results["orders"].values():
        failed += state["failed"]
        for i in range(state["first"], state["next"], state["step"]):
            if is_bad(i):
                bad.append(i)
            else:
                data = json.loads(order(i))
                expected[data["customer"]] += data["amount"]
    totals: Counter = Counter()
    for task_totals in results["totals"].values():
        totals.update(task_totals)
    letters = [letter for task in results["dead-letters"].values() for letter in task]
    assert failed == 0, f"{failed} trees failed"
    assert totals == expected, "a customer's total is off"
    assert sorted(order_id for _, order_id, _, _ in letters) == sorted(bad), "dead letters off"
    assert all(c == "parse" and e.startswith("ValueError") and n == 4 for c, _, e, n in letters)
    orders = sum(len(range(s["first"], s["next"], s["step"])) for s in results["orders"].values())
    return f"{orders:,} orders, {len(bad):,} dead-lettered once each, every total exact"
