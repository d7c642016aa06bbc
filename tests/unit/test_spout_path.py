"""The compiled spout emit (``topology.runtime._spout``) against its pure-Python twin.

:mod:`topology.runtime.spout_path` gives a spout task a compiled ``emit`` (a
``SpoutEmit``) when ``spout_path.COMPILED`` is true as the task is built; otherwise the
spout's ``emit`` is :meth:`~topology.runtime.tasks.collector.SpoutCollector.emit`, which starts
trees through :meth:`acker.SpoutAcking.track`: the reference.  Most tests here run the same
topology on an :class:`InProcessRunner` once on each path (``spout_path.COMPILED`` patched
to False for the pure one) and check that what the bolts receive, the emits return or
raise, the spouts see acked and failed (and when, on the simulated clock), the pending
trees and the tasks' counters agree: msg ids with ackers and without, values of every
kind, each way to call ``emit`` right and wrong over every grouping, trees over several
tasks, roots owned by a local acker, timeouts (also of a tree started while a rotation is
due) and max spout pending.  The last tests drive ``SpoutEmit`` directly, from the contract
in ``topology/runtime/_spout.c``: its arguments, errors raised inside it, reference counts,
and the trees it starts next to those ``SpoutAcking.track`` starts.

Without the compiled module (or with ``SPARKSTORM_PURE_PYTHON=1``) the comparisons still
run the pure-Python side, then skip, saying so; the tests of ``SpoutEmit`` itself skip.
"""

from __future__ import annotations

import gc
import os
import sys
import weakref
from collections.abc import Callable, Iterator
from functools import reduce
from operator import xor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acker import AckOutbox, PendingTrees, SpoutAcking
from acker.pending import MIN_ADAPTIVE_CAP
from grouping.shuffle import ShuffleGrouping
from tests.unit.path_switch import PathSwitch
from tests.unit.test_basic_path import (
    FLOAT_EDGES,
    INT_EDGES,
    PROBE_STREAMS,
    TEXT_EDGES,
    VALUES,
    ListValues,
    Opaque,
    Sink,
    StrStream,
    ValueSink,
    agree,
    counters,
    fast_emits,
    instances,
    msgpack_encodable,
    plain,
    received,
    subscribe_to_probe,
)
from topology import DEAD_LETTER_STREAM, Bolt, Spout, StatefulBolt, TopologyBuilder, Tuple
from topology.errors import EmitError
from topology.runtime import basic_path, spout_path
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.net.codec import roundtrip
from topology.runtime.tasks.task import SpoutTask
from topology.spec import Topology

pytestmark = pytest.mark.timeout(120)

NOT_BUILT = (
    "topology.runtime._spout is not in use (not built, or SPARKSTORM_PURE_PYTHON is set): "
    "only the pure-Python side ran"
)
SWITCH = PathSwitch(spout_path, NOT_BUILT)
on_path, paths, compiled_side_ran = SWITCH.on_path, SWITCH.paths, SWITCH.compiled_side_ran
#: Hypothesis: few examples (each runs whole topologies twice), no deadline (the first
#: example of a run builds more than the others).
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: For the tests of SpoutEmit itself (no topology to build): more examples.
MANY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
needs_compiled = pytest.mark.skipif(not spout_path.COMPILED, reason=NOT_BUILT)
#: Acker settings: (ackers on, workers).
LAYOUTS = pytest.mark.parametrize(
    "ackers, workers", [(True, 1), (False, 1), (True, 2)], ids=["acked", "unacked", "2-workers"]
)


def test_ci_builds_the_compiled_spout_path() -> None:
    """.ci/run sets SPARKSTORM_REQUIRE_SPEEDUPS: there a missing build is a failure."""
    if os.environ.get("SPARKSTORM_REQUIRE_SPEEDUPS"):
        assert spout_path.COMPILED, "topology.runtime._spout did not build (compiler? headers?)"
    if os.environ.get("SPARKSTORM_PURE_PYTHON", "") not in ("", "0"):
        assert not spout_path.COMPILED
    assert spout_path.COMPILED == (spout_path.SpoutEmit is not None)
    if spout_path.COMPILED:
        assert basic_path.COMPILED  # (it builds on FastRoute)


# -- running a topology on one path -------------------------------------------------------


def build(
    path: str, topology: Topology, conf: dict[str, Any] | None = None, **kwargs: Any
) -> InProcessRunner:
    """A started runner whose spout tasks run ``path`` (asserted)."""
    settings_ = {"topology.workers": 1, **(conf or {})}
    with on_path(path):
        runner = InProcessRunner(topology, settings_, **kwargs)
    spouts = [t for w in runner.workers.values() for t in w.spouts]
    assert spouts, "the topology has no spout"
    for task in spouts:
        assert (task.compiled is not None) == (path == "compiled"), task.component
        assert task.instance.emit == (
            task.collector.emit if task.compiled is None else task.compiled.emit
        )
    return runner


def spout_tasks(runner: InProcessRunner, component: str) -> list[SpoutTask]:
    count = len(runner.assignment.component_tasks[component])
    tasks = [runner.task(component, i) for i in range(count)]
    assert all(isinstance(t, SpoutTask) for t in tasks)
    return tasks  # type: ignore[return-value]


def pending_counts(runner: InProcessRunner) -> dict[tuple[str, int], int | None]:
    """Trees every spout task has pending (None without ackers)."""
    return {
        (t.component, t.context.task_index): None if t.pending is None else len(t.pending)
        for w in runner.workers.values()
        for t in w.spouts
    }


def outcome(spouts: list[Any]) -> tuple[list[str], list[str]]:
    """Every acked msg id and failure of ``spouts``, sorted (repr: any msg id sorts)."""
    acked = sorted(repr(m) for s in spouts for m in s.acked)
    failed = sorted(repr(f) for s in spouts for f in s.failed)
    return acked, failed


class PendingTrace:
    """An ``on_turn`` hook (set :attr:`runner` once built): what the spout tasks have
    pending after every turn, and the most any of them had."""

    def __init__(self) -> None:
        self.runner: InProcessRunner | None = None
        self.turns: list[Any] = []
        self.most = 0

    def __call__(self, worker: int, now: float) -> None:
        assert self.runner is not None
        counts = pending_counts(self.runner)
        self.turns.append((worker, sorted(counts.items())))
        self.most = max([self.most, *(c for c in counts.values() if c is not None)])


def conf_of(ackers: bool, workers: int) -> dict[str, Any]:
    return {"topology.workers": workers, "topology.acker.executors": None if ackers else 0}


class Failing(Sink):
    """Records every tuple; fails those whose first value is in ``bad``, acks the others."""

    def __init__(self, bad: frozenset[Any] = frozenset()) -> None:
        self.bad = bad

    def execute(self, tup: Tuple) -> None:
        self.received.append((tup.stream, tup.values))
        if tup.values[0] in self.bad:
            self.fail(tup)
        else:
            self.ack(tup)


