"""Event-time progress through stream components: a window task whose input task has
nothing for it (a filtered branch that passes nothing there, a key share that never hashes
there) still fires, because that input's progress marks tell it so."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grouping.hashing import stable_hash
from tests.unit.test_streams import Collect, Items, rows, values
from topology import Tuple
from topology.constants import PROGRESS_STREAM
from topology.runtime.checkpoint.state_layout import (
    KEYED,
    keeps_keyed_state,
    state_kinds,
)
from topology.runtime.inprocess import InProcessRunner
from topology.streams import StreamBuilder, tumbling
from topology.windows.watermark import ACTIVE_MARK, IDLE_MARK, LowWatermark, MarkTimer

pytestmark = pytest.mark.timeout(120)

WINDOW = 5.0
LAG = 1.0


def _events(n: int) -> list[tuple[str, int, float]]:
    """Every fourth event is an ``a``: with two spout tasks (task i takes every other
    event) only task 0 ever emits one, so branch ``a``'s task 1 passes nothing."""
    return [("a" if i % 4 == 0 else "b", i % 7, i * 0.1) for i in range(n)]


def _reference(events: list[tuple[str, int, float]]) -> list[Any]:
    """The join of every window the final watermark (latest time - lag) closed."""
    closed = max(ts for _, _, ts in events) - LAG
    windows: dict[float, dict[str, list[Any]]] = defaultdict(lambda: {"a": [], "b": []})
    for kind, k, ts in events:
        start = (ts // WINDOW) * WINDOW
        if start + WINDOW <= closed:
            windows[start][kind].append((k, ts))
    out = []
    for sides in windows.values():
        for ka, ta in sides["a"]:
            for kb, tb in sides["b"]:
                if ka == kb:
                    out.append((ka, ta, tb))
    return sorted(out)


def _run(
    builder: StreamBuilder, turns: int, workers: int, ticks: float | None = None
) -> InProcessRunner:
    conf = {"topology.workers": workers, "topology.tick.tuple.freq.secs": ticks}
    runner = InProcessRunner(builder.build(), conf)
    runner.activate()
    for _ in range(turns):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    return runner


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_filtered_branches_of_a_parallel_spout_fire_their_event_time_join(
    parallelism: int,
) -> None:
    events = _events(400)
    sb = StreamBuilder()
    source = sb.new_stream(
        Items(events, ["kind", "k", "ts"]), parallelism=parallelism, name="events"
    )
    a = source.filter(lambda e: e["kind"] == "a").map_to_pair(lambda e: (e["k"], e["ts"]))
    b = source.filter(lambda e: e["kind"] == "b").map_to_pair(lambda e: (e["k"], e["ts"]))
    windowing = tumbling(seconds=WINDOW).event_time(lambda ts: ts, lag=LAG)
    a.window(windowing).join(b).map(lambda kv: (kv[0], *kv[1])).to(Collect(), name="collect")
    runner = _run(sb, turns=1200, workers=2)
    assert not runner.errors
    assert sorted(tuple(row) for row in values(runner)) == _reference(events)


class CollectElements(Collect):
    """:class:`Collect` that leaves the ticks a hand-written bolt gets out of its rows."""

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.ack(tup)
        else:
            super().execute(tup)


def test_a_topology_wide_tick_reaches_no_stream_operator_as_an_element() -> None:
    """A topology-wide ``topology.tick.tuple.freq.secs`` (for hand-written bolts) once made
    the filters of a one-field spout's branches see floats (a tick's values) as events."""
    events = [{"kind": kind, "k": k, "ts": ts} for kind, k, ts in _events(400)]
    sb = StreamBuilder()
    source = sb.new_stream(Items(events), parallelism=2, name="events")
    a = source.filter(lambda e: e["kind"] == "a").map_to_pair(lambda e: (e["k"], e["ts"]))
    b = source.filter(lambda e: e["kind"] == "b").map_to_pair(lambda e: (e["k"], e["ts"]))
    a.count_by_key().map(lambda kv: kv).named("running")
    windowing = tumbling(seconds=WINDOW).event_time(lambda ts: ts, lag=LAG)
    joined = a.window(windowing).join(b).map(lambda kv: (kv[0], *kv[1]))
    joined.to(CollectElements(), name="collect")
    runner = _run(sb, turns=1200, workers=2, ticks=0.5)
    assert not runner.errors
    assert sorted(tuple(row) for row in values(runner)) == _reference(_events(400))


def test_a_key_share_that_never_reaches_a_window_task_does_not_hold_it_back() -> None:
    """Two upstream tasks, each with its own key, the keys hashing to different window
    tasks: each window task hears from one upstream task only."""
    events = [(("x" if i % 2 == 0 else "w"), i * 0.1) for i in range(300)]
    assert stable_hash(("x",)) % 2 != stable_hash(("w",)) % 2
    sb = StreamBuilder()
    (
        sb.new_stream(Items(events, ["key", "ts"]), parallelism=2, name="events")
        .map_to_pair(lambda e: (e["key"], e["ts"]))
        .window(tumbling(seconds=WINDOW).event_time(lambda ts: ts, lag=LAG))
        .count_by_key()
        .to(Collect(), name="collect")
    )
    runner = _run(sb, turns=1200, workers=2)
    closed = 29.9 - LAG
    expected: dict[tuple[str, float], int] = defaultdict(int)
    for key, ts in events:
        start = (ts // WINDOW) * WINDOW
        if start + WINDOW <= closed:
            expected[key, start] += 1
    assert not runner.errors
    assert sorted(tuple(row) for row in rows(runner)) == sorted(
        (key, n) for (key, _), n in expected.items()
    )


def test_only_components_an_event_time_window_reads_send_marks() -> None:
    sb = StreamBuilder()
    source = sb.new_stream(Items([("a", 1.0)], ["k", "ts"]), parallelism=2, name="events")
    pairs = source.map_to_pair(lambda e: (e["k"], e["ts"])).named("pairs")
    pairs.window(tumbling(seconds=1).event_time(lambda ts: ts)).count_by_key().named("w")
    pairs.window(tumbling(count=2)).count_by_key().named("counted")
    pairs.count_by_key().named("running")
    topology = sb.build()
    marked = {
        spec.id
        for spec in topology.components.values()
        for inp in spec.inputs
        if inp.stream == PROGRESS_STREAM
    }
    assert marked == {"w"}
    # map_to_pair runs in the spout's task (chained to it): that task sends the marks
    assert "pairs" not in topology.components
    assert PROGRESS_STREAM in topology.components["events"].streams


# -- the watermark's side ------------------------------------------------------------------


def test_an_input_quiet_between_two_marks_stops_holding_the_watermark_until_it_sends() -> None:
    wm = LowWatermark(frozenset({1, 2}), lag=0.0, idle_timeout=None, now=0.0)
    wm.observe(1, 10.0, 0.0)
    assert wm.advance(0.0) == float("-inf")  # 2 never heard from
    wm.mark(2)  # running, and nothing from it before its mark: quiet
    assert wm.advance(0.0) == 10.0
    wm.mark(1)  # 1 sent something before its mark: still counts
    wm.observe(1, 20.0, 0.0)
    wm.observe(2, 15.0, 0.0)  # 2 speaks again: it holds the watermark again
    wm.observe(1, 30.0, 0.0)
    assert wm.advance(0.0) == 15.0
    wm.mark(2)  # 15.0 came before this mark: 2 is not quiet
    assert wm.advance(0.0) == 15.0
    # no mark from 2 (its own input stalled): it holds the watermark however long
    wm.observe(1, 90.0, 0.0)
    assert wm.advance(0.0) == 15.0


def test_a_mark_says_whether_its_task_handled_input_since_the_last() -> None:
    """A task whose own input has not begun (its worker's spout still starting) or has
    stalled is not known to have nothing for anyone: its marks say it is idle."""
    timer = MarkTimer(1.0)
    assert timer.due(5.0) == IDLE_MARK
    timer.active = True
    assert timer.due(5.5) is None  # too soon after the last
    assert timer.due(6.0) == ACTIVE_MARK
    assert timer.due(7.0) == IDLE_MARK  # nothing handled since


def test_an_idle_input_holds_the_watermark_unless_every_input_is_idle_or_quiet() -> None:
    wm = LowWatermark(frozenset({1, 2, 3}), lag=1.0, idle_timeout=None, now=0.0)
    wm.observe(1, 10.0, 0.0)
    wm.observe(2, 20.0, 0.0)
    wm.mark(3, active=False)  # not started: waited for
    assert wm.advance(0.0) == float("-inf")
    wm.observe(3, 30.0, 0.0)
    for src in (1, 2, 3):
        wm.mark(src, active=True)  # each sent something before: all still count
    wm.mark(1, active=False)  # 1 stopped (its spout is behind): waited for at 10
    wm.mark(2, active=True)  # running with nothing for this task: quiet
    assert wm.advance(0.0) == 9.0
    wm.mark(3, active=False)  # 3 stopped too: every input quiet or stopped
    assert wm.advance(0.0) == 29.0  # the end of the input: the latest time seen


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([1, 2, 3]),
            st.sampled_from(["active", "idle"]) | st.floats(0, 100, allow_nan=False),
        ),
        max_size=40,
    )
)
def test_the_watermark_waits_for_every_input_not_marked_quiet(
    steps: list[tuple[int, str | float]],
) -> None:
    """Model: an input holds the watermark back from its first tuple on, unless its last
    mark came with no tuple from it since its previous mark and said it was running
    (quiet); one that said it was stopped (idle) holds it unless every input is quiet or
    idle, when the watermark is the latest time seen.  Never heard from and not quiet:
    the watermark does not move.  It never goes back."""
    wm = LowWatermark(frozenset({1, 2, 3}), lag=0.0, idle_timeout=None, now=0.0)
    top: dict[int, float] = {}
    since: set[int] = set()
    quiet: set[int] = set()
    idle: set[int] = set()
    value = float("-inf")
    for src, step in steps:
        if isinstance(step, str):
            if src in since:
                since.discard(src)
            else:
                (quiet if step == "active" else idle).add(src)
            wm.mark(src, active=step == "active")
        else:
            top[src] = max(top.get(src, step), step)
            since.add(src)
            quiet.discard(src)
            idle.discard(src)
            wm.observe(src, step, 0.0)
        waited = {1, 2, 3} - quiet
        if waited and not waited <= idle:
            if all(s in top for s in waited):
                value = max(value, min(top[s] for s in waited))
        elif top:
            value = max(value, max(top.values()))
        assert wm.advance(0.0) == value


def test_a_keyed_event_time_window_keeps_its_state_by_key_beside_the_marks() -> None:
    """The marks' all grouping says nothing of how a window's state is keyed: it still
    moves by key group on a rescale (a checkpointed topology)."""
    sb = StreamBuilder()
    pairs = sb.new_stream(Items([("a", 1.0)], ["k", "ts"]), parallelism=2, name="events")
    keyed = pairs.map_to_pair(lambda e: (e["k"], e["ts"])).named("pairs")
    keyed.update_state_by_key(lambda n, v: (n or 0) + 1).named("seen")
    keyed.window(tumbling(seconds=1).event_time(lambda ts: ts)).count_by_key().named("w")
    topology = sb.build()
    assert any(i.stream == PROGRESS_STREAM for i in topology.components["w"].inputs)
    assert keeps_keyed_state(topology, "w")
    assert KEYED in state_kinds(topology, "w")
