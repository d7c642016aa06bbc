"""storm-starter's SingleJoinExample with the Streams API: the genders and the ages of the
same ids, from two spouts in opposite orders, joined on the id.

    sparkstorm local examples/single_join_streams.py:topology --duration 10

The join is over windows (as every Streams API join): one count window of both streams
holds every id, so each is joined once whatever the order; its inputs are acked when the
window fires, every output anchored to them, and counted by the sink ``joined``.
``verify`` is single_join.py's.
"""

from __future__ import annotations

import single_join
from single_join import IDS, AgeSpout, GenderSpout

from topology import BasicBolt
from topology.streams import StreamBuilder, tumbling


class Joined(BasicBolt):
    """Counts the joined pairs ``(id, (gender, age))`` (for ``verify``)."""

    def prepare(self, conf, context):
        self.joined = 0

    def process(self, tup):
        self.joined += 1

    def collect_results(self):
        return {"joined": self.joined, "waiting": 0}


def verify(results: dict) -> str:
    """single_join.py's check (every id joined once, every tree acked) of this sink."""
    return single_join.verify({**results, "join": results["joined"]})


sb = StreamBuilder()
genders = sb.new_stream(GenderSpout(), name="gender").map_to_pair(lambda r: (r["id"], r["gender"]))
ages = sb.new_stream(AgeSpout(), name="age").map_to_pair(lambda r: (r["id"], r["age"]))
(
    genders.window(tumbling(count=2 * IDS))
    .join(ages)  # the component "join": the sink has a name of its own
    .to(Joined(), name="joined")
)
topology = sb
