"""The compiled spout emit (``topology.runtime._spout``) against its pure-Python reference.

:mod:`topology.runtime.spout_path` gives a spout task a compiled ``emit`` (a
``SpoutEmit``, whose trees are started by the acker's C API); otherwise the spout's
``emit`` is :meth:`~topology.runtime.collector.SpoutCollector.emit`, which starts trees
through :meth:`acker.SpoutAcking.track`: the reference.  The main test is generated:
hypothesis draws a topology (each stream's subscribers, groupings, parallelism, sinks that
ack, fail or hold), a layout (ackers, workers, max spout pending) and a script of emit
calls — every way to call ``emit`` and ``emit_direct``, right and wrong, with values of
every kind and msg ids of any type — and clock moves; both paths play it with the same ids
and everything they do must be equal (:mod:`tests.unit.twin_runs`).  The other tests
check what a comparison cannot: the errors' messages, where roots go, the tasks that stay
pure Python, and ``SpoutEmit`` itself (its arguments, errors inside it, references).
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acker import AckOutbox, PendingTrees, fastpath
from grouping.all import AllGrouping
from tests.unit.twin_runs import (
    FEW,
    LAYOUTS,
    NOT_A_LIST,
    PLAIN,
    VALUES,
    Opaque,
    Sink,
    StrStream,
    add_sinks,
    call_result,
    ci_requires_the_build,
    compare,
    compiled_side_ran,
    fast_emits,
    fast_stream,
    instances,
    not_a_list,
    on_path,
    paths,
    plain,
    received,
    subscribers,
)
from topology import DEAD_LETTER_STREAM, Spout, StatefulBolt, Stream, TopologyBuilder, Tuple
from topology.runtime import basic_path, spout_path
from topology.runtime.inprocess import InProcessRunner

pytestmark = pytest.mark.timeout(180)

needs_compiled = pytest.mark.skipif(not spout_path.COMPILED, reason="not compiled")
TIMEOUT = 5.0


def test_ci_builds_the_compiled_spout_path() -> None:
    ci_requires_the_build(spout_path, basic_path)
    assert spout_path.COMPILED == (spout_path.SpoutEmit is not None)
    if spout_path.COMPILED:
        assert basic_path.COMPILED  # (it builds on FastRoute)


# -- the generated comparison ---------------------------------------------------------------

#: The probe's streams (each subscribed as the topology drawn says; ``unheard`` never,
#: ``targeted`` by one direct sink).
STREAMS: dict[str, list[str]] = {"default": ["w"], "pairs": ["a", "b"], "empty": []}
#: Stream arguments: absent ("-"), declared, undeclared, None, a str subclass, unhashable.
STREAM_ARGS = ["-"] * 4 + ["default", "pairs", "pairs", "empty", "unheard", "targeted", "nope"]
STREAM_ARGS += [None, "sub", "unhashable"]
#: How the call is made: msg id and stream positional or by keyword, through the class,
#: ``values=``, ``emit_direct`` (to a subscriber, or not), and the wrong calls.
FORMS = ["pos"] * 6 + ["kw"] * 4 + ["class", "values=", "direct", "stranger"]
FORMS += ["dup msg_id", "dup stream", "unknown keyword", "four", "none"]
ABSENT = "-"
MSG_IDS = st.one_of(
    st.just(ABSENT),
    st.none(),
    st.integers(-3, 40),
    st.sampled_from(["", 0, False, 0.0, b"", (), 2**70, -(2**70)]),
    st.builds(list, st.lists(st.integers(), max_size=2)),  # unhashable
    st.builds(Opaque),
)


@st.composite
def calls(draw: Any) -> tuple[Any, ...]:
    """(form, values, msg id, stream argument)."""
    stream = draw(st.sampled_from(STREAM_ARGS))
    name = stream if stream in STREAMS or stream in ("unheard", "targeted") else "default"
    arity = len({**STREAMS, "unheard": ["w"], "targeted": ["w"]}[name])
    shape = draw(st.sampled_from(["plain"] * 6 + ["any", "arity", "not a list"]))
    if shape == "not a list":
        values: Any = (draw(NOT_A_LIST), arity)  # (made anew for each call: a generator)
    else:
        n = arity if shape != "arity" else draw(st.integers(0, 3))
        values = draw(st.lists(PLAIN if shape == "plain" else VALUES, min_size=n, max_size=n))
    return draw(st.sampled_from(FORMS)), values, draw(MSG_IDS), stream


def invoke(spout: Any, call: tuple[Any, ...]) -> Any:
    """Make ``call`` on ``spout`` the way its form says."""
    form, values, msg_id, stream = call
    values = not_a_list(*values) if type(values) is tuple else values
    stream = {"sub": StrStream("default"), "unhashable": []}.get(stream, stream)  # type: ignore[call-overload]
    mid = None if msg_id is ABSENT else msg_id
    pos: list[Any] = [] if msg_id is ABSENT and stream is ABSENT else [mid]
    pos += [] if stream is ABSENT else [stream]
    kw = {} if msg_id is ABSENT else {"msg_id": msg_id}
    kw.update({} if stream is ABSENT else {"stream": stream})
    emit = spout.emit
    if form == "pos":
        return emit(values, *pos)
    if form == "kw":
        return emit(values, **kw)
    if form == "class":
        return Spout.emit(spout, values, *pos)
    if form == "values=":
        return emit(values=values, **kw)
    if form in ("direct", "stranger"):
        task = spout.direct_tasks[0] if form == "direct" else 999
        return spout.emit_direct(task, values, mid, "targeted" if stream is ABSENT else stream)
    if form == "dup msg_id":
        return emit(values, mid, msg_id=mid)
    if form == "dup stream":
        return emit(values, mid, "default", stream="default")
    if form == "unknown keyword":
        return emit(values, foo=1, **kw)
    if form == "four":
        return emit(values, mid, "default", 4)
    return emit()


def taken(call: tuple[Any, ...], subs: dict[str, list[Any]]) -> bool:
    """Whether the compiled emit takes ``call`` itself (the rest goes to Python)."""
    form, values, _, stream = call
    name = "default" if stream is ABSENT else stream
    if form not in ("pos", "kw") or name not in (*STREAMS, "unheard"):
        return False
    if type(values) is not list or len(values) != len(STREAMS.get(name, ["w"])):
        return False
    return fast_stream(subs.get(name, [])) and (not subs.get(name) or all(map(plain, values)))


class Probe(Spout):
    """Makes the calls queued for it, one per ``next_tuple``; records what each returned
    or raised, whether the compiled emit took it, its msg ids, and the acks and fails."""

    outputs = {
        **STREAMS,
        "unheard": ["w"],
        "targeted": Stream(["w"], direct=True),
    }

    def open(self, conf: Any, context: Any) -> None:
        self.direct_tasks = context.component_tasks("direct")
        self.queue: list[tuple[Any, ...]] = []
        self.clock: Callable[[], float] = lambda: 0.0
        self.results: list[Any] = []
        self.sent: dict[int, Any] = {}  # id() -> each msg id passed (kept alive)
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        if self.queue:
            call = self.queue.pop(0)
            self.sent[id(call[2])] = call[2]
            before = fast_emits(self)
            result = call_result(lambda: invoke(self, call))
            self.results.append((repr(result), fast_emits(self) - before))

    def ack(self, msg_id: Any) -> None:
        assert id(msg_id) in self.sent  # the very object emitted
        self.acked.append((repr(msg_id), self.clock()))

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        assert id(msg_id) in self.sent
        self.failed.append((repr(msg_id), reason.kind, self.clock()))


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    subs = {name: draw(subscribers(fields, name == "default")) for name, fields in STREAMS.items()}
    turns = draw(
        st.lists(
            st.tuples(
                st.lists(calls(), max_size=6),
                st.sampled_from([0.0, 0.01, 0.5, 3.0, TIMEOUT + 0.1]),
                st.integers(0, 2),
            ),
            min_size=1,
            max_size=6,
        )
    )
    ackers, workers = draw(LAYOUTS)
    cap = draw(st.sampled_from([None, None, 1, 4]))
    return {"subs": subs, "turns": turns, "ackers": ackers, "workers": workers, "cap": cap}


def play_scenario(scenario: dict[str, Any]) -> None:
    subs, spouts = scenario["subs"], 2
    builder = TopologyBuilder()
    builder.set_spout("probe", Probe(), spouts)
    sinks = add_sinks(builder, "probe", STREAMS, subs)
    topology = builder.create_topology()
    conf = {
        "topology.workers": scenario["workers"],
        "topology.acker.executors": scenario["ackers"],
        "topology.message.timeout.secs": TIMEOUT,
        "topology.max.spout.pending": scenario["cap"],
        "topology.max.spout.pending.adaptive": False,
    }

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        probes = instances(runner, "probe")
        queued: list[list[Any]] = [[] for _ in probes]
        held = [s for name in sinks for s in instances(runner, name)]
        for probe in probes:
            probe.clock = runner.clock
        runner.activate()
        for i, (turn_calls, advance, release) in enumerate(scenario["turns"]):
            for j, call in enumerate(turn_calls):
                probes[(i + j) % spouts].queue.append(call)
                queued[(i + j) % spouts].append(call)
            for sink in held:
                sink.release(release)
            runner.clock.advance(advance)  # type: ignore[attr-defined]
            runner.turn()
        for _ in range(24):  # what is queued, then everything settles or times out
            for sink in held:
                sink.release()
            runner.clock.advance(TIMEOUT / 4)  # type: ignore[attr-defined]
            runner.turn()
        made = [(c, r) for p, q in zip(probes, queued) for c, r in zip(q, p.results)]
        if path == "compiled":  # which calls the compiled emit took itself
            assert [took for _, (_, took) in made] == [int(taken(c, subs)) for c, _ in made]
        if not any(p.queue for p in probes):  # every msg id of a call that returned settled
            tracked = [c for c, (r, _) in made if r.startswith("('returned'")]
            tracked = [c for c in tracked if c[2] is not None and c[2] is not ABSENT]
            assert sum(len(p.acked) + len(p.failed) for p in probes) == len(tracked)
            assert all(not t.pending for w in runner.workers.values() for t in w.spouts)
        return {
            "results": [[r[0] for r in p.results] for p in probes],
            "acked": [p.acked for p in probes],
            "failed": [p.failed for p in probes],
            "received": received(runner, sinks),
        }

    compare(topology, conf, play)


@FEW
@given(scenarios())
def test_generated_emits_agree(scenario: dict[str, Any]) -> None:
    play_scenario(scenario)


def build(path: str, topology: Any, conf: dict[str, Any] | None = None) -> InProcessRunner:
    with on_path(path):
        return InProcessRunner(topology, {"topology.workers": 1, **(conf or {})})


def probe_topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("probe", Probe())
    builder.set_bolt("direct", Sink()).direct_grouping("probe", "targeted")
    builder.set_bolt("sink", Sink(), 2).shuffle_grouping("probe")
    return builder.create_topology()


class Boom(Exception):
    pass


# -- what a comparison cannot check ----------------------------------------------------------

#: Calls (on spout ``s``) whose error the Python emit raises on both paths: (call, error,
#: message).
ERRORS = [
    ("s.emit(['x'], 'm', msg_id='m')", "TypeError", "multiple values for argument 'msg_id'"),
    ("s.emit(['x'], None, 'default', stream='default')", "TypeError", "argument 'stream'"),
    ("s.emit(['x'], values=['y'])", "TypeError", "multiple values for argument 'values'"),
    ("s.emit(['x'], 'm', foo=1)", "TypeError", "unexpected keyword argument 'foo'"),
    ("s.emit()", "TypeError", "missing 1 required positional argument: 'values'"),
    ("s.emit(['x'], 'm', 'default', 4)", "TypeError", "but 5 were given"),
    ("s.emit(['a', 'b'], 'm')", "EmitError", "2 value(s) on stream 'default', which declares 1"),
    ("s.emit('abc', 'm')", "EmitError", "a str where a list of values was expected"),
    ("s.emit(None)", "EmitError", "a NoneType where a list of values was expected"),
    ("s.emit(['x'], 'm', 'nope')", "EmitError", "emitted on undeclared stream 'nope'"),
    ("s.emit(['x'], 'm', None)", "EmitError", "emitted on undeclared stream None"),
    ("s.emit(['x'], stream=[])", "TypeError", "unhashable type: 'list'"),
    ("s.emit(['x'], 'm', 'targeted')", "EmitError", "is a direct stream; use emit_direct"),
    ("s.emit_direct(999, ['d'], 'm', 'targeted')", "EmitError", "to task 999, which does not"),
    ("s.emit_direct(s.direct_tasks[0], ['d'], 'm')", "EmitError", "which is not declared direct"),
    ("s.emit(['k', {3}], 'm', 'pairs')", "EmitError", "a value of type set for field 'b'"),
    ("s.emit([2**64], 'm')", "EmitError", "a value of type int for field 'w' that msgpack cannot"),
    ("s.emit([Opaque()], 'm')", "EmitError", "a value of type Opaque for field 'w'"),
]


def test_wrong_calls_raise_the_python_emit_s_errors() -> None:
    builder = TopologyBuilder()
    builder.set_spout("probe", Probe())
    builder.set_bolt("direct", Sink(), 2).direct_grouping("probe", "targeted")
    builder.set_bolt("sink", Sink()).shuffle_grouping("probe").shuffle_grouping("probe", "pairs")
    topology = builder.create_topology()

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        probe = runner.instance("probe")
        calls = [eval(f"lambda s: {call}") for call, _, _ in ERRORS]
        results = [call_result(lambda call=call: call(probe)) for call in calls]
        for (kind, text), (_, error, want) in zip(results, ERRORS):
            assert kind == error and want in text, (kind, text)
        assert probe.acked == [] and all(not t.pending for t in runner.workers[0].spouts)
        return {"results": results}

    compare(topology, {}, play)
    compiled_side_ran()


@pytest.mark.parametrize("broken", ["grouping", "lane"])
def test_a_grouping_or_a_lane_that_raises_propagates_alike(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A built-in grouping that raises, or the second lane of an all grouping's three: the
    emit raises it on both paths (the first lane keeps the copy it took), starts no tree,
    and the next emit works; an emit is counted before its grouping runs."""
    real = AllGrouping.choose_tasks

    def choose(self: AllGrouping, values: Any) -> list[int]:
        if values[0] == "boom" and broken == "grouping":
            raise Boom("the grouping broke")
        return real(self, values)

    monkeypatch.setattr(AllGrouping, "choose_tasks", choose)
    builder = TopologyBuilder()
    builder.set_spout("probe", Probe())
    builder.set_bolt("direct", Sink()).direct_grouping("probe", "targeted")
    builder.set_bolt("sink", Sink(), 3).all_grouping("probe")

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        probe, task = runner.instance("probe"), runner.task("probe")
        route, lane = task.collector.routes["default"], runner.assignment.component_tasks["sink"][1]
        kept = route.push[lane]
        route.push[lane] = (boom, kept[1]) if broken == "lane" else kept
        probe.sent = {id(m): m for m in ("m", "n")}
        results = [call_result(lambda m=m: probe.emit(["boom"], m)) for m in ("m", None)]
        assert [r[0] for r in results] == ["Boom", "Boom"] and not task.pending
        route.push[lane] = kept
        results.append(call_result(lambda: probe.emit(["ok"], "n")))
        runner.activate()
        runner.run_until(lambda: probe.acked != [], 100, 0.01)
        return {"results": results}

    compare(builder.create_topology(), {}, play)
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
    builder.set_bolt("holds", Sink(hold=True), parallelism=2).shuffle_grouping("triples")
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
    builder.set_spout("feed", Probe())
    builder.set_bolt("direct", Sink()).direct_grouping("feed", "targeted")
    topology = builder.create_topology()
    with on_path("compiled"):
        runner = InProcessRunner(topology, {"topology.workers": 1, **conf})
    task = runner.task("feed")
    assert task.compiled is None and task.collector.fast_routes == []
    assert spout_path.compile_spout(task.collector) is None
    feed = runner.instance("feed")
    feed.queue = [("pos", values, 0, "unheard") for values in ([{1}], ["ok"], ["fine"])]
    runner.activate()
    runner.run_until(lambda: len(feed.results) == 3, 100, advance=0.01)
    assert "EmitError" in feed.results[0][0] and "msgpack cannot encode" in feed.results[0][0]
    assert feed.results[1] == feed.results[2] == (repr(("returned", [])), 0)


