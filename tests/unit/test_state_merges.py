"""``state.merge``: the combine function a bolt declares, refused at submit when it is not
one, and a deferred combination that raises reported as the component's error with the
stored value kept."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import pytest

from topology import StatefulBolt, TopologyBuilder
from topology import config as cfg
from topology.deploy.limits import check_components
from topology.errors import TopologyValidationError
from topology.runtime.inprocess import InProcessRunner
from topology.state import merges
from topology.state.live.lmdb_store import LmdbState
from topology.testing import FeederSpout

pytestmark = pytest.mark.timeout(60)


def _longest(old: Any, new: Any) -> Any:
    return old if len(old) >= len(new) else new


class Longest(StatefulBolt):
    state_merge = _longest

    def execute(self, tup: Any) -> None:
        self.state.merge(tup["key"], tup["word"])


class Broken(StatefulBolt):
    state_merge = 42

    def execute(self, tup: Any) -> None:
        pass


def test_a_function_of_the_class_body_is_taken_without_self() -> None:
    assert merges.merge_function(Longest()) is _longest
    assert merges.merge_function(StatefulBolt()) is operator.add

    class Static(StatefulBolt):
        state_merge = staticmethod(max)

    assert merges.merge_function(Static()) is max


def test_a_state_merge_that_is_not_a_function_is_refused_at_submit() -> None:
    builder = TopologyBuilder()
    builder.set_spout("words", FeederSpout(["key", "word"], []))
    builder.set_bolt("broken", Broken()).fields_grouping("words", ["key"])
    conf = cfg.resolve({})
    with pytest.raises(TopologyValidationError, match=r"bolt 'broken': Broken.state_merge must"):
        check_components(builder.create_topology(), conf)


def test_the_runtime_gives_the_state_the_bolts_function() -> None:
    rows = [["k", "a"], ["k", "ccc"], ["k", "bb"], ["j", "x"]]
    builder = TopologyBuilder()
    builder.set_spout("words", FeederSpout(["key", "word"], rows))
    builder.set_bolt("longest", Longest()).fields_grouping("words", ["key"])
    runner = InProcessRunner(builder.create_topology())
    runner.activate()
    runner.run_until(lambda: runner.instance("longest").state.get("j") == "x")
    assert sorted(runner.instance("longest").state.items()) == [("j", "x"), ("k", "ccc")]


def test_a_deferred_merge_that_raises_keeps_the_stored_value_and_says_why(
    tmp_path: Path,
) -> None:
    state = LmdbState(str(tmp_path / "s"), cache_entries=1)
    state.put("n", 5)
    state.put("other", 0)  # "n" leaves the cache (written)
    state.merge("n", "x")  # not cached: a delta, combined later
    assert state.get("n") == 5
    [error] = state.take_merge_errors()
    assert "state.merge of key 'n': TypeError" in error and "stored value 5 is kept" in error
    assert state.take_merge_errors() == []
    state.close()


def test_deltas_are_bounded_by_the_cache_and_combined_in_order(tmp_path: Path) -> None:
    state = LmdbState(str(tmp_path / "s"), cache_bytes=1 << 16)
    state.combine = merges.append
    for i in range(20_000):
        state.merge(i % 5_000, [i])
        assert state.cache_stats().bytes <= 1 << 16
    assert state.get(7) == [7, 5_007, 10_007, 15_007]
    assert len(state) == 5_000
    state.close()


def test_append_and_union_take_what_the_state_gives_back() -> None:
    assert merges.append((1,), [2]) == [1, 2]
    assert merges.union((3, 1), [1, 2]) == [1, 2, 3]