class Holds(Bolt):
    """Keeps every tuple without acking it (until :meth:`release`)."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.held.append(tup)

    def release(self, count: int | None = None) -> None:
        """Ack the ``count`` oldest held tuples (all by default)."""
        done = self.held[:count] if count is not None else self.held[:]
        del self.held[: len(done)]
        for tup in done:
            self.ack(tup)


# -- 1. msg ids with ackers and without ----------------------------------------------------


class Feed(Spout):
    """Emits ``[i, "v<i>"]`` for its share of ``range(n)``, ``per_call`` a call; every
    ``untracked``-th without a msg id, the others with msg id ``i``; records acks and
    fails (with the reason)."""

    outputs = {"default": ["i", "v"], "unheard": ["i", "v"]}

    def __init__(self, n: int, untracked: int = 0, per_call: int = 3) -> None:
        self.n = n
        self.untracked = untracked
        self.per_call = per_call

    def open(self, conf: Any, context: Any) -> None:
        tasks = len(context.component_tasks())
        self.todo = list(range(context.task_index, self.n, tasks))
        self.returned: list[Any] = []
        self.acked: list[Any] = []
        self.failed: list[tuple[Any, str]] = []

    def tracked(self, i: int) -> bool:
        return not self.untracked or i % self.untracked != 0

    def next_tuple(self) -> None:
        for _ in range(self.per_call):
            if self.todo:
                i = self.todo.pop(0)
                msg_id = i if self.tracked(i) else None
                self.returned.append(self.emit([i, f"v{i}"], msg_id))
                if i % 5 == 0:  # and one on a stream nobody subscribes to
                    self.returned.append(self.emit([i, "u"], msg_id, "unheard"))

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind))


def feed_run(n: int, untracked: int, bad: frozenset[int], ackers: bool, workers: int) -> None:
    builder = TopologyBuilder()
    builder.set_spout("feed", Feed(n, untracked), parallelism=2)
    builder.set_bolt("sink", Failing(bad), parallelism=3).fields_grouping("feed", ["v"])
    topology = builder.create_topology()
    tracked = [i for i in range(n) if not untracked or i % untracked != 0]
    unheard = [i for i in tracked if i % 5 == 0]  # (also sent where nobody listens)
    outcomes = {}
    for path in paths():
        trace = PendingTrace()
        runner = trace.runner = build(path, topology, conf_of(ackers, workers), on_turn=trace)
        feeds, sinks = instances(runner, "feed"), instances(runner, "sink")

        def done(feeds: list[Any] = feeds, sinks: list[Any] = sinks) -> bool:
            settled = sum(len(f.acked) + len(f.failed) for f in feeds)
            got = sum(len(s.received) for s in sinks)
            return settled == len(tracked) + len(unheard) and got == n

        runner.activate()
        runner.run_until(done, 3000, advance=0.01)
        got = sorted(v for s in sinks for _, v in s.received)
        assert got == sorted([i, f"v{i}"] for i in range(n))
        acked, failed = outcome(feeds)
        if ackers:  # a failed tuple fails its tree; the unheard emits are complete at once
            want = [i for i in tracked if i not in bad] + unheard
            assert acked == sorted(repr(i) for i in want)
            assert failed == sorted(repr((i, "failed")) for i in tracked if i in bad)
        else:
            assert acked == sorted(repr(i) for i in tracked + unheard) and failed == []
        assert all(p in (0, None) for p in pending_counts(runner).values())
        stats = counters(runner)
        emits = n + sum(1 for i in range(n) if i % 5 == 0)
        assert sum(stats[("feed", i)]["emit_calls"] for i in range(2)) == emits
        assert sum(stats[("feed", i)]["routes"]["default"] for i in range(2)) == n
        assert sum(sum(stats[("feed", i)]["transferred"].values()) for i in range(2)) == n
        assert runner.errors == []
        if path == "compiled":  # every emit here is one the compiled emit takes itself
            assert sum(fast_emits(f) for f in feeds) == emits
        outcomes[path] = {
            "returned": [f.returned for f in feeds],
            "received": received(runner, ["sink"]),
            "acked": [f.acked for f in feeds],
            "failed": [f.failed for f in feeds],
            "counters": stats,
            "pending trace": trace.turns,
        }
    agree(outcomes)


@LAYOUTS
def test_msg_ids_arrive_ack_fail_and_count_alike(ackers: bool, workers: int) -> None:
    feed_run(40, 4, frozenset({3, 7, 21}), ackers, workers)
    compiled_side_ran()


def test_generated_feeds_agree() -> None:
    @FEW
    @given(
        st.integers(1, 30).flatmap(
            lambda n: st.tuples(st.just(n), st.integers(0, 4), st.frozensets(st.integers(0, n - 1)))
        ),
        st.sampled_from([(True, 1), (False, 1), (True, 2)]),
    )
    def check(case: tuple[int, int, frozenset[int]], layout: tuple[bool, int]) -> None:
        n, untracked, bad = case
        feed_run(n, untracked, bad, *layout)

    check()
    compiled_side_ran()


def test_pending_trees_count_and_complete_alike() -> None:
    """Trees wait while a bolt holds their tuples, complete when it acks them: the pending
    count, the acks and the complete latencies agree."""
    builder = TopologyBuilder()
    builder.set_spout("feed", Feed(12, untracked=3, per_call=12))
    builder.set_bolt("holds", Holds(), parallelism=2).shuffle_grouping("feed")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        feed, task = runner.instance("feed"), spout_tasks(runner, "feed")[0]
        holds = instances(runner, "holds")
        runner.activate()
        runner.run_until(lambda holds=holds: sum(len(h.held) for h in holds) == 12, 200, 0.01)
        assert task.pending is not None and len(task.pending) == 8  # 12 less 4 untracked
        assert feed.acked == [5, 10]  # tracked on the unheard stream: complete at once
        steps = []
        for h in holds:
            h.release(2)
            runner.clock.advance(0.5)  # type: ignore[attr-defined]
            runner.turn(3)
            steps.append((len(task.pending), sorted(feed.acked)))
        assert [n for n, _ in steps] == sorted((n for n, _ in steps), reverse=True)
        assert steps[-1][0] < 8  # (released tuples completed their trees)
        for h in holds:
            h.release()
        runner.run_until(lambda pending=task.pending: len(pending) == 0, 100, advance=0.01)
        assert sorted(feed.acked) == [1, 2, 4, 5, 5, 7, 8, 10, 10, 11]
        assert task.pending.completed == 8 and feed.failed == []
        outcomes[path] = {
            "steps": steps,
            "acked": feed.acked,
            "latency": task.pending.mean_complete_latency,
            "histogram": task.latencies.counts,
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


# -- 2. values of every kind ----------------------------------------------------------------


class ValueFeed(Spout):
    """Emits ``[i, cases[i]]`` with msg id ``i`` on ``stream``, one a call; records what
    the emit returned or raised, and which emits the compiled emit took itself."""

    outputs = {"default": ["i", "value"], "unheard": ["i", "value"]}

    def __init__(self, cases: list[Any], stream: str = "default") -> None:
        self.cases = cases
        self.stream = stream

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.results: dict[int, Any] = {}
        self.took: dict[int, int] = {}
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        if self.i >= len(self.cases):
            return
        i, self.i = self.i, self.i + 1
        before = fast_emits(self)
        try:
            tasks = self.emit([i, self.cases[i]], i, self.stream)
        except EmitError as exc:
            self.results[i] = ("EmitError", str(exc))
        else:
            self.results[i] = ("sent", tasks)
        self.took[i] = fast_emits(self) - before

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


def feed_values(cases: list[Any], ackers: bool, workers: int, stream: str) -> None:
    builder = TopologyBuilder()
    builder.set_spout("feed", ValueFeed(cases, stream))
    builder.set_bolt("sink", ValueSink(), parallelism=3).fields_grouping("feed", ["value"])
    topology = builder.create_topology()
    subscribed = stream == "default"
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf_of(ackers, workers))
        feed, sinks = runner.instance("feed"), instances(runner, "sink")

        def done(feed: Any = feed, sinks: list[Any] = sinks) -> bool:
            sent = [i for i, r in feed.results.items() if r[0] == "sent"]
            got = sum(len(s.received) for s in sinks)
            return (
                len(feed.results) == len(cases)
                and sorted(feed.acked) == sent
                and got == sum(1 for i in sent if feed.results[i][1])
            )

        runner.activate()
        runner.run_until(done, 3000, advance=0.01)
        where: dict[int, int] = {}
        for index, sink in enumerate(sinks):
            for i, text in sink.received.items():
                # (across workers a value is msgpack'd: a tuple arrives as a list)
                assert text in (repr(cases[i]), repr(roundtrip([cases[i]])[0])), i
                where[i] = index
        for i, value in enumerate(cases):
            result = feed.results[i]
            if not subscribed:  # nobody subscribes: not encoded, so never refused
                assert result == ("sent", []), (i, value)
            elif msgpack_encodable(value):
                assert result[0] == "sent" and len(result[1]) == 1, (i, value, result)
                assert where[i] == runner.assignment.component_tasks["sink"].index(result[1][0])
            else:
                assert result[0] == "EmitError" and "msgpack cannot encode" in result[1]
                assert i not in where
        if path == "compiled":  # which emits the compiled emit took itself
            assert feed.took == {i: int(not subscribed or plain(v)) for i, v in enumerate(cases)}
        assert feed.failed == [] and runner.errors == []
        assert all(p in (0, None) for p in pending_counts(runner).values())
        outcomes[path] = {
            "results": feed.results,
            "acked": feed.acked,
            "where": where,
            "counters": counters(runner),
        }
    agree(outcomes)


@pytest.mark.parametrize("stream", ["default", "unheard"])
@LAYOUTS
def test_values_of_every_kind_arrive_or_are_refused_alike(
    ackers: bool, workers: int, stream: str
) -> None:
    @FEW
    @given(st.lists(VALUES, min_size=1, max_size=10))
    def check(cases: list[Any]) -> None:
        feed_values(cases, ackers, workers, stream)

    check()
    compiled_side_ran()


class Custom:
    """A value of a user type (not encodable)."""

    def __repr__(self) -> str:
        return "Custom()"


def test_the_edge_values_arrive_or_are_refused_alike() -> None:
    """Every boundary of the plain types, and values the Python emit must decide."""
    cases: list[Any] = [*INT_EDGES, 2**63, -(2**63) + 1, *TEXT_EDGES, *FLOAT_EDGES]
    cases += [True, False, None, b"", b"\xff", bytearray(b"ba"), "ascii", "ü", "\x7f"]
    cases += [[1, [2, "ü"]], {"k": [b"v", None]}, {1: 2.5}, [2**64], (1, "t"), ()]
    cases += [{"s": {1}}, {1, 2}, frozenset(), Opaque(), Custom(), complex(0, 1), [Opaque()]]
    for ackers, workers in ((True, 1), (False, 1), (True, 2)):
        feed_values(cases, ackers, workers, "default")
        feed_values(cases, ackers, workers, "unheard")
    compiled_side_ran()


class Ids(Spout):
    """Emits ``["x"]`` with each of ``msg_ids`` (one a call), keeping what it acks."""

    outputs = ["w"]

    def __init__(self, msg_ids: list[Any]) -> None:
        self.msg_ids = msg_ids

    def open(self, conf: Any, context: Any) -> None:
        self.todo = list(self.msg_ids)
        self.sent: list[Any] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        if self.todo:
            msg_id = self.todo.pop(0)
            self.sent.append(msg_id)
            self.emit([repr(msg_id)], msg_id)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)


@pytest.mark.parametrize("ackers", [True, False], ids=["acked", "unacked"])
def test_any_msg_id_comes_back_as_itself(ackers: bool) -> None:
    """Falsy, unhashable and user-typed msg ids are acked as the very objects emitted."""
    msg_ids = [0, "", False, 0.0, b"", (), [], {}, [1, 2], {"k": 1}, Custom(), 2**70, -(2**70)]
    builder = TopologyBuilder()
    builder.set_spout("ids", Ids(msg_ids))
    builder.set_bolt("sink", Sink()).shuffle_grouping("ids")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf_of(ackers, 1))
        spout = runner.instance("ids")
        runner.activate()
        runner.run_until(lambda spout=spout: len(spout.acked) == len(msg_ids), 500, 0.01)
        by_id = {id(m): m for m in spout.acked}
        assert sorted(by_id) == sorted(id(m) for m in spout.sent)  # the same objects
        assert spout.failed == []
        outcomes[path] = {
            "acked": [repr(m) for m in spout.acked],
            "received": received(runner, ["sink"]),
        }
    agree(outcomes)
    compiled_side_ran()


# -- 3. every way to call emit, over every grouping ---------------------------------------


def _gen() -> Iterator[str]:
    yield "g"


#: name -> emit call made by the Probe spout (``s.mid()``: this call's msg id, recorded).
CALLS: dict[str, Callable[[Any], Any]] = {
    "untracked": lambda s: s.emit(["x"]),
    "msg id positional": lambda s: s.emit(["x"], s.mid()),
    "msg_id=": lambda s: s.emit(["x"], msg_id=s.mid()),
    "msg_id=None": lambda s: s.emit(["x"], msg_id=None),
    "None positional": lambda s: s.emit(["x"], None),
    "msg id, stream positional": lambda s: s.emit(["x"], s.mid(), "single"),
    "None, stream positional": lambda s: s.emit(["x"], None, "single"),
    "stream=": lambda s: s.emit(["x"], stream="single"),
    "msg_id=, stream=": lambda s: s.emit(["x"], msg_id=s.mid(), stream="single"),
    "stream=, msg_id=": lambda s: s.emit(["x"], stream="single", msg_id=s.mid()),
    "msg id positional, stream=": lambda s: s.emit(["x"], s.mid(), stream="single"),
    "stream='default'": lambda s: s.emit(["x"], s.mid(), stream="default"),
    "keywords from a dict": lambda s: s.emit(["x"], **{"msg_id": s.mid(), "stream": "single"}),
    "a keyword built at run time": lambda s: s.emit(["x"], **{"".join(["msg", "_id"]): s.mid()}),
    "values=": lambda s: s.emit(values=["kw"], msg_id=s.mid()),
    "msg id twice": lambda s: s.emit(["x"], s.mid(), msg_id=s.mid()),
    "None, then msg_id=": lambda s: s.emit(["x"], None, msg_id=s.mid()),
    "stream twice": lambda s: s.emit(["x"], None, "single", stream="single"),
    "values twice": lambda s: s.emit(["x"], values=["y"]),
    "unknown keyword": lambda s: s.emit(["x"], foo=1),
    "unknown keyword, msg_id=": lambda s: s.emit(["x"], msg_id=s.mid(), foo=1),
    "unknown keyword after all three": lambda s: s.emit(["x"], s.mid(), "single", bar=2),
    "no arguments": lambda s: s.emit(),
    "four arguments": lambda s: s.emit(["x"], s.mid(), "single", 4),
    "arity long": lambda s: s.emit(["a", "b"], s.mid()),
    "arity short": lambda s: s.emit([]),
    "arity long, unheard": lambda s: s.emit(["a", "b"], s.mid(), "unheard"),
    "a tuple": lambda s: s.emit(("t",), s.mid()),
    "a generator": lambda s: s.emit(_gen(), s.mid()),
    "a str": lambda s: s.emit("abc", s.mid()),
    "a bytes": lambda s: s.emit(b"abc"),
    "a dict": lambda s: s.emit({"w": 1}, s.mid()),
    "None values": lambda s: s.emit(None),
    "an int": lambda s: s.emit(5, s.mid()),
    "a list subclass": lambda s: s.emit(ListValues(["sub"]), s.mid()),
    "a tuple, unheard": lambda s: s.emit(("t",), s.mid(), "unheard"),
    "a str, unheard": lambda s: s.emit("a", stream="unheard"),
    "undeclared stream": lambda s: s.emit(["x"], s.mid(), "nope"),
    "undeclared stream=": lambda s: s.emit(["x"], stream="nope"),
    "stream None": lambda s: s.emit(["x"], s.mid(), None),
    "stream unhashable": lambda s: s.emit(["x"], stream=[]),
    "stream a str subclass": lambda s: s.emit(["x"], s.mid(), StrStream("single")),
    "a direct stream": lambda s: s.emit(["x"], stream="targeted"),
    "a direct stream, msg id": lambda s: s.emit(["x"], s.mid(), "targeted"),
    "emit_direct": lambda s: s.emit_direct(s.direct_tasks[0], ["d"], stream="targeted"),
    "emit_direct, msg id": lambda s: s.emit_direct(s.direct_tasks[-1], ["d"], s.mid(), "targeted"),
    "emit_direct to a stranger": lambda s: s.emit_direct(999, ["d"], s.mid(), "targeted"),
    "emit_direct, not direct": lambda s: s.emit_direct(s.direct_tasks[0], ["d"], s.mid()),
    "two subscribers": lambda s: s.emit(["x"], stream="both"),
    "two subscribers, msg id": lambda s: s.emit(["x"], s.mid(), "both"),
    "all grouping": lambda s: s.emit(["x"], stream="every"),
    "all grouping, msg id": lambda s: s.emit(["x"], s.mid(), "every"),
    "global grouping": lambda s: s.emit(["y"], s.mid(), "single"),
    "fields on two fields": lambda s: s.emit(["k", 3], s.mid(), "pairs"),
    "fields on two fields, again": lambda s: s.emit(["k", 3], s.mid(), "pairs"),
    "fields on two fields, a float": lambda s: s.emit(["k", 3.0], s.mid(), "pairs"),
    "fields on two fields, a set": lambda s: s.emit(["k", {3}], s.mid(), "pairs"),
    "fields on one field": lambda s: s.emit(["key", 1], s.mid(), "keyed"),
    "fields on one field, again": lambda s: s.emit(["key", 2], s.mid(), "keyed"),
    "fields on one field, int": lambda s: s.emit([1, 2], s.mid(), "keyed"),
    "fields on one field, True": lambda s: s.emit([True, 2], s.mid(), "keyed"),
    "fields on one field, 1.0": lambda s: s.emit([1.0, 2], s.mid(), "keyed"),
    "fields on one field, bytes": lambda s: s.emit([b"key", 2], s.mid(), "keyed"),
    "fields on one field, None": lambda s: s.emit([None, 2], s.mid(), "keyed"),
    "fields on one field, a list": lambda s: s.emit([["key"], 2], s.mid(), "keyed"),
    "fields on one field, non-ASCII": lambda s: s.emit(["ключ", 2], s.mid(), "keyed"),
    "local or shuffle": lambda s: s.emit(["x"], s.mid(), "local"),
    "partial key": lambda s: s.emit(["hot"], s.mid(), "partial"),
    "partial key, again": lambda s: s.emit(["hot"], s.mid(), "partial"),
    "none grouping": lambda s: s.emit(["x"], s.mid(), "none"),
    "custom grouping, one task": lambda s: s.emit(["one"], s.mid(), "custom"),
    "custom grouping, every task": lambda s: s.emit(["every"], s.mid(), "custom"),
    "custom grouping, no task": lambda s: s.emit(["nobody"], s.mid(), "custom"),
    "no fields": lambda s: s.emit([], s.mid(), "empty"),
    "no fields, one value": lambda s: s.emit(["x"], s.mid(), "empty"),
    "unheard": lambda s: s.emit(["x"], stream="unheard"),
    "unheard, msg id": lambda s: s.emit(["x"], s.mid(), "unheard"),
    "unheard, msg_id=": lambda s: s.emit(["x"], msg_id=s.mid(), stream="unheard"),
    "unheard, a set": lambda s: s.emit([{1}], s.mid(), "unheard"),
    "non-ASCII": lambda s: s.emit(["naïve"], s.mid()),
    "int 2**64 - 1": lambda s: s.emit([2**64 - 1], s.mid()),
    "int 2**64": lambda s: s.emit([2**64], s.mid()),
    "int -2**63": lambda s: s.emit([-(2**63)], s.mid()),
    "int -2**63 - 1": lambda s: s.emit([-(2**63) - 1], s.mid()),
    "a user object": lambda s: s.emit([Opaque()], s.mid()),
    "a nested value": lambda s: s.emit([{"k": [1, b"v"]}], s.mid()),
    "twice in one call": lambda s: [
        s.emit(["1"], s.mid("/1")),
        s.emit(["2"], s.mid("/2"), "every"),
    ],
    "through the class": lambda s: Spout.emit(s, ["c"], s.mid()),
    "through the class, unheard": lambda s: Spout.emit(s, ["c"], s.mid(), "unheard"),
}
NAMES = list(CALLS)

#: The calls the compiled emit takes itself (the others go to the Python emit): the
#: comparison covers both.
COMPILED_CALLS = {
    "untracked",
    "msg id positional",
    "msg_id=",
    "msg_id=None",
    "None positional",
    "msg id, stream positional",
    "None, stream positional",
    "stream=",
    "msg_id=, stream=",
    "stream=, msg_id=",
    "msg id positional, stream=",
    "stream='default'",
    "keywords from a dict",
    "all grouping",
    "all grouping, msg id",
    "global grouping",
    "fields on two fields",
    "fields on two fields, again",
    "fields on two fields, a float",
    "fields on one field",
    "fields on one field, again",
    "fields on one field, int",
    "fields on one field, True",
    "fields on one field, 1.0",
    "fields on one field, bytes",
    "fields on one field, None",
    "local or shuffle",
    "partial key",
    "partial key, again",
    "none grouping",
    "no fields",
    "unheard",
    "unheard, msg id",
    "unheard, msg_id=",
    "unheard, a set",
    "int 2**64 - 1",
    "int -2**63",
    "twice in one call",
}
#: Either path is right for these (the compiled emit compares keyword names by identity:
#: a name built at run time is not the interned one, and goes to Python).
EITHER = {"a keyword built at run time"}

#: What the pure path does with some of the calls (the rest: compared only).
EXPECTED = {
    "msg id twice": ("TypeError", "got multiple values for argument 'msg_id'"),
    "None, then msg_id=": ("TypeError", "got multiple values for argument 'msg_id'"),
    "stream twice": ("TypeError", "got multiple values for argument 'stream'"),
    "values twice": ("TypeError", "got multiple values for argument 'values'"),
    "unknown keyword": ("TypeError", "got an unexpected keyword argument 'foo'"),
    "unknown keyword, msg_id=": ("TypeError", "got an unexpected keyword argument 'foo'"),
    "unknown keyword after all three": ("TypeError", "unexpected keyword argument 'bar'"),
    "no arguments": ("TypeError", "missing 1 required positional argument: 'values'"),
    "four arguments": ("TypeError", "positional arguments but 5 were given"),
    "arity long": ("EmitError", "emitted 2 value(s) on stream 'default', which declares 1"),
    "arity short": ("EmitError", "emitted 0 value(s) on stream 'default', which declares 1"),
    "arity long, unheard": ("EmitError", "on stream 'unheard', which declares 1 field(s)"),
    "a str": ("EmitError", "a str where a list of values was expected"),
    "a bytes": ("EmitError", "a bytes where a list of values was expected"),
    "a dict": ("EmitError", "a dict where a list"),
    "None values": ("EmitError", "a NoneType where a list of values was expected"),
    "an int": ("EmitError", "a int where a list of values was expected"),
    "a str, unheard": ("EmitError", "a str where a list of values was expected"),
    "undeclared stream": ("EmitError", "emitted on undeclared stream 'nope'"),
    "undeclared stream=": ("EmitError", "emitted on undeclared stream 'nope'"),
    "stream None": ("EmitError", "emitted on undeclared stream None"),
    "stream unhashable": ("TypeError", "unhashable type: 'list'"),
    "a direct stream": ("EmitError", "is a direct stream; use emit_direct(task, values)"),
    "a direct stream, msg id": ("EmitError", "is a direct stream; use emit_direct"),
    "emit_direct, not direct": ("EmitError", "which is not declared direct"),
    "emit_direct to a stranger": ("EmitError", "to task 999, which does not subscribe"),
    "fields on two fields, a set": ("EmitError", "a value of type set for field 'b'"),
    "no fields, one value": ("EmitError", "which declares 0 field(s) []"),
    "int 2**64": ("EmitError", "a value of type int for field 'w' that msgpack cannot"),
    "int -2**63 - 1": ("EmitError", "a value of type int for field 'w' that msgpack cannot"),
    "a user object": ("EmitError", "a value of type Opaque for field 'w'"),
}


class Probe(Spout):
    """Makes call ``NAMES[i]`` on its ``i``-th ``next_tuple``; records what it returned or
    raised, the msg ids it passed, and which emits the compiled emit took itself."""

    outputs = PROBE_STREAMS

    def open(self, conf: Any, context: Any) -> None:
        self.direct_tasks = context.component_tasks("direct")
        self.todo = list(NAMES)
        self.name = ""
        self.results: dict[str, Any] = {}
        self.took: dict[str, int] = {}
        self.used: dict[str, list[str]] = {}
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def mid(self, suffix: str = "") -> str:
        """A msg id for the call being made (its name), recorded."""
        msg_id = self.name + suffix
        self.used.setdefault(self.name, []).append(msg_id)
        return msg_id

    def next_tuple(self) -> None:
        if not self.todo:
            return
        name = self.name = self.todo.pop(0)
        before = fast_emits(self)
        try:
            self.results[name] = ("returned", CALLS[name](self))
        except Exception as exc:
            self.results[name] = (type(exc).__name__, str(exc))
        self.took[name] = fast_emits(self) - before

    def tracked(self) -> list[str]:
        """The msg ids of the calls that returned: each must be acked."""
        return sorted(
            m for n, r in self.results.items() if r[0] == "returned" for m in self.used.get(n, [])
        )

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind))


def probe_topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("probe", Probe())
    subscribe_to_probe(builder)
    return builder.create_topology()


SINKS = ["shuffled", "global", "left", "right", "all", "pairs", "keyed", "direct"]
SINKS += ["local", "partial", "none", "custom", "empty"]


@LAYOUTS
def test_every_way_to_call_emit_behaves_alike(ackers: bool, workers: int) -> None:
    topology = probe_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf_of(ackers, workers))
        probe = runner.instance("probe")

        def done(probe: Any = probe) -> bool:
            return len(probe.results) == len(NAMES) and sorted(probe.acked) == probe.tracked()

        runner.activate()
        runner.run_until(done, 3000, advance=0.01)
        for _ in range(20):  # what is still on its way to the sinks
            runner.clock.advance(0.01)  # type: ignore[attr-defined]
            runner.turn()
        results = probe.results
        for name, (kind, text) in EXPECTED.items():
            assert results[name][0] == kind and text in results[name][1], (name, results[name])
        returned = {n: r[1] for n, r in results.items() if r[0] == "returned"}
        assert set(returned) == set(NAMES) - set(EXPECTED)
        tasks = runner.assignment.component_tasks
        assert returned["all grouping"] == returned["all grouping, msg id"] == tasks["all"]
        assert len(returned["two subscribers"]) == len(returned["two subscribers, msg id"]) == 2
        assert returned["global grouping"] == [tasks["global"][0]]
        assert returned["emit_direct"] == [tasks["direct"][0]]
        assert returned["emit_direct, msg id"] == [tasks["direct"][-1]]
        assert (
            returned["unheard"] == returned["unheard, msg id"] == returned["unheard, a set"] == []
        )
        assert returned["a tuple"] and returned["a generator"] and returned["a list subclass"]
        assert returned["fields on one field"] == returned["fields on one field, again"]
        assert returned["fields on two fields"] == returned["fields on two fields, again"]
        assert returned["custom grouping, every task"] == tasks["custom"]
        assert returned["custom grouping, no task"] == []
        assert len(returned["no fields"]) == 1
        # every msg id of a call that returned is acked once (at once where nobody
        # received the tuple, or without ackers), none of a call that raised
        assert sorted(probe.acked) == probe.tracked() and probe.failed == []
        assert all(p in (0, None) for p in pending_counts(runner).values())
        assert runner.errors == []
        took = {name for name, n in probe.took.items() if n}
        if path == "compiled":
            assert took - EITHER == COMPILED_CALLS
            assert probe.took["twice in one call"] == 2
        else:
            assert took == set()
        outcomes[path] = {
            "results": results,
            "acked": probe.acked,
            "received": received(runner, SINKS),
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


class DirectDefault(Spout):
    """Its default stream is direct (or, with ``default`` False, it has none): ``emit``
    without a stream must raise either way, and ``emit_direct`` must work."""

    def __init__(self, default: bool) -> None:
        self.default = default

    def declare_output_fields(self, declarer: Any) -> None:
        if self.default:
            declarer.declare(["w"], direct=True)
        else:
            declarer.declare(["w"], "other")

    def open(self, conf: Any, context: Any) -> None:
        self.target = context.component_tasks("sink")[-1]
        self.results: list[Any] = []
        self.acked: list[Any] = []
        self.i = 0

    def next_tuple(self) -> None:
        if self.i >= 4:
            return
        i, self.i = self.i, self.i + 1
        for call in (
            lambda: self.emit([i]),
            lambda: self.emit([i], ("emit", i)),
            lambda: self.emit_direct(self.target, [i], ("direct", i)),
            lambda: self.emit([i], ("other", i), "other"),
        ):
            try:
                self.results.append(("returned", call()))
            except Exception as exc:
                self.results.append((type(exc).__name__, str(exc)))

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)


@pytest.mark.parametrize("default", [True, False], ids=["direct-default", "no-default"])
def test_a_spout_whose_default_stream_is_direct_or_missing(default: bool) -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", DirectDefault(default))
    sink = builder.set_bolt("sink", Sink(), 2)
    if default:
        sink.direct_grouping("spout")
    else:
        sink.shuffle_grouping("spout", "other")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        spout = runner.instance("spout")
        kind = "direct" if default else "other"  # (the other emits raise)
        want = sorted(repr((kind, i)) for i in range(4))
        runner.activate()
        runner.run_until(
            lambda spout=spout, want=want: sorted(map(repr, spout.acked)) == want, 500, 0.01
        )
        first = spout.results[:4]
        if default:
            assert first[0][0] == first[1][0] == "EmitError" and "use emit_direct" in first[0][1]
            assert first[2] == ("returned", [runner.assignment.component_tasks["sink"][-1]])
            assert first[3][0] == "EmitError" and "undeclared stream 'other'" in first[3][1]
        else:
            assert first[0][0] == first[1][0] == "EmitError"
            assert "undeclared stream 'default'" in first[0][1]
            assert first[2][0] == "EmitError" and first[3][0] == "returned"
        outcomes[path] = {
            "results": spout.results,
            "acked": spout.acked,
            "received": received(runner, ["sink"]),
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


def test_a_grouping_that_raises_propagates_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in grouping (the compiled emit calls it) that raises: the emit raises the
    same error, starts no tree and sends nothing; the next emit works."""
    real = ShuffleGrouping.choose_tasks

    def choose(self: ShuffleGrouping, values: Any) -> list[int]:
        if values[0] == "boom":
            raise ValueError("the grouping broke")
        return real(self, values)

    monkeypatch.setattr(ShuffleGrouping, "choose_tasks", choose)
    calls = [(["boom"], "boom-1"), (["boom"], None), (["ok"], "ok-1"), (["ok"], None)]
    builder = TopologyBuilder()
    builder.set_spout("ids", Ids([]))
    builder.set_bolt("sink", Sink(), 2).shuffle_grouping("ids")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        spout, task = runner.instance("ids"), spout_tasks(runner, "ids")[0]
        results = []
        for values, msg_id in calls:
            try:
                results.append(("returned", spout.emit(values, msg_id)))
            except ValueError as exc:
                results.append(("ValueError", str(exc)))
        assert [r[0] for r in results] == ["ValueError", "ValueError", "returned", "returned"]
        assert task.pending is not None and len(task.pending) == 1  # only "ok-1"
        runner.run_until(lambda spout=spout: spout.acked == ["ok-1"], 100, 0.01)
        assert [v for s in instances(runner, "sink") for _, v in s.received] == [["ok"]] * 2
        outcomes[path] = {
            "results": results,
            "received": received(runner, ["sink"]),
            "counters": counters(runner),  # an emit is counted before its grouping runs
        }
    agree(outcomes)
    compiled_side_ran()