class Counted(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)


def test_a_checkpointed_topology_runs_pure_python() -> None:
    """msg ids wait for a checkpoint there: the spout keeps the Python emit (and its msg ids
    are acked once the checkpoint after them completes)."""
    builder = TopologyBuilder()
    builder.set_spout("probe", Probe())
    builder.set_bolt("direct", Sink()).direct_grouping("probe", "targeted")
    builder.set_bolt("count", Counted(), 2).fields_grouping("probe", ["w"])
    conf = {"topology.state.provider": "memory", "topology.state.checkpoint.interval.ms": 50}
    runner = build("compiled", builder.create_topology(), conf)
    task = runner.task("probe")
    assert task.collector.epochs is not None
    assert task.compiled is None and task.instance.emit == task.collector.emit
    assert spout_path.compile_spout(task.collector) is None
    spout = runner.instance("probe")
    spout.queue = [("pos", [i], i, "-") for i in range(10)]
    runner.activate()
    runner.run_until(lambda: len(spout.acked) == 10, 3000, advance=0.01)
    assert sorted(m for m, _ in spout.acked) == [repr(i) for i in range(10)]


def test_the_pure_path_leaves_the_routes_alone() -> None:
    task = build("pure", probe_topology()).task("probe")
    assert task.collector.fast_routes == []
    assert all(r.fast is None for r in task.collector.routes.values())
    if spout_path.COMPILED:
        routes = (task := build("compiled", probe_topology()).task("probe")).collector.routes
        assert routes[DEAD_LETTER_STREAM].fast is None  # its rare emits: the Python path
        fast = [r.fast for s, r in routes.items() if s != DEAD_LETTER_STREAM and not r.direct]
        assert fast == task.collector.fast_routes
    compiled_side_ran()


