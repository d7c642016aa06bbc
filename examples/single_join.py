"""A join of two spouts on a key, as storm-starter's SingleJoinExample does it.

    sparkstorm local examples/single_join.py:topology --duration 10

gender (spout: ids 0..IDS-1) ----fields["id"]--+
                                               +--> join (Bolt: holds each side until the
age (spout: ids IDS-1..0, the other way) -fields["id"]--+     other arrives, then emits
                                                              [id, gender, age] anchored
                                                              to both and acks both)

The spouts emit the same ids in opposite orders, so most tuples wait in the join for a
long time — the case that a cap on pending trees would starve: each spout could fill its
cap with ids the other has not reached yet (a fixed ``topology.max.spout.pending`` of
500 or less starves this one). With none set, sparkstorm's default auto cap (1,000 to
begin with) grows whenever a spout waits at it while its trees outlive a tenth of a second,
so a join like this one joins every id whatever its number of ids
(tests/integration/test_cluster_flow_control.py joins 8,000 a side).
"""

from __future__ import annotations

from topology import Bolt, Spout, TopologyBuilder

IDS = 1_000


class GenderSpout(Spout):
    """ids 0, 1, ... with a gender; tracked (msg_id = id)."""

    outputs = ["id", "gender"]

    def open(self, conf, context):
        self.todo = list(range(IDS - 1, -1, -1))  # popped from the end: 0 first
        self.acked: set[int] = set()

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop()
            self.emit([i, "male" if i % 2 == 0 else "female"], msg_id=i)

    def ack(self, msg_id):
        self.acked.add(msg_id)

    def fail(self, msg_id):
        self.todo.append(msg_id)  # replay

    def collect_results(self):
        return {"acked": len(self.acked)}


class AgeSpout(GenderSpout):
    """ids IDS-1, IDS-2, ... with an age: the opposite order."""

    outputs = ["id", "age"]

    def open(self, conf, context):
        super().open(conf, context)
        self.todo.reverse()  # IDS-1 first

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop()
            self.emit([i, i % 100], msg_id=i)


class JoinBolt(Bolt):
    """Joins the two streams on ``id``; each joined row is anchored to both inputs."""

    outputs = ["id", "gender", "age"]

    def prepare(self, conf, context):
        self.waiting: dict[int, dict[str, object]] = {}  # id -> spout -> tuple
        self.joined = 0

    def execute(self, tup):
        sides = self.waiting.setdefault(tup["id"], {})
        older = sides.get(tup.source_component)
        if older is not None:
            self.ack(older)  # a replay (its first tree timed out): keep the newest
        sides[tup.source_component] = tup  # held, not acked, until the other side arrives
        if len(sides) < 2:
            return
        del self.waiting[tup["id"]]
        gender, age = sides["gender"], sides["age"]
        self.emit([tup["id"], gender["gender"], age["age"]], anchors=[gender, age])
        self.ack(gender)
        self.ack(age)
        self.joined += 1

    def collect_results(self):
        return {"joined": self.joined, "waiting": len(self.waiting)}


builder = TopologyBuilder()
builder.set_spout("gender", GenderSpout())
builder.set_spout("age", AgeSpout())
builder.set_bolt("join", JoinBolt(), parallelism=2).fields_grouping(
    "gender", ["id"]
).fields_grouping("age", ["id"])
topology = builder.create_topology()


def verify(results: dict) -> str:
    """Every id joined once, and both spouts saw every tree acked."""
    joined = sum(r["joined"] for r in results["join"].values())
    acked = {name: sum(r["acked"] for r in results[name].values()) for name in ("gender", "age")}
    assert joined == IDS, f"{joined} of {IDS} ids joined"
    assert acked == {"gender": IDS, "age": IDS}, f"acked: {acked}"
    return f"all {IDS:,} ids joined; every tree of both spouts acked"