# -- 4. groupings: a tree over several tasks ------------------------------------------------


class Once(Spout):
    """Emits ``["x"]`` with msg id ``"m"`` on ``stream`` once, when told (``go``)."""

    outputs = {"default": ["w"], "every": ["w"]}

    def __init__(self, stream: str) -> None:
        self.stream = stream

    def open(self, conf: Any, context: Any) -> None:
        self.go = False
        self.returned: list[Any] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        if self.go:
            self.go = False
            self.returned.append(self.emit(["x"], "m", self.stream))

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind))


@pytest.mark.parametrize("workers", [1, 2])
def test_an_all_grouping_tree_completes_when_every_task_acked(workers: int) -> None:
    """Each task of an all grouping gets its own edge of the one tree; the tree completes
    only when the last of them is acked."""
    builder = TopologyBuilder()
    builder.set_spout("once", Once("every"))
    builder.set_bolt("holds", Holds(), parallelism=3).all_grouping("once", "every")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology, {"topology.workers": workers})
        spout, task = runner.instance("once"), spout_tasks(runner, "once")[0]
        holds = instances(runner, "holds")
        spout.go = True
        runner.activate()
        runner.run_until(lambda holds=holds: all(h.held for h in holds), 100, advance=0.01)
        assert len({h.held[0].id for h in holds}) == 3  # one edge per task
        assert len({h.held[0].anchors for h in holds}) == 1  # one root
        steps = []
        for h in holds:
            assert spout.acked == []
            h.release()
            runner.clock.advance(0.5)  # type: ignore[attr-defined]
            runner.turn(6)
            steps.append((list(spout.acked), len(task.pending)))  # type: ignore[arg-type]
        assert steps == [([], 1), ([], 1), (["m"], 0)]
        assert spout.failed == [] and spout.returned == [runner.assignment.component_tasks["holds"]]
        outcomes[path] = {"steps": steps, "counters": counters(runner)}
    agree(outcomes)
    compiled_side_ran()


