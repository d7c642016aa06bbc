"""The compiled BasicBolt task (``topology.runtime._basic``) against its pure-Python reference.

:mod:`topology.runtime.basic_path` gives a BasicBolt task a compiled loop (build the tuple,
``process``, ack through the acker's C API) and a compiled ``emit``; otherwise the task runs
:meth:`~topology.runtime.tasks.BoltTask._run` and
:meth:`~topology.runtime.collector.BoltCollector.emit_anchored`: the reference.  The main
test is generated: hypothesis draws a topology (a spout, optionally a join that puts every
input in two trees, the BasicBolt, its streams' subscribers and groupings), a layout, a
failure policy and, for each input, what ``process`` does — emits of every form with values
of every kind, acks and fails of its own input, an exception, reads by key, on tick tuples
too — and both paths must do exactly the same (:mod:`tests.unit.twin_runs`).  The other
tests check what a comparison cannot: error messages, base exceptions, the README and
Streams API word counts' own figures, and where the task stays pure Python.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_streams import Collect, Items
from tests.unit.twin_runs import (
    FEW,
    LAYOUTS,
    NOT_A_LIST,
    PLAIN,
    VALUES,
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
    plain,
    received,
    subscribers,
)
from topology import BasicBolt, Bolt, Spout, Stream, TopologyBuilder, Tuple
from topology.runtime import basic_path
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.tasks.task import BoltTask
from topology.streams import StreamBuilder

pytestmark = pytest.mark.timeout(180)

STREAMS: dict[str, list[str]] = {"default": ["w"], "pairs": ["a", "b"], "empty": []}
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}
ABSENT = "-"


def test_ci_builds_the_compiled_basic_path() -> None:
    ci_requires_the_build(basic_path)
    assert (
        basic_path.COMPILED == (basic_path.Basic is not None) == (basic_path.FastRoute is not None)
    )


class Feed(Spout):
    """Emits ``[i, i]`` for each of its share of ``range(n)`` (msg id ``i``, or none for
    every third), four a call; records acks and fails with their reason."""

    outputs = ["i", "v"]

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: Any, context: Any) -> None:
        tasks = len(context.component_tasks())
        self.todo = list(range(context.task_index, self.n, tasks))
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        for i in self.todo[:4]:
            self.emit([i, i], None if i % 3 == 2 else i)
        del self.todo[:4]

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind, reason.component, reason.error))


class Join(Bolt):
    """Joins inputs two by two: emits ``[a, b]`` anchored to both (two trees), acks them."""

    outputs = ["i", "v"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.held: Tuple | None = None

    def execute(self, tup: Tuple) -> None:
        if self.held is None:
            self.held = tup
            return
        first, self.held = self.held, None
        self.emit([first[0], tup[0]], anchors=[first, tup])
        self.ack(first)
        self.ack(tup)


@st.composite
def calls(draw: Any) -> tuple[Any, ...]:
    """What ``process`` does once: ("emit", form, values, stream), ("ack"), ("fail"),
    ("raise") or ("read", key)."""
    kind = draw(st.sampled_from(["emit"] * 8 + ["ack", "fail", "raise", "read"]))
    if kind == "read":
        return (kind, draw(st.sampled_from(["i", "v", "a", 0, 1, -1, 5, "nope", None])))
    if kind != "emit":
        return (kind,)
    stream = draw(
        st.sampled_from(
            ["-"] * 4
            + [*STREAMS, "pairs", "unheard", "targeted"]
            + ["nope", None, "sub", "unhashable"]
        )
    )
    arity = len(STREAMS.get(stream, ["w"]))
    shape = draw(st.sampled_from(["plain"] * 6 + ["any", "arity", "not a list"]))
    if shape == "not a list":
        values: Any = (draw(NOT_A_LIST), arity)  # (made anew for each call: a generator)
    else:
        n = arity if shape != "arity" else draw(st.integers(0, 3))
        values = draw(st.lists(PLAIN if shape == "plain" else VALUES, min_size=n, max_size=n))
    forms = ["pos"] * 4 + ["kw"] * 3 + ["anchors=", "anchors pos", "anchors list", "class"]
    forms += ["values=", "direct", "stranger", "dup anchors", "unknown keyword", "four", "none"]
    return (kind, draw(st.sampled_from(forms)), values, stream)


def invoke(bolt: Any, tup: Tuple, call: tuple[Any, ...]) -> Any:
    """Make ``call`` in ``bolt``'s ``process`` of ``tup``."""
    kind = call[0]
    if kind in ("ack", "fail"):
        return getattr(bolt, kind)(tup)
    if kind == "raise":
        raise ValueError(f"process raised on {tup.values}")
    if kind == "read":
        return tup[call[1]]
    _, form, values, stream = call
    values = not_a_list(*values) if type(values) is tuple else values
    stream = {"sub": StrStream("default"), "unhashable": []}.get(stream, stream)  # type: ignore[call-overload]
    kw = {} if stream is ABSENT else {"stream": stream}
    pos = [] if stream is ABSENT else [None, stream]
    emit = bolt.emit
    if form == "pos":
        return emit(values, *pos)
    if form == "kw":
        return emit(values, **kw)
    if form in ("anchors=", "anchors list"):
        return emit(values, anchors=tup if form == "anchors=" else [tup], **kw)
    if form == "anchors pos":
        return emit(values, tup, *pos[1:])
    if form == "class":
        return BasicBolt.emit(bolt, values, None, "default" if stream is ABSENT else stream)
    if form == "values=":
        return emit(values=values, **kw)
    if form in ("direct", "stranger"):
        task = bolt.direct_tasks[0] if form == "direct" else 999
        return bolt.emit_direct(task, values, stream="targeted" if stream is ABSENT else stream)
    if form == "dup anchors":
        return emit(values, tup, anchors=tup)
    if form == "unknown keyword":
        return emit(values, foo=1)
    if form == "four":
        return emit(values, None, "default", 4)
    return emit()


