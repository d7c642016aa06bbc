"""storm-starter's SingleJoinExample written with ``JoinBolt`` (compare examples/single_join.py).

    sparkstorm local examples/single_join_joinbolt.py:topology --duration 10

gender (spout: ids 0..IDS-1) ------fields["id"]--+
                                                 +--> join (JoinBolt: a window of 2 tuples
age (spout: ids IDS-1..0, the other way) -fields["id"]--+   per id) --> report
                                                              [id, gender, age]

The hand-written join of examples/single_join.py holds each side until the other arrives.
Here the window does the holding: ``with_tumbling_window(count=2).with_key("id")`` gives
each id its own window, which fires once both sides are in; the JoinBolt joins its two
tuples, emits ``[id, gender, age]`` anchored to both, and the window acks them.  The
result is the same: every id joined once, every tree of both spouts acked.
"""

from __future__ import annotations

from single_join import IDS, AgeSpout, GenderSpout  # the same spouts as the hand-written join

from topology import Bolt, TopologyBuilder
from topology.windows.join import JoinBolt


class ReportBolt(Bolt):
    """Keeps the joined rows (to check them) and acks them."""

    def prepare(self, conf, context):
        self.rows: list[list] = []

    def execute(self, tup):
        self.rows.append(list(tup.values))
        self.ack(tup)

    def collect_results(self):
        return {"rows": self.rows}


joiner = (
    JoinBolt("gender", "id")  # from gender (the component)
    .join("age", "id", "gender")  # inner join age on age.id = gender.id
    .select("gender:id, gender, age")  # output fields: id, gender, age
    .with_tumbling_window(count=2)
    .with_key("id")  # a window per id: it fires when both sides are in
)
builder = TopologyBuilder()
builder.set_spout("gender", GenderSpout())
builder.set_spout("age", AgeSpout())
join = builder.set_bolt("join", joiner, parallelism=2)
join.fields_grouping("gender", ["id"]).fields_grouping("age", ["id"])
builder.set_bolt("report", ReportBolt()).shuffle_grouping("join")
topology = builder.create_topology()


def verify(results: dict) -> str:
    """Every id joined once into the right row, and both spouts saw every tree acked."""
    rows = sorted(row for r in results["report"].values() for row in r["rows"])
    expected = [[i, "male" if i % 2 == 0 else "female", i % 100] for i in range(IDS)]
    acked = {name: sum(r["acked"] for r in results[name].values()) for name in ("gender", "age")}
    assert len(rows) == IDS, f"{len(rows)} of {IDS} ids joined"
    assert rows == expected, "joined rows differ from [id, gender, age]"
    assert acked == {"gender": IDS, "age": IDS}, f"acked: {acked}"
    return f"all {IDS:,} ids joined; every tree of both spouts acked"