def test_a_tree_s_edges_and_root_are_registered_with_its_acker() -> None:
    """The init a tree's acker gets is ``[root, XOR of the edges, spout task]``, and the
    pending tree is ``[msg_id, now]`` under its root (read before the turn drains them)."""
    builder = TopologyBuilder()
    builder.set_spout("once", Once("every"))
    builder.set_bolt("holds", Holds(), parallelism=3).all_grouping("once", "every")
    builder.set_bolt("single", Holds()).shuffle_grouping("once")
    topology = builder.create_topology()
    for path in paths():
        runner = build(path, topology)
        worker = runner.worker(0)
        assert worker.acking is not None
        spout, task = runner.instance("once"), spout_tasks(runner, "once")[0]
        lanes: dict[int, list[Any]] = {}
        for route in task.collector.routes.values():  # spy on what the lanes get
            for t, (push_val, push_meta) in list(route.push.items()):
                seen = lanes.setdefault(t, [])
                route.push[t] = (
                    push_val,
                    lambda meta, seen=seen, push=push_meta: (seen.append(meta), push(meta)),
                )
        # (the compiled emit reads the same push dicts, looked up per emit)
        now = runner.clock()
        tasks = spout.emit(["x"], "m", "every") + spout.emit(["y"], "n")
        assert sorted(tasks) == sorted(
            runner.assignment.component_tasks["holds"] + runner.assignment.component_tasks["single"]
        )
        [[(root_m, edges_m, src_m), (root_n, edges_n, src_n)]] = [
            v for v in worker.acking.outbox.inits.values() if v
        ]
        assert src_m == src_n == task.task_id and root_m != root_n and 0 not in (root_m, root_n)
        metas = {t: seen for t, seen in lanes.items() if seen}
        every = [metas[t][0] for t in runner.assignment.component_tasks["holds"]]
        assert {m[1] for m in every} == {root_m}
        assert reduce(xor, (m[0] for m in every)) == edges_m
        [single] = metas[runner.assignment.component_tasks["single"][0]]
        assert single == (edges_n, root_n)
        assert task.pending is not None
        buckets = task.pending.insertion()[0]
        assert buckets[0] == {root_m: ["m", now], root_n: ["n", now]}
    compiled_side_ran()