# -- SpoutEmit and the acker's SpoutTrees themselves -----------------------------------------


def zero() -> float:
    return 0.0


def boom(*args: Any) -> Any:
    raise Boom("boom")


def nothing(value: Any) -> None:
    pass


class Twin:
    """A SpoutEmit on ``default`` (to ``tasks``) and ``unheard`` over a real outbox and
    pending trees (``ackers``; None: no ackers), its lanes recording what they get."""

    def __init__(
        self,
        ackers: tuple[int, ...] | None = (1, 2),
        tasks: tuple[int, ...] = (7,),
        choose: Callable[[Any], Any] | None = None,
        lanes: dict[int, Any] | None = None,
        clock: Callable[[], float] | None = None,
        add: Callable[..., Any] | None = None,
    ) -> None:
        self.values: list[Any] = []
        self.metas: list[Any] = []
        push = lanes or {t: (self.values.append, self.metas.append) for t in tasks}
        self.now = 1000.0
        route = basic_path.FastRoute(1, choose or (lambda values: list(tasks)), push)
        self.acked: list[Any] = []
        self.outbox = AckOutbox(list(ackers or (1,)))
        self.pending = PendingTrees(TIMEOUT, self.now)
        trees = None
        if ackers is not None:
            buckets, rotation, add_ = self.pending.insertion()
            trees = fastpath.SpoutTrees(
                5, ackers, (), self.outbox.inits, buckets, rotation, add or add_
            )
        routes = {"default": route, "unheard": basic_path.FastRoute(1)}
        self.emit = spout_path.SpoutEmit(
            routes, print, self.acked, clock or (lambda: self.now), trees
        ).emit

    def trees(self) -> dict[int, list[Any]]:
        return {r: e for b in self.pending.insertion()[0] for r, e in b.items()}


