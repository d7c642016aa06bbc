"""The testing kit works with stream topologies: ``complete_topology`` over a
``FeederSpout`` captures what each stream component emitted, on simulated time."""

from __future__ import annotations

import pytest

from topology.streams import StreamBuilder, tumbling
from topology.testing import FeederSpout, complete_topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_complete_topology_captures_a_stream_pipeline_on_simulated_time() -> None:
    feeder = FeederSpout(["line"], [["a b"], ["b c"], ["c"], ["a a"]])
    sb = StreamBuilder()
    words = sb.new_stream(feeder, name="lines").flat_map(str.split).key_by(lambda w: w)
    words.count_by_key().named("count")
    words.window(tumbling(count=4)).count_by_key().named("per4")
    result = complete_topology(sb.build(), {"topology.workers": 2}, simulated_time=True)
    finals: dict[str, int] = {}
    for word, count in result.tuples("count"):
        finals[word] = max(finals.get(word, 0), count)
    assert finals == {"a": 3, "b": 2, "c": 2}
    assert sum(n for _, n in result.tuples("per4")) == 4  # one window of the first 4 words
    assert not any(result.errors.values())