def test_a_lane_append_that_raises_propagates_alike() -> None:
    """A lane that raises as a tuple is appended (the second of an all grouping's three):
    the emit raises it on both paths, after the first task got its copy; no tree is
    registered or pending; the counters move alike."""
    builder = TopologyBuilder()
    builder.set_spout("once", Once("every"))
    builder.set_bolt("holds", Holds(), parallelism=3).all_grouping("once", "every")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        worker = runner.worker(0)
        assert worker.acking is not None
        spout, task = runner.instance("once"), spout_tasks(runner, "once")[0]
        route = task.collector.routes["every"]
        broken = runner.assignment.component_tasks["holds"][1]
        got: list[Any] = []
        push_val, push_meta = route.push[broken]

        def append(values: Any) -> None:
            raise Boom("the lane is full")

        route.push[broken] = (append, push_meta)
        results = []
        for msg_id in ("m", None):
            with pytest.raises(Boom, match="the lane is full"):
                spout.emit(["x"], msg_id, "every")
            results.append(len(task.pending))  # type: ignore[arg-type]
        assert results == [0, 0]
        assert all(not v for v in worker.acking.outbox.inits.values())
        route.push[broken] = (push_val, push_meta)
        assert spout.emit(["y"], "n", "every") == runner.assignment.component_tasks["holds"]
        runner.activate()
        holds = instances(runner, "holds")
        runner.run_until(lambda holds=holds: all(h.held for h in holds), 50, 0.01)
        for h in holds:
            got.append([(t.values, t.anchors is None) for t in h.held])
        # the first task got the copies sent before the lane raised (tracked, then not)
        assert got[0] == [(["x"], False), (["x"], True), (["y"], False)]
        assert got[1] == got[2] == [(["y"], False)]
        outcomes[path] = {"got": got, "counters": counters(runner)}
    agree(outcomes)
    compiled_side_ran()


# -- 5. trees: local ackers, timeouts, max spout pending ----------------------------------


@pytest.mark.parametrize("ackers", [None, 3, 1], ids=["one-per-worker", "three", "one"])
def test_roots_go_to_an_acker_of_the_spout_s_worker(ackers: int | None) -> None:
    """With some but not all ackers in a worker, every root a spout task there draws is
    owned (``ackers[root % len(ackers)]``) by one of them."""
    builder = TopologyBuilder()
    builder.set_spout("ids", Ids([]), parallelism=4)
    builder.set_bolt("sink", Sink(), 2).shuffle_grouping("ids")
    topology = builder.create_topology()
    for path in paths():
        runner = build(path, topology, {"topology.workers": 2, "topology.acker.executors": ackers})
        for worker in runner.workers.values():
            acking = worker.acking
            assert acking is not None
            ackers_ = acking.outbox.ackers
            for task in worker.spouts:
                for i in range(60):
                    task.instance.emit([i], (task.task_id, i))
            inits = [(a, entry) for a, entries in acking.outbox.inits.items() for entry in entries]
            assert len(inits) == 60 * len(worker.spouts)
            for acker, (root, _, _) in inits:
                assert 0 < root < 2**64 and acker == ackers_[root % len(ackers_)]
            # every local acker gets roots, no other does (a worker without one: any)
            owners = {acker for acker, _ in inits}
            assert owners == (set(acking.ackers) or set(ackers_)), (path, owners)
            runner.turn()
        spouts = instances(runner, "ids")
        runner.run_until(lambda spouts=spouts: sum(len(s.acked) for s in spouts) == 240, 200, 0.01)
    compiled_side_ran()