def taken(call: tuple[Any, ...], subs: dict[str, list[Any]]) -> bool:
    """Whether the compiled emit takes ``call`` itself (the rest goes to Python)."""
    if call[0] != "emit":
        return False
    _, form, values, stream = call
    name = "default" if stream is ABSENT else stream
    if form not in ("pos", "kw", "anchors=", "anchors list", "anchors pos"):
        return False
    if name not in (*STREAMS, "unheard") or type(values) is not list:
        return False
    if len(values) != len(STREAMS.get(name, ["w"])):
        return False
    return fast_stream(subs.get(name, [])) and (not subs.get(name) or all(map(plain, values)))


class Relay(BasicBolt):
    """Does what ``script[i]`` says for input ``i`` (the first value; a tick: ``ticks``)
    and records each call's result and whether the compiled emit took it."""

    outputs = {**STREAMS, "unheard": ["w"], "targeted": Stream(["w"], direct=True)}

    def __init__(self, script: list[list[tuple[Any, ...]]], subs: dict[str, Any]) -> None:
        self.script = script
        self.subs = subs

    def prepare(self, conf: Any, context: Any) -> None:
        self.direct_tasks = context.component_tasks("direct")
        self.results: list[Any] = []

    def process(self, tup: Tuple) -> None:
        i = -1 if tup.is_tick() else tup[0]
        for call in self.script[i % len(self.script)]:
            before = fast_emits(self)
            result = call_result(lambda call=call: invoke(self, tup, call))
            took = fast_emits(self) - before
            self.results.append((i, repr(result), took))
            if basic_path.Basic is not None and self._collector.basic is not None:
                assert took == taken(call, self.subs), (call, result)
            if call[0] == "raise":
                raise ValueError(f"process raised on {tup.values}")


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    return {
        "subs": {
            name: draw(subscribers(fields, name == "default")) for name, fields in STREAMS.items()
        },
        "script": draw(st.lists(st.lists(calls(), max_size=4), min_size=1, max_size=6)),
        "n": draw(st.integers(1, 24)),
        "join": draw(st.booleans()),
        "relays": draw(st.integers(1, 2)),
        "layout": draw(LAYOUTS),
        "policy": draw(st.sampled_from([FAIL_AT_ONCE, {}])),
        "ticks": draw(st.sampled_from([None, None, 1])),
    }


def play_scenario(scenario: dict[str, Any]) -> None:
    subs = scenario["subs"]
    builder = TopologyBuilder()
    builder.set_spout("feed", Feed(scenario["n"]), 2)
    upstream = "feed"
    if scenario["join"]:
        builder.set_bolt("join", Join()).global_grouping("feed")
        upstream = "join"
    relay = builder.set_bolt("relay", Relay(scenario["script"], subs), scenario["relays"])
    relay.fields_grouping(upstream, ["v"])
    if scenario["ticks"]:
        relay.add_configuration("topology.tick.tuple.freq.secs", scenario["ticks"])
    sinks = add_sinks(builder, "relay", STREAMS, subs)
    topology = builder.create_topology()
    ackers, workers = scenario["layout"]
    conf = {"topology.workers": workers, "topology.acker.executors": ackers}
    conf.update(scenario["policy"], **{"topology.message.timeout.secs": 5})

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        held = [s for name in sinks for s in instances(runner, name)]
        runner.activate()
        for _ in range(16):
            for sink in held:
                sink.release(1)
            runner.clock.advance(0.5)  # type: ignore[attr-defined]
            runner.turn()
        feeds = instances(runner, "feed")
        return {
            "results": [[x[:2] for x in r.results] for r in instances(runner, "relay")],
            "acked": [sorted(f.acked) for f in feeds],  # (acks of one turn: in any order)
            "failed": [f.failed for f in feeds],
            "received": received(runner, sinks),
        }

    compare(topology, conf, play)


