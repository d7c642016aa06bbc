"""storm-starter's SingleJoinExample with the Streams API: the genders and the ages of the
same ids, from two spouts in opposite orders, joined on the id.

    sparkstorm local examples/single_join_streams.py:topology --duration 10

The join is over windows (as every Streams API join): one count window of both streams
holds every id, so each is joined once whatever the order; its inputs are acked when the
window fires, every output anchored to them.  ``verify`` is single_join.py's.
"""

from __future__ import annotations

from single_join import IDS, AgeSpout, GenderSpout, verify  # noqa: F401 - verify: every id joined

from topology import BasicBolt
from topology.streams import StreamBuilder, tumbling


class Joined(BasicBolt):
    """Counts the joined rows ``[id, gender, age]`` (for ``verify``)."""

    def prepare(self, conf, context):
        self.joined = 0

    def process(self, tup):
        self.joined += 1

    def collect_results(self):
        return {"joined": self.joined, "waiting": 0}


sb = StreamBuilder()
genders = sb.new_stream(GenderSpout(), name="gender").map_to_pair(lambda r: (r["id"], r["gender"]))
ages = sb.new_stream(AgeSpout(), name="age").map_to_pair(lambda r: (r["id"], r["age"]))
(
    genders.window(tumbling(count=2 * IDS))
    .join(ages)
    .map(lambda pair: [pair[0], *pair[1]])  # [id, gender, age]
    .to(Joined(), name="join")
)
topology = sb