@needs_compiled
def test_spout_emit_and_spout_trees_refuse_wrong_arguments() -> None:
    SpoutEmit, FastRoute, SpoutTrees = (
        spout_path.SpoutEmit,
        basic_path.FastRoute,
        fastpath.SpoutTrees,
    )
    buckets, rotation, add = PendingTrees(TIMEOUT, 0.0).insertion()
    good_trees = [5, (1, 2), (), {1: [], 2: []}, buckets, rotation, add]
    trees = SpoutTrees(*good_trees)
    good = ({"default": FastRoute(1)}, print, [], zero, trees)
    SpoutEmit(*good)  # (the controls)
    SpoutEmit({}, print, [], zero, None)
    for args, error, text in [
        ((), TypeError, "exactly 5 arguments"),
        (({"default": 1}, *good[1:]), TypeError, "maps streams to FastRoutes"),
        ((*good[:2], (), *good[3:]), TypeError, "must be list"),
        ((*good[:4], tuple(good_trees)), TypeError, "trees must be None or a SpoutTrees"),
    ]:
        with pytest.raises(error, match=text):
            SpoutEmit(*args)
    with pytest.raises(TypeError, match="positional arguments only"):
        SpoutEmit(*good[:4], trees=None)
    for at, value, error, text in [
        (0, "5", TypeError, "must be int"),
        (1, [1, 2], TypeError, "must be tuple"),
        (1, (), ValueError, "no ackers"),
        (2, ("0",), TypeError, "integer"),
        (2, (2,), ValueError, "out of range"),
        (2, (-1,), ValueError, "out of range"),
        (3, [[], []], TypeError, "must be dict"),
        (4, 3, TypeError, "buckets a sequence, add callable"),
        (6, None, TypeError, "buckets a sequence, add callable"),
    ]:
        with pytest.raises(error, match=text):
            SpoutTrees(*good_trees[:at], value, *good_trees[at + 1 :])
    with pytest.raises(TypeError, match="exactly 7 arguments"):
        SpoutTrees(*good_trees[:6])
    # an acker without its inits list, a bucket that is no dict: the emit raises, no crash
    for at, value, error in ((3, {}, TypeError), (4, [[]], TypeError), (4, [], IndexError)):
        broken = SpoutTrees(*good_trees[:at], value, *good_trees[at + 1 :])
        route = FastRoute(1, lambda v: [7], {7: (nothing, nothing)})
        emit = SpoutEmit({"default": route}, print, [], zero, broken).emit
        with pytest.raises(error):
            emit(["x"], "m")
        assert emit(["x"]) == [7]  # untracked: no tree to register


