"""At-least-once processing: a flaky bolt fails some tuples, the spout replays them.

    sparkstorm local examples/at_least_once.py:topology --duration 10

orders (spout, replays failures) --shuffle--> validate (Bolt: fails ~5% once, explicitly,
or by raising) --fields["customer"]--> total (BasicBolt)

Every order is acked in the end; ``verify`` checks that no order was lost and shows why
tuples failed (the spout overrides ``fail_with_reason``).
"""

from __future__ import annotations

import random
from collections import Counter

from topology import BasicBolt, Bolt, Spout, TopologyBuilder

ORDERS = 20_000


class OrderSpout(Spout):
    """Emits orders 0..ORDERS-1 (spread over its tasks) and replays any that fail."""

    outputs = ["order", "customer", "amount"]

    def open(self, conf, context):
        n = len(context.component_tasks())
        self.todo = list(range(context.task_index, ORDERS, n))
        self.todo.reverse()
        self.acked: set[int] = set()
        self.reasons: Counter = Counter()

    def next_tuple(self):
        if self.todo:
            order = self.todo.pop()
            self.emit([order, f"c{order % 97}", order % 13], msg_id=order)

    def ack(self, msg_id):
        self.acked.add(msg_id)

    def fail_with_reason(self, msg_id, reason):
        # "timeout", or the error's first part: "fraud check timed out", "ValueError"
        self.reasons[(reason.error or reason.kind).split(":")[0]] += 1
        self.todo.append(msg_id)  # replay

    def collect_results(self):
        return {"acked": sorted(self.acked), "reasons": dict(self.reasons)}


class ValidateBolt(Bolt):
    """Fails about 5% of orders the first time it sees them (half by raising)."""

    outputs = ["order", "customer", "amount"]

    def prepare(self, conf, context):
        self.random = random.Random(context.task_id)
        self.failed_once: set[int] = set()

    def execute(self, tup):
        order = tup["order"]
        if order not in self.failed_once and self.random.random() < 0.05:
            self.failed_once.add(order)
            if order % 2:
                raise ValueError(f"order {order}: payment service unavailable")
            self.fail(tup, "fraud check timed out")
            return
        self.emit(tup.values, anchors=tup)
        self.ack(tup)


class TotalBolt(BasicBolt):
    """Running total per customer (BasicBolt: anchored and acked automatically)."""

    outputs = ["customer", "total"]

    def prepare(self, conf, context):
        self.totals: Counter = Counter()

    def process(self, tup):
        self.totals[tup["customer"]] += tup["amount"]
        self.emit([tup["customer"], self.totals[tup["customer"]]])


builder = TopologyBuilder()
builder.set_spout("orders", OrderSpout(), parallelism=2)
builder.set_bolt("validate", ValidateBolt(), parallelism=2).shuffle_grouping("orders")
builder.set_bolt("total", TotalBolt(), parallelism=2).fields_grouping("validate", ["customer"])
topology = builder.create_topology()


def verify(results: dict) -> str:
    """Every order acked (replays included); report why tuples failed on the way."""
    acked = {o for r in results["orders"].values() for o in r["acked"]}
    reasons: Counter = Counter()
    for r in results["orders"].values():
        reasons.update(r["reasons"])
    missing = ORDERS - len(acked)
    assert missing == 0, f"{missing} orders never acked (run longer: --duration)"
    why = ", ".join(f"{n} x {text}" for text, n in reasons.most_common(3))
    return f"all {ORDERS:,} orders acked after {sum(reasons.values())} replays ({why})"