@FEW
@given(scenarios())
def test_generated_processes_agree(scenario: dict[str, Any]) -> None:
    play_scenario(scenario)


# -- what a comparison cannot check ----------------------------------------------------------


class Split(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup["sentence"].split():
            self.emit([word])


class CountWords(BasicBolt):
    """The README's Count as a BasicBolt: its [word, count] go nowhere (nobody subscribes)."""

    outputs = ["word", "count"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: Counter[str] = Counter()

    def process(self, tup: Tuple) -> None:
        word = tup["word"]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


class Sentences(Spout):
    outputs = ["sentence"]

    def __init__(self, sentences: list[str]) -> None:
        self.sentences = sentences

    def open(self, conf: Any, context: Any) -> None:
        self.todo = list(enumerate(self.sentences))[context.task_index :: 2]
        self.acked: list[int] = []

    def next_tuple(self) -> None:
        for i, sentence in self.todo[:3]:
            self.emit([sentence], msg_id=i)
        del self.todo[:3]

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)


WORDS = ["the", "cow", "jumped", "over", "moon", "a", "naïve", "Ünïcode", "日本", "x1", "b"]


@FEW
@given(
    st.lists(st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join), min_size=1, max_size=12),
    LAYOUTS,
)
def test_the_readme_word_count_counts_and_acks_alike(sentences: list[str], layout: Any) -> None:
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences(sentences), parallelism=2)
    builder.set_bolt("split", Split(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", CountWords(), parallelism=2).fields_grouping("split", ["word"])
    topology = builder.create_topology()
    words = [w for s in sentences for w in s.split()]

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        runner.activate()

        def done() -> bool:
            acked = sum(len(s.acked) for s in instances(runner, "sentences"))
            counted = sum(sum(c.counts.values()) for c in instances(runner, "count"))
            return acked == len(sentences) and counted == len(words)

        runner.run_until(done, 500, 0.01)
        counts = [dict(c.counts) for c in instances(runner, "count")]
        assert sum((Counter(c) for c in counts), Counter()) == Counter(words)
        if path == "compiled":  # the counts (nobody subscribes) and the ASCII words
            assert sum(fast_emits(b) for b in instances(runner, "count")) == len(words)
            ascii_words = sum(w.isascii() for w in words)
            assert sum(fast_emits(b) for b in instances(runner, "split")) == ascii_words
        return {"counts": counts}

    ackers, workers = layout
    compare(topology, {"topology.workers": workers, "topology.acker.executors": ackers}, play)


def test_the_streams_api_word_count_agrees() -> None:
    """``flat_map`` and ``count_by_key`` run as BasicBolts (fused or not)."""
    sentences = [f"a b{i % 3} c" for i in range(30)] + ["naïve a", ""]
    total = sum(len(x.split()) for x in sentences)
    for fusion in (True, False):
        sb = StreamBuilder(fusion=fusion)
        lines = sb.new_stream(Items(sentences), parallelism=2, name="lines")
        lines.flat_map(str.split).key_by(lambda w: w).count_by_key().to(
            Collect(), 2, name="collect"
        )

        def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
            runner.activate()
            runner.run_until(
                lambda: sum(len(c.rows) for c in instances(runner, "collect")) == total, 500, 0.01
            )
            finals: dict[str, int] = {}
            for word, count in (row for c in instances(runner, "collect") for row in c.rows):
                finals[word] = max(finals.get(word, 0), count)
            assert finals == Counter(w for x in sentences for w in x.split())
            return {"rows": [c.rows for c in instances(runner, "collect")]}

        compare(sb.build(), {"topology.workers": 2}, play)
    compiled_side_ran()


#: Calls (in bolt ``b``'s process of ``t``) whose error the Python emit raises on both
#: paths: (call, error, message).
ERRORS = [
    ("b.emit(['a', 'b'])", "EmitError", "2 value(s) on stream 'default', which declares 1"),
    ("b.emit('abc')", "EmitError", "a str where a list of values was expected"),
    ("b.emit({'w': 1})", "EmitError", "a dict where a list"),
    ("b.emit(['x'], stream='nope')", "EmitError", "emitted on undeclared stream 'nope'"),
    ("b.emit(['x'], stream=None)", "EmitError", "emitted on undeclared stream None"),
    ("b.emit(['x'], stream='targeted')", "EmitError", "is a direct stream; use emit_direct"),
    ("b.emit_direct(b.direct_tasks[0], ['d'])", "EmitError", "which is not declared direct"),
    ("b.emit_direct(999, ['d'], stream='targeted')", "EmitError", "to task 999, which does not"),
    ("b.emit(['x'], t, anchors=t)", "TypeError", "multiple values for argument 'anchors'"),
    ("b.emit(['x'], foo=1)", "TypeError", "unexpected keyword argument 'foo'"),
    ("b.emit()", "TypeError", "missing 1 required positional argument: 'values'"),
    ("b.emit(['k', {3}], stream='pairs')", "EmitError", "a value of type set for field 'b'"),
    ("t['nope']", "KeyError", "nope"),
]


class Errors(BasicBolt):
    outputs = Relay.outputs

    def prepare(self, conf: Any, context: Any) -> None:
        self.direct_tasks = context.component_tasks("direct")
        self.results: list[Any] = []

    def process(self, tup: Tuple) -> None:
        calls = [eval(f"lambda b, t: {call}") for call, _, _ in ERRORS]
        self.results = [call_result(lambda c=c: c(self, tup)) for c in calls]


def test_wrong_calls_raise_the_python_emit_s_errors() -> None:
    builder = TopologyBuilder()
    builder.set_spout("feed", Feed(1))
    builder.set_bolt("errors", Errors()).shuffle_grouping("feed")
    builder.set_bolt("direct", Sink()).direct_grouping("errors", "targeted")
    builder.set_bolt("sink", Sink()).shuffle_grouping("errors").shuffle_grouping("errors", "pairs")

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        runner.activate()
        runner.run_until(lambda: runner.instance("feed").acked == [0], 100, 0.01)
        results = runner.instance("errors").results
        for (kind, text), (_, error, want) in zip(results, ERRORS, strict=True):
            assert kind == error and want in text, (kind, text)
        return {"results": results}

    compare(builder.create_topology(), {}, play)
    compiled_side_ran()


def test_base_exceptions_in_process_propagate_alike() -> None:
    """KeyboardInterrupt and SystemExit are not the bolt's errors: they leave the loop
    (what was acked before them counts; nothing is reported)."""

    class Stops(BasicBolt):
        outputs = ["i"]

        def prepare(self, conf: Any, context: Any) -> None:
            self.seen: list[int] = []

        def process(self, tup: Tuple) -> None:
            self.seen.append(tup[0])
            if tup[0] == 2:
                raise KeyboardInterrupt("stop")
            self.emit([tup[0]])

    builder = TopologyBuilder()
    builder.set_spout("feed", Feed(0))
    builder.set_bolt("stops", Stops()).shuffle_grouping("feed")

    def play(runner: InProcessRunner, path: str) -> dict[str, Any]:
        task = runner.task("stops")
        assert isinstance(task, BoltTask)
        source = task.source(runner.assignment.component_tasks["feed"][0], "default")
        with pytest.raises(KeyboardInterrupt, match="stop"):
            task.run_group(source, [[0], [1], [2], [3]], None)
        assert runner.instance("stops").seen == [0, 1, 2]
        assert (task.collector.acked, task.collector.failed, runner.errors) == (2, 0, [])
        return {}

    compare(builder.create_topology(), {"topology.acker.executors": 0}, play)
    compiled_side_ran()


@pytest.mark.parametrize(
    "conf",
    [{"topology.testing.always.try.serialize": True}, {"topology.debug": True}],
    ids=["serialize", "debug"],
)
def test_values_checked_everywhere_run_pure_python(
    conf: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Where every emit's values are checked (or shown), the task runs pure Python, and
    the unheard stream's unencodable value is refused too."""
    builder = TopologyBuilder()
    builder.set_spout("feed", Feed(2))
    script = [[("emit", "kw", [{1}], "unheard")], [("emit", "kw", ["ok"], "unheard")]]
    builder.set_bolt("relay", Relay(script, {})).shuffle_grouping("feed")
    builder.set_bolt("direct", Sink()).direct_grouping("relay", "targeted")
    with on_path("compiled"):
        runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1, **conf})
    assert runner.task("relay").collector.basic is None  # type: ignore[union-attr]
    relay = runner.instance("relay")
    runner.activate()
    runner.run_until(lambda: len(relay.results) == 2, 100, advance=0.01)
    assert "EmitError" in relay.results[0][1] and "msgpack cannot encode" in relay.results[0][1]
    assert relay.results[1] == (1, repr(("returned", [])), 0)