@needs_compiled
@pytest.mark.parametrize("ackers", [True, False], ids=["acked", "unacked"])
def test_errors_inside_spout_emit_propagate_and_leak_nothing(ackers: bool) -> None:
    """A lane append, a grouping, the clock or ``add`` that raises: the emit raises it, and
    after many such emits the values' and msg id's reference counts are back where they
    started once what holds them on purpose is let go."""
    values, msg_id = ["v"], object()
    cases: dict[str, dict[str, Any]] = {
        "good": {"tasks": (7, 8, 9)},
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
        "add": {"add": boom, "clock": lambda: 2000.0},  # (past every rotation)
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
    assert raised["good"] == set()
    for name in ("a value append", "a meta append", "the second task's append", "a grouping"):
        assert raised[name] == {"Boom"}, name
    assert raised["a grouping's odd answer"] == raised["a lane that is no pair"] == {"TypeError"}
    assert raised["a task without a lane"] == {"KeyError"}
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
    route = basic_path.FastRoute(1, choose, {7: (nothing, nothing)})
    watched = [weakref.ref(x) for x in (holder, pending, choose, clock)]
    trees = fastpath.SpoutTrees(5, (1,), (), {1: []}, *pending.insertion())
    holder.emit = spout_path.SpoutEmit({"default": route}, holder.general, [], clock, trees).emit
    assert holder.emit(["x"], "m") == [7] and len(pending) == 1
    del holder, pending, route, choose, clock, trees
    gc.collect()
    assert [w() for w in watched] == [None] * 4


@needs_compiled
def test_start_tree_keeps_writing_where_the_outbox_and_pending_trees_read() -> None:
    """The objects ``compiled_trees`` hands over stay the ones the outbox and the pending
    trees use through drains, rotations and clears (else inits and trees would be lost)."""
    twin = Twin(ackers=(1,))
    for turn in range(4):
        msg_id = f"m{turn}"
        twin.emit(["w"], msg_id)
        drained = twin.outbox.drain()
        inits = [e for _, stream, (entries,) in drained if stream == "__ack_init" for e in entries]
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