class Queued(Spout):
    """Emits what the test queues (``[value]`` with msg id ``value``); records when (on
    ``clock``, set by the test) each was emitted, acked and failed."""

    outputs = ["w"]

    def open(self, conf: Any, context: Any) -> None:
        self.queue: list[Any] = []
        self.clock: Callable[[], float] = lambda: 0.0
        self.emitted: dict[Any, float] = {}
        self.acked: list[Any] = []
        self.failed: list[tuple[Any, str, float]] = []

    def next_tuple(self) -> None:
        while self.queue:
            msg_id = self.queue.pop(0)
            self.emit([msg_id], msg_id)
            self.emitted[msg_id] = self.clock()

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind, self.clock()))


class Adds:
    """Counts the trees that went through ``PendingTrees.add`` (patched on the class, so
    the bound ``add`` a compiled emit holds is counted too)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[Any] = []
        real = PendingTrees.add

        def add(pending: PendingTrees, root: int, msg_id: Any, now: float) -> None:
            self.calls.append(msg_id)
            real(pending, root, msg_id, now)

        monkeypatch.setattr(PendingTrees, "add", add)


TIMEOUT = 10.0


def test_a_tree_never_acked_times_out_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees a bolt never acks fail with reason timeout between the message timeout and
    1.5 times it after their emit — also the tree started while a rotation was due (the
    spout runs before the turn's timeouts: its emit must apply the rotation first, through
    ``PendingTrees.add``, or the new tree would start one generation old)."""
    adds = Adds(monkeypatch)
    builder = TopologyBuilder()
    builder.set_spout("queued", Queued())
    builder.set_bolt("holds", Holds()).shuffle_grouping("queued")
    topology = builder.create_topology()
    conf = {"topology.message.timeout.secs": TIMEOUT}
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf)
        spout, task = runner.instance("queued"), spout_tasks(runner, "queued")[0]
        spout.clock = runner.clock
        rotation = task.pending.insertion()[1]  # type: ignore[union-attr]
        start = runner.clock()
        adds.calls.clear()
        spout.queue.append("a")
        runner.activate()
        runner.turn()
        runner.clock.advance(TIMEOUT / 2 + 2)  # type: ignore[attr-defined]
        assert runner.clock() >= rotation.next_rotation  # due, not applied yet
        spout.queue.append("b")  # emitted while the rotation is due
        runner.turn()
        runner.clock.advance(0.5)  # type: ignore[attr-defined]
        spout.queue.append("c")
        runner.turn()
        assert spout.emitted == {"a": start, "b": start + 7, "c": start + 7.5}
        assert len(task.pending) == 3  # type: ignore[arg-type]
        assert adds.calls == (["b"] if path == "compiled" else ["a", "b", "c"])
        runner.run_until(lambda spout=spout: len(spout.failed) == 3, 400, advance=0.25)
        for msg_id, kind, at in spout.failed:
            assert kind == "timeout"
            assert TIMEOUT <= at - spout.emitted[msg_id] <= 1.5 * TIMEOUT + 0.25, (msg_id, at)
        assert spout.acked == [] and len(task.pending) == 0  # type: ignore[arg-type]
        outcomes[path] = {
            "failed": [(m, k, round(at - start, 6)) for m, k, at in spout.failed],
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


def test_rotations_due_at_emit_are_applied_first_over_a_long_run() -> None:
    """Emits at generated times (some right after long stalls): every tree times out
    no sooner than the timeout after its emit, at the same time on both paths."""

    @FEW
    @given(
        st.lists(
            st.sampled_from([0.0, 0.5, 3.0, 4.9, 5.0, 5.1, 7.0, 12.0, 31.0]), min_size=1, max_size=8
        )
    )
    def check(gaps: list[float]) -> None:
        outcomes = {}
        for path in paths():
            runner = build(path, topology, {"topology.message.timeout.secs": TIMEOUT})
            spout = runner.instance("queued")
            spout.clock = runner.clock
            start = runner.clock()
            runner.activate()
            for i, gap in enumerate(gaps):
                runner.clock.advance(gap)  # type: ignore[attr-defined]
                spout.queue.append(i)
                runner.turn()
            runner.run_until(lambda spout=spout: len(spout.failed) == len(gaps), 2000, 0.5)
            for msg_id, kind, at in spout.failed:
                assert kind == "timeout"
                assert TIMEOUT <= at - spout.emitted[msg_id] <= 1.5 * TIMEOUT + 0.5 + max(gaps)
            outcomes[path] = sorted((m, round(at - start, 6)) for m, _, at in spout.failed)
        agree(outcomes)

    builder = TopologyBuilder()
    builder.set_spout("queued", Queued())
    builder.set_bolt("holds", Holds()).shuffle_grouping("queued")
    topology = builder.create_topology()
    check()
    compiled_side_ran()


class Endless(Spout):
    """Emits ``[i]`` with msg id ``i`` for ever, one a call."""

    outputs = ["w"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        self.emit([self.i], self.i)
        self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)


@pytest.mark.parametrize("cap", [1, 4, MIN_ADAPTIVE_CAP + 3])
def test_max_spout_pending_is_respected_alike(cap: int) -> None:
    builder = TopologyBuilder()
    builder.set_spout("endless", Endless())
    builder.set_bolt("holds", Holds(), parallelism=2).shuffle_grouping("endless")
    topology = builder.create_topology()
    conf = {"topology.max.spout.pending": cap, "topology.max.spout.pending.adaptive": False}
    outcomes = {}
    for path in paths():
        trace = PendingTrace()
        runner = trace.runner = build(path, topology, conf, on_turn=trace)
        spout, holds = runner.instance("endless"), instances(runner, "holds")
        runner.activate()
        runner.clock.advance(0.01)  # type: ignore[attr-defined]
        runner.turn(30)
        assert spout.i == cap and trace.most == cap  # at the cap, and no further
        rounds = []
        for _ in range(6):
            for h in holds:
                h.release(1)
            runner.clock.advance(0.01)  # type: ignore[attr-defined]
            runner.turn(5)
            rounds.append((spout.i, len(spout.acked)))
        assert trace.most == cap and spout.i > cap
        outcomes[path] = {
            "rounds": rounds,
            "acked": spout.acked,
            "pending trace": trace.turns,
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


class Triples(Spout):
    """Emits three tracked tuples a call, for ever (msg ids 0, 1, 2, ...)."""

    outputs = ["w"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.calls = 0

    def next_tuple(self) -> None:
        self.calls += 1
        for _ in range(3):
            self.emit([self.i], self.i)
            self.i += 1


@pytest.mark.parametrize("cap", [1, 9, 10, 11])
def test_a_call_may_pass_the_cap_but_none_starts_at_it(cap: int) -> None:
    """Storm's max spout pending is checked before each ``next_tuple``: calls go on while
    fewer trees than the cap are pending, each starting three. The executor counts emits
    down from the room it read once a turn (``SpoutTask.room``) and asks ``can_emit`` only
    when that runs out: the same calls as asking before each one."""
    builder = TopologyBuilder()
    builder.set_spout("triples", Triples())
    builder.set_bolt("holds", Holds(), parallelism=2).shuffle_grouping("triples")
    topology = builder.create_topology()
    conf = {"topology.max.spout.pending": cap, "topology.max.spout.pending.adaptive": False}
    for path in paths():
        runner = build(path, topology, conf)
        spout = runner.instance("triples")
        assert runner.task("triples").room() == cap
        runner.activate()
        runner.turn(5)
        calls = -(-cap // 3)  # calls start at 0, 3, 6, ... pending trees while below the cap
        assert (spout.calls, spout.i) == (calls, 3 * calls), path
        assert runner.task("triples").room() == cap - 3 * calls
    compiled_side_ran()


# -- 6. where the task runs pure Python --------------------------------------------------


@pytest.mark.parametrize(
    "conf",
    [{"topology.testing.always.try.serialize": True}, {"topology.debug": True}],
    ids=["serialize", "debug"],
)
def test_values_checked_everywhere_run_pure_python(
    conf: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Where every emit's values are checked (or shown), the spout runs pure Python, and
    the unheard stream's unencodable value is refused too."""
    builder = TopologyBuilder()
    builder.set_spout("feed", ValueFeed([{1}, "ok", "fine"], "unheard"))
    topology = builder.create_topology()
    with on_path("compiled"):
        runner = InProcessRunner(topology, {"topology.workers": 1, **conf})
    task = spout_tasks(runner, "feed")[0]
    assert task.compiled is None and task.collector.fast_routes == []
    assert spout_path.compile_spout(task.collector) is None
    feed = runner.instance("feed")
    runner.activate()
    runner.run_until(lambda: len(feed.results) == 3, 100, advance=0.01)
    assert feed.results[0][0] == "EmitError" and "msgpack cannot encode" in feed.results[0][1]
    assert feed.results[1] == feed.results[2] == ("sent", [])


class Counted(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)


def test_a_checkpointed_topology_runs_pure_python() -> None:
    """msg ids wait for a checkpoint there: the spout keeps the Python emit (and its msg ids
    are acked once the checkpoint after them completes)."""
    builder = TopologyBuilder()
    builder.set_spout("ids", Ids(list(range(10))))
    builder.set_bolt("count", Counted(), 2).fields_grouping("ids", ["w"])
    topology = builder.create_topology()
    conf = {
        "topology.workers": 1,
        "topology.state.provider": "memory",
        "topology.state.checkpoint.interval.ms": 50,
    }
    with on_path("compiled"):
        runner = InProcessRunner(topology, conf)
    task = spout_tasks(runner, "ids")[0]
    assert task.collector.epochs is not None
    assert task.compiled is None and task.instance.emit == task.collector.emit
    assert spout_path.compile_spout(task.collector) is None
    spout = runner.instance("ids")
    runner.activate()
    runner.run_until(lambda: len(spout.acked) == 10, 3000, advance=0.01)
    assert sorted(spout.acked) == list(range(10))


def test_the_pure_path_leaves_the_routes_alone() -> None:
    builder = TopologyBuilder()
    builder.set_spout("ids", Ids([1]))
    builder.set_bolt("sink", Sink()).shuffle_grouping("ids")
    topology = builder.create_topology()
    runner = build("pure", topology)
    task = spout_tasks(runner, "ids")[0]
    assert task.collector.fast_routes == []
    assert all(r.fast is None for r in task.collector.routes.values())
    if spout_path.COMPILED:
        runner = build("compiled", topology)
        task = spout_tasks(runner, "ids")[0]
        routes = task.collector.routes
        assert routes[DEAD_LETTER_STREAM].fast is None  # its rare emits: the Python path
        fast = [r.fast for s, r in routes.items() if s != DEAD_LETTER_STREAM]
        assert fast == task.collector.fast_routes
    compiled_side_ran()


# -- 7. SpoutEmit itself ---------------------------------------------------------------------


class Boom(Exception):
    pass


def boom(*args: Any) -> Any:
    raise Boom("boom")


def nothing(value: Any) -> None:
    pass


class Twin:
    """A SpoutEmit on one stream (``default``, to ``tasks``) and one nobody subscribes to
    (``unheard``), over a real outbox and pending trees (``ackers``; None: no ackers),
    its lanes recording what they get; ``general`` records the calls it is handed."""

    def __init__(
        self,
        ackers: tuple[int, ...] | None = (1, 2),
        local: tuple[int, ...] = (),
        tasks: tuple[int, ...] = (7,),
        choose: Callable[[Any], Any] | None = None,
        lanes: dict[int, Any] | None = None,
        clock: Callable[[], float] | None = None,
        add: Callable[..., Any] | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.values: list[Any] = []
        self.metas: list[Any] = []
        self.push = lanes or {t: (self.values.append, self.metas.append) for t in tasks}
        self.now = 1000.0
        self.general: list[Any] = []
        self.route = basic_path.FastRoute(1, choose or (lambda values: list(tasks)), self.push)
        self.acked: list[Any] = []
        self.outbox = AckOutbox(list(ackers or (1,)))
        self.pending = PendingTrees(timeout, self.now)
        self.acking = SpoutAcking(5, self.outbox, self.pending, tuple(local))
        trees = None
        if ackers is not None:
            task, ackers_, local_, inits, buckets, rotation, add_ = self.acking.compiled_trees()
            trees = (task, ackers_, tuple(local), inits, buckets, rotation, add or add_)
        self.emit = spout_path.SpoutEmit(
            {"default": self.route, "unheard": basic_path.FastRoute(1)},
            self._general,
            self.acked,
            clock or (lambda: self.now),
            trees,
        ).emit

    def _general(self, *args: Any, **kwargs: Any) -> str:
        self.general.append((args, kwargs))
        return "general"

    def inits(self) -> list[list[int]]:
        return [e for entries in self.outbox.inits.values() for e in entries]

    def trees(self) -> dict[int, list[Any]]:
        return {r: e for b in self.pending.insertion()[0] for r, e in b.items()}


@needs_compiled
def test_spout_emit_refuses_wrong_arguments() -> None:
    SpoutEmit, FastRoute = spout_path.SpoutEmit, basic_path.FastRoute
    pending = PendingTrees(TIMEOUT, 0.0)
    buckets, rotation, add = pending.insertion()

    def trees(*changes: tuple[int, Any]) -> tuple[Any, ...]:
        good: list[Any] = [5, (1, 2), (), {1: [], 2: []}, buckets, rotation, add]
        for at, value in changes:
            good[at] = value
        return tuple(good)

    good = ({"default": FastRoute(1)}, print, [], time_, trees())
    SpoutEmit(*good)  # (the control)
    SpoutEmit({}, print, [], time_, None)
    wrong: list[tuple[tuple[Any, ...], type[Exception], str]] = [
        ((), TypeError, "exactly 5 arguments"),
        (good[:4], TypeError, "exactly 5 arguments"),
        ((*good, None), TypeError, "exactly 5 arguments"),
        (([("default", FastRoute(1))], *good[1:]), TypeError, "must be dict"),
        (({"default": 1}, *good[1:]), TypeError, "maps streams to FastRoutes"),
        (({"default": print}, *good[1:]), TypeError, "maps streams to FastRoutes"),
        ((*good[:2], (), *good[3:]), TypeError, "must be list"),
        ((*good[:4], 5), TypeError, "trees must be None or a tuple"),
        ((*good[:4], [5]), TypeError, "trees must be None or a tuple"),
        ((*good[:4], trees()[:6]), TypeError, "exactly 7 arguments"),
        ((*good[:4], (*trees(), None)), TypeError, "exactly 7 arguments"),
        ((*good[:4], trees((0, "5"))), TypeError, "must be int"),
        ((*good[:4], trees((0, None))), TypeError, "must be int"),
        ((*good[:4], trees((1, [1, 2]))), TypeError, "must be tuple"),
        ((*good[:4], trees((1, ()))), ValueError, "trees without ackers"),
        ((*good[:4], trees((2, [0]))), TypeError, "must be tuple"),
        ((*good[:4], trees((2, ("0",)))), TypeError, "integer"),
        ((*good[:4], trees((2, (2,)))), ValueError, "out of range"),
        ((*good[:4], trees((2, (-1,)))), ValueError, "out of range"),
        ((*good[:4], trees((3, [[], []]))), TypeError, "must be dict"),
        ((*good[:4], trees((4, 3))), TypeError, "buckets a sequence, add callable"),
        ((*good[:4], trees((6, None))), TypeError, "buckets a sequence, add callable"),
    ]
    for args, error, text in wrong:
        with pytest.raises(error, match=text):
            SpoutEmit(*args)
    with pytest.raises(TypeError, match="positional arguments only"):
        SpoutEmit(*good[:4], trees=None)
    with pytest.raises((OverflowError, ValueError)):  # (not a crash)
        SpoutEmit(*good[:4], trees((2, (2**80,))))
    # a trees tuple missing an acker's inits list, or a bucket that is no dict: the emit
    # raises (no crash), and nothing was pushed but what the lanes already took
    for broken, error in (((3, {}), TypeError), ((4, [[]]), TypeError), ((4, []), IndexError)):
        emit = SpoutEmit(
            {"default": FastRoute(1, lambda v: [7], {7: (nothing, nothing)})},
            print,
            [],
            time_,
            trees(broken),
        ).emit
        with pytest.raises(error):
            emit(["x"], "m")
        assert emit(["x"]) == [7]  # untracked: no tree to register


def time_() -> float:
    return 0.0


@needs_compiled
def test_spout_emit_hands_what_it_cannot_take_to_general() -> None:
    twin = Twin()
    assert twin.emit(("t",), "m") == "general"
    assert twin.emit(["x"], "m", "nope") == "general"
    assert twin.emit(["x", "y"], "m") == "general"
    assert twin.emit(["é"], stream="default") == "general"
    assert twin.emit(["x"], "m", foo=1) == "general"
    assert twin.emit() == "general"
    assert twin.emit(["x"], None, "default", 4) == "general"
    assert twin.emit(["x"], "m", msg_id="n") == "general"
    assert twin.general == [
        ((("t",), "m"), {}),
        ((["x"], "m", "nope"), {}),
        ((["x", "y"], "m"), {}),
        ((["é"],), {"stream": "default"}),
        ((["x"], "m"), {"foo": 1}),
        ((), {}),
        ((["x"], None, "default", 4), {}),
        ((["x"], "m"), {"msg_id": "n"}),
    ]
    assert twin.values == [] and twin.inits() == [] and twin.acked == []
    assert twin.route.emitted == 0


@needs_compiled
@pytest.mark.parametrize("ackers", [True, False], ids=["acked", "unacked"])
def test_errors_inside_spout_emit_propagate_and_leak_nothing(ackers: bool) -> None:
    """A lane append, a grouping, the clock or ``add`` that raises: the emit raises it, and
    after many such emits (and good ones) the values' and msg id's reference counts are
    back where they started once what holds them on purpose is let go."""
    values, msg_id = ["v"], object()
    due = [2000.0]  # a clock past every rotation: the tree goes through ``add``
    cases: dict[str, dict[str, Any]] = {
        "good": {},
        "good, three tasks": {"tasks": (7, 8, 9)},
        "a value append": {"lanes": {7: (boom, nothing)}},
        "a meta append": {"lanes": {7: (nothing, boom)}},
        "the second task's append": {
            "tasks": (7, 8),
            "lanes": {7: (nothing, nothing), 8: (boom, nothing)},
        },
        "a grouping": {"choose": boom},
        "a grouping's odd answer": {"choose": lambda v: 5},
        "a task without a lane": {"choose": lambda v: [99]},
        "a lane that is no pair": {"lanes": {7: [nothing, nothing]}},
        "the clock": {"clock": boom},
        "add": {"add": boom, "clock": lambda: due[0]},
    }
    raised: dict[str, set[str]] = {}
    for name, kwargs in cases.items():
        twin = Twin(ackers=(1, 2) if ackers else None, **kwargs)
        gc.collect()
        before = sys.getrefcount(values), sys.getrefcount(msg_id)
        kinds = raised[name] = set()
        for _ in range(300):
            for args in ((values, msg_id), (values,), (values, msg_id, "unheard")):
                try:
                    twin.emit(*args)
                except Exception as exc:
                    kinds.add(type(exc).__name__)
        del args
        twin.values.clear()
        twin.metas.clear()
        twin.acked.clear()
        twin.pending.fail_all()
        for entries in twin.outbox.inits.values():
            entries.clear()
        gc.collect()
        assert (sys.getrefcount(values), sys.getrefcount(msg_id)) == before, name
    assert raised["good"] == raised["good, three tasks"] == set()
    for name in ("a value append", "a meta append", "the second task's append", "a grouping"):
        assert raised[name] == {"Boom"}, name
    assert raised["a grouping's odd answer"] == {"TypeError"}
    assert raised["a task without a lane"] == {"KeyError"}
    assert raised["a lane that is no pair"] == {"TypeError"}
    # the clock and add are read only to start a tree
    assert raised["the clock"] == raised["add"] == ({"Boom"} if ackers else set())


@needs_compiled
def test_spout_emit_is_collected_and_holds_no_reference_it_should_not() -> None:
    """A SpoutEmit in a reference cycle (its general emit holds it, as a spout task's
    does through the collector) is collected; its arguments are let go."""

    class Holder:
        emit: Any = None

        def general(self, *args: Any) -> None:
            pass

    def choose(values: Any) -> list[int]:
        return [7]

    def clock() -> float:
        return 0.0

    holder = Holder()
    pending = PendingTrees(TIMEOUT, 0.0)
    inits: dict[int, list[Any]] = {1: []}
    route = basic_path.FastRoute(1, choose, {7: (nothing, nothing)})
    watched = [weakref.ref(x) for x in (holder, pending, choose, clock)]
    holder.emit = spout_path.SpoutEmit(
        {"default": route}, holder.general, [], clock, (5, (1,), (), inits, *pending.insertion())
    ).emit
    assert holder.emit(["x"], "m") == [7] and len(pending) == 1
    del holder, pending, route, choose, clock
    gc.collect()
    assert [w() for w in watched] == [None] * 4


@needs_compiled
@MANY
@given(
    st.integers(1, 7).flatmap(
        lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), max_size=n - 1))
    ),
    st.integers(1, 3),
)
def test_spout_emit_starts_trees_as_track_does(case: tuple[int, set[int]], fanout: int) -> None:
    """From the contract: every root non-zero, 64 bits, owned by a local acker when some
    (not all) are local; its init ``[root, XOR of edges, task]`` on that acker's list;
    ``[msg_id, now]`` in the newest generation; each lane ``(edge, root)`` — the same
    invariants ``SpoutAcking.track`` keeps (checked on it too)."""
    n, local = case
    ackers = tuple(range(100, 100 + n))
    tasks = tuple(range(7, 7 + fanout))
    twin = Twin(ackers=ackers, local=tuple(sorted(local)), tasks=tasks)
    pure = Twin(ackers=ackers, local=tuple(sorted(local)), tasks=tasks)  # (its acking only)
    for i in range(40):
        assert twin.emit([i], ("m", i)) == list(tasks)
        pure.acking.track(pure.push, list(tasks), [i], ("m", i), pure.now)
    for side in (twin, pure):
        inits = side.outbox.inits
        assert sum(map(len, inits.values())) == 40
        trees = side.trees()
        assert [e[0] for e in trees.values()] == [("m", i) for i in range(40)]
        assert all(e[1] == side.now for e in trees.values())
        metas = iter(side.metas)
        for acker, entries in inits.items():
            for root, _, task in entries:
                assert 0 < root < 2**64 and task == 5 and root in trees
                assert ackers[root % n] == acker
                if local:  # (all of them local, or none: any acker)
                    assert root % n in local
        for root, edges, _ in sorted(
            (e for entries in inits.values() for e in entries), key=lambda e: trees[e[0]][0]
        ):
            mine = [next(metas) for _ in tasks]
            assert {m[1] for m in mine} == {root}
            assert reduce(xor, (m[0] for m in mine)) == edges
        assert side.values == [[i] for i in range(40) for _ in tasks]
    assert twin.acked == [] and twin.route.emitted == 40


@needs_compiled
def test_spout_emit_without_ackers_or_listeners_acks_at_emit() -> None:
    twin = Twin(ackers=None)
    assert twin.emit(["a"], "m1") == [7]
    assert twin.emit(["b"]) == [7]
    assert twin.emit(["c"], "m2", "unheard") == []
    assert twin.emit([{1}], "m3", "unheard") == []  # not encoded: it goes nowhere
    assert twin.emit(["d"], None, "unheard") == []
    assert twin.metas == [None, None] and twin.values == [["a"], ["b"]]
    assert twin.acked == ["m1", "m2", "m3"]
    with_ackers = Twin()
    assert with_ackers.emit(["c"], "m2", "unheard") == []
    assert with_ackers.acked == ["m2"] and with_ackers.inits() == []
    assert with_ackers.emit(["c"], "m4") == [7] and with_ackers.acked == ["m2"]
    nobody = Twin(choose=lambda values: [])  # a grouping that picks no task: no tree
    assert nobody.emit(["x"], "m5") == [] and nobody.acked == ["m5"] and nobody.inits() == []


@needs_compiled
def test_spout_emit_goes_through_add_only_when_a_rotation_is_due() -> None:
    """``next_rotation`` reached: the tree goes to ``add`` (which rotates first, so the new
    tree is not aged); before it: into the newest generation directly."""
    calls: list[Any] = []
    holder: list[Twin] = []

    def add(root: int, msg_id: Any, now: float) -> None:
        calls.append(msg_id)
        holder[0].pending.add(root, msg_id, now)

    twin = Twin(add=add)
    holder.append(twin)
    rotation = twin.pending.insertion()[1]
    twin.emit(["a"], "a")
    twin.now = rotation.next_rotation - 0.001
    twin.emit(["b"], "b")
    twin.now = rotation.next_rotation
    twin.emit(["c"], "c")  # due: a rotation first
    twin.now += 0.5
    twin.emit(["d"], "d")
    assert calls == ["c"]
    buckets = twin.pending.insertion()[0]
    assert [sorted(e[0] for e in b.values()) for b in buckets] == [["c", "d"], ["a", "b"], []]
    assert twin.pending.expire(twin.now) == []
    twin.pending.expire(twin.now + TIMEOUT / 2)
    assert sorted(twin.pending.expire(twin.now + TIMEOUT)) == ["a", "b"]
    no_timeouts = PendingTrees(TIMEOUT, 0.0, timeouts_enabled=False)
    assert no_timeouts.insertion()[1] is None
    emit = spout_path.SpoutEmit(
        {"default": basic_path.FastRoute(1, lambda v: [7], {7: (nothing, nothing)})},
        print,
        [],
        lambda: 1e12,
        (5, (1,), (), {1: []}, *no_timeouts.insertion()[:2], boom),  # add never called
    ).emit
    assert emit(["x"], "m") == [7] and len(no_timeouts) == 1


@needs_compiled
@MANY
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("emit"), st.sampled_from([0.0, 0.1, 2.5, 4.99, 5.0, 7.5, 16.0])),
            st.tuples(st.just("expire"), st.sampled_from([0.0, 1.0, 5.0, 11.0])),
            st.tuples(st.just("ack"), st.integers(0, 30)),
        ),
        max_size=30,
    )
)
def test_pending_trees_of_both_emits_evolve_alike(steps: list[tuple[str, Any]]) -> None:
    """The same emits, timeouts and acks on trees started by SpoutEmit and by
    ``SpoutAcking.track``: the same trees in the same generations, expired and completed."""
    twin, pure = Twin(), Twin()
    log: dict[str, list[Any]] = {"twin": [], "pure": []}
    i = 0
    for kind, arg in steps:
        for name, side in (("twin", twin), ("pure", pure)):
            if kind == "emit":
                side.now += arg
                if side is twin:
                    twin.emit([i], i)
                else:
                    pure.acking.track(pure.push, [7], [i], i, pure.now)
            elif kind == "expire":
                side.now += arg
                log[name].append(("expired", sorted(side.pending.expire(side.now))))
            else:
                roots = {e[0]: r for r, e in side.trees().items()}
                if arg in roots:
                    log[name].append(("acked", side.pending.complete(roots[arg], side.now)))
            buckets = side.pending.insertion()[0]
            log[name].append([sorted(e[0] for e in b.values()) for b in buckets])
        i += kind == "emit"
    assert log["twin"] == log["pure"]
    assert len(twin.pending) == len(pure.pending)


@needs_compiled
def test_spout_emit_keeps_writing_where_the_outbox_and_pending_trees_read() -> None:
    """The objects ``compiled_trees`` hands over stay the ones the outbox and the pending
    trees use through drains, rotations and clears (else inits and trees would be lost)."""
    twin = Twin(ackers=(1,))
    for turn in range(4):
        msg_id = f"m{turn}"
        twin.emit(["w"], msg_id)
        drained = twin.outbox.drain()
        inits = [
            e for acker, stream, (entries,) in drained if stream == "__ack_init" for e in entries
        ]
        assert len(inits) == 1, drained
        root = inits[0][0]
        assert twin.trees()[root][0] == msg_id
        assert twin.pending.complete(root, twin.now) == msg_id
        twin.now += TIMEOUT  # a rotation or more is due at the next emit
        assert twin.pending.expire(twin.now) == []
    twin.emit(["w"], "kept")
    assert twin.pending.fail_all() == ["kept"]
    twin.emit(["w"], "after the clear")
    assert [e[0] for e in twin.trees().values()] == ["after the clear"]
