"""The compiled BasicBolt task (``topology.runtime._basic``) against its pure-Python twin.

:mod:`topology.runtime.basic_path` gives a BasicBolt task a compiled loop (build the tuple,
``process``, ack) and a compiled ``emit`` when ``basic_path.COMPILED`` is true as the task
is built; otherwise the task runs :meth:`~topology.runtime.tasks.task.BoltTask._run` and
:meth:`~topology.runtime.tasks.collector.BoltCollector.emit_anchored`, the reference.  Every test
here runs the same topology and input on an :class:`InProcessRunner` once on each path
(``basic_path.COMPILED`` patched to False for the pure one) and checks that what the bolts
receive, the emits return or raise, the spouts see acked and failed, the errors reported
and the tasks' counters agree: the README-style word count (ackers on and off, one worker
and two), values of every kind, each way to call ``emit`` right and wrong over every
grouping, a ``process`` that raises, tuples in several trees, tick tuples, ``tup[key]``,
and emits made outside ``process`` or through the class.

Without the compiled module (or with ``SPARKSTORM_PURE_PYTHON=1``) each test still runs and
checks the pure-Python side, then skips, saying so; ``SPARKSTORM_REQUIRE_SPEEDUPS=1`` (CI)
makes a missing build a failure.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acker.fastpath import PyTupleBase
from acker.protocol import FailReason
from grouping import fields as fields_grouping
from grouping.shuffle import ShuffleGrouping
from tests.unit.path_switch import PathSwitch
from tests.unit.test_streams import Collect, Items
from topology import BasicBolt, Bolt, CustomGrouping, Spout, Stream, TopologyBuilder, Tuple
from topology.constants import SYSTEM_COMPONENT, TICK_STREAM
from topology.errors import EmitError
from topology.runtime import basic_path
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.tasks.task import BoltTask
from topology.spec import Topology
from topology.streams import StreamBuilder
from topology.tuple import TupleSource

pytestmark = pytest.mark.timeout(120)

NOT_BUILT = (
    "topology.runtime._basic is not in use (not built, or SPARKSTORM_PURE_PYTHON is set): "
    "only the pure-Python side ran"
)

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}
SWITCH = PathSwitch(basic_path, NOT_BUILT)
on_path, paths, compiled_side_ran = SWITCH.on_path, SWITCH.paths, SWITCH.compiled_side_ran
#: Hypothesis: few examples (each runs whole topologies twice), no deadline (the first
#: example of a run builds more than the others).
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_ci_builds_the_compiled_basic_path() -> None:
    """.ci/run sets SPARKSTORM_REQUIRE_SPEEDUPS: there a missing build is a failure."""
    if os.environ.get("SPARKSTORM_REQUIRE_SPEEDUPS"):
        assert basic_path.COMPILED, "topology.runtime._basic did not build (compiler? headers?)"
    if os.environ.get("SPARKSTORM_PURE_PYTHON", "") not in ("", "0"):
        assert not basic_path.COMPILED
    assert basic_path.COMPILED == (basic_path.Basic is not None)
    assert basic_path.COMPILED == (basic_path.FastRoute is not None)


# -- running a topology on one path -------------------------------------------------------


def agree(outcomes: dict[str, Any]) -> None:
    """The compiled path's outcome is the pure path's (when both ran)."""
    if "compiled" in outcomes:
        assert outcomes["compiled"] == outcomes["pure"]


def build(path: str, topology: Topology, conf: dict[str, Any] | None = None) -> InProcessRunner:
    """A started runner whose BasicBolt tasks run ``path`` (asserted)."""
    # the old failure policy (fail at once): these tests compare the paths' fails
    settings_ = {"topology.workers": 1, **FAIL_AT_ONCE, **(conf or {})}
    with on_path(path):
        runner = InProcessRunner(topology, settings_)
    basic = [t for w in runner.workers.values() for t in w.tasks() if isinstance(t, BoltTask)]
    basic = [t for t in basic if isinstance(t.instance, BasicBolt)]
    assert basic, "the topology has no BasicBolt"
    for task in basic:
        assert (task.collector.basic is not None) == (path == "compiled"), task.component
    return runner


def drive(runner: InProcessRunner, done: Callable[[], bool], limit: int = 3000) -> None:
    runner.activate()
    runner.run_until(done, limit, advance=0.01)


def instances(runner: InProcessRunner, component: str) -> list[Any]:
    """The user's objects of every task of ``component``, by task id."""
    count = len(runner.assignment.component_tasks[component])
    return [runner.instance(component, i) for i in range(count)]


def counters(runner: InProcessRunner) -> dict[tuple[str, int], dict[str, Any]]:
    """Every task's counters as status reports them, and its collector's ``emit_calls``
    and per-route ``emitted``: what must not depend on the path."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for status in runner.status():
        for entry in status["tasks"].values():
            keys = ("emitted", "transferred", "executed", "acked", "failed", "failed_by")
            out[(entry["component"], entry["index"])] = {k: entry[k] for k in keys}
    for worker in runner.workers.values():
        for task in worker.tasks():
            entry = out[(task.component, task.context.task_index)]
            collector = task.collector
            entry["emit_calls"] = collector.emit_calls
            entry["routes"] = {s: r.emitted for s, r in collector.routes.items()}
            entry["errors"] = collector.errors_reported
    return out


def error_lines(runner: InProcessRunner) -> list[tuple[str, int, str]]:
    """The reported errors, each as its last line (the exception and its message)."""
    return [(c, t, text.splitlines()[-1]) for c, t, text in runner.errors]


class Recorder(Spout):
    """Emits ``[i]`` with msg id ``i`` for its share of ``range(n)`` (``per_call`` a call);
    records what is acked and failed (with the reason)."""

    outputs = ["i"]
    per_call = 4

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: Any, context: Any) -> None:
        tasks = len(context.component_tasks())
        self.todo = list(range(context.task_index, self.n, tasks))
        self.acked: list[Any] = []
        self.failed: list[tuple[Any, str, str | None, str | None]] = []

    def next_tuple(self) -> None:
        for _ in range(self.per_call):
            if self.todo:
                i = self.todo.pop(0)
                self.emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        self.failed.append((msg_id, reason.kind, reason.component, reason.error))


def settled(runner: InProcessRunner, spout: str, n: int) -> Callable[[], bool]:
    """Every msg id of ``spout``'s tasks acked or failed."""

    def done() -> bool:
        return sum(len(s.acked) + len(s.failed) for s in instances(runner, spout)) == n

    return done


def spout_outcome(runner: InProcessRunner, spout: str) -> tuple[list[Any], list[Any]]:
    tasks = instances(runner, spout)
    acked = sorted(m for s in tasks for m in s.acked)
    failed = sorted((f for s in tasks for f in s.failed), key=repr)
    return acked, failed


class Sink(Bolt):
    """Records every tuple it receives (its stream and values) and acks it."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.received: list[tuple[str, list[Any]]] = []

    def execute(self, tup: Tuple) -> None:
        self.received.append((tup.stream, tup.values))
        self.ack(tup)


def received(runner: InProcessRunner, components: list[str]) -> dict[tuple[str, int], str]:
    """What each task of ``components`` received, in order (repr: NaN equals NaN)."""
    return {
        (c, i): repr(sink.received)
        for c in components
        for i, sink in enumerate(instances(runner, c))
    }


# -- 1. the README's word count ---------------------------------------------------------


class Sentences(Spout):
    outputs = ["sentence"]

    def __init__(self, sentences: list[str]) -> None:
        self.sentences = sentences

    def open(self, conf: Any, context: Any) -> None:
        tasks = len(context.component_tasks())
        self.todo = [
            (i, s) for i, s in enumerate(self.sentences) if i % tasks == context.task_index
        ]
        self.acked: list[int] = []
        self.failed: list[int] = []

    def next_tuple(self) -> None:
        for _ in range(3):
            if self.todo:
                i, sentence = self.todo.pop(0)
                self.emit([sentence], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


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


WORDS = ["the", "cow", "jumped", "over", "moon", "a", "naïve", "Ünïcode", "日本", "x1", "b"]


def word_count(sentences: list[str], ackers: bool, workers: int) -> dict[str, Any]:
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences(sentences), parallelism=2)
    builder.set_bolt("split", Split(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", CountWords(), parallelism=2).fields_grouping("split", ["word"])
    topology = builder.create_topology()
    conf = {"topology.workers": workers, "topology.acker.executors": None if ackers else 0}
    total = sum(len(s.split()) for s in sentences)
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf)

        def done(runner: InProcessRunner = runner) -> bool:
            counted = sum(sum(c.counts.values()) for c in instances(runner, "count"))
            return counted == total and settled(runner, "sentences", len(sentences))()

        drive(runner, done)
        counts = [dict(c.counts) for c in instances(runner, "count")]
        assert sum((Counter(c) for c in counts), Counter()) == Counter(
            w for s in sentences for w in s.split()
        )
        acked, failed = spout_outcome(runner, "sentences")
        assert acked == list(range(len(sentences))) and failed == []
        assert runner.errors == []
        if path == "compiled":  # the compiled emit took the counts (nobody subscribes) and
            # the ASCII words; the others went to the Python emit
            ascii_words = sum(w.isascii() for s in sentences for w in s.split())
            assert sum(fast_emits(b) for b in instances(runner, "count")) == total
            assert sum(fast_emits(b) for b in instances(runner, "split")) == ascii_words
        stats = counters(runner)
        outcomes[path] = {"counts": counts, "acked": acked, "counters": stats}
        assert sum(stats[("split", i)]["routes"]["default"] for i in range(2)) == total
        assert sum(stats[("count", i)]["emit_calls"] for i in range(2)) == total
        assert sum(stats[("count", i)]["acked"] for i in range(2)) == total
    agree(outcomes)
    return outcomes


@pytest.mark.parametrize(
    "ackers, workers", [(True, 1), (False, 1), (True, 2)], ids=["acked", "unacked", "2-workers"]
)
def test_the_readme_word_count_counts_acks_and_counts_alike(ackers: bool, workers: int) -> None:
    sentences = [f"the cow jumped over the moon {i}" for i in range(40)] + ["naïve cow über"]
    word_count(sentences, ackers, workers)
    compiled_side_ran()


def test_word_counts_of_generated_sentences_agree() -> None:
    sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)

    @FEW
    @given(st.lists(sentence, min_size=1, max_size=12), st.booleans())
    def check(sentences: list[str], ackers: bool) -> None:
        word_count(sentences, ackers, 1)

    check()
    compiled_side_ran()


# -- 2. values of every kind ----------------------------------------------------------------


class Opaque:
    """A value msgpack cannot encode."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Opaque

    def __hash__(self) -> int:
        return 7


class Relay(BasicBolt):
    """Emits ``[i, cases[i]]`` for each input ``i``; records what the emit returned or
    raised."""

    outputs = {"default": ["i", "value"], "unheard": ["i", "value"]}

    def __init__(self, cases: list[Any], stream: str = "default") -> None:
        self.cases = cases
        self.stream = stream

    def prepare(self, conf: Any, context: Any) -> None:
        self.results: dict[int, Any] = {}
        self.took: dict[int, int] = {}

    def process(self, tup: Tuple) -> None:
        i = tup["i"]
        before = fast_emits(self)
        try:
            tasks = self.emit([i, self.cases[i]], stream=self.stream)
        except EmitError as exc:
            self.results[i] = ("EmitError", str(exc))
        else:
            self.results[i] = ("sent", tasks)
        self.took[i] = fast_emits(self) - before


def plain(value: Any) -> bool:
    """A value the compiled emit sends itself: ASCII str, int within 64 bits, float, bool,
    None or bytes (exact types)."""
    t = type(value)
    if t is str:
        return value.isascii()
    if t is int:
        return -(2**63) <= value < 2**64
    return t in (float, bool, type(None), bytes)


class ValueSink(Bolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.received: dict[int, str] = {}

    def execute(self, tup: Tuple) -> None:
        self.received[tup["i"]] = repr(tup["value"])
        self.ack(tup)


INT_EDGES = [0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 2**100, -(2**70)]
TEXT_EDGES = ["", "word", "naïve", "日本語", "\ud800", "a\udfffb", "emoji 🐄", "\x00"]
FLOAT_EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, 1e308]
SCALARS = st.one_of(
    st.sampled_from(INT_EDGES),
    st.integers(),
    st.sampled_from(TEXT_EDGES),
    st.text(max_size=6),
    st.text(st.characters(categories=["Cs", "Ll"]), max_size=4),  # surrogates: not UTF-8
    st.sampled_from(FLOAT_EDGES),
    st.floats(),
    st.booleans(),
    st.none(),
    st.binary(max_size=6),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=6,
) | st.one_of(
    st.sets(st.integers(), max_size=3),
    st.frozensets(st.text(max_size=2), max_size=2),
    st.builds(Opaque),
    st.just(complex(1, 2)),
    st.lists(st.builds(Opaque), min_size=1, max_size=2),
    st.dictionaries(st.text(max_size=2), st.sets(st.integers()), min_size=1, max_size=1),
)


def msgpack_encodable(value: Any) -> bool:
    try:
        msgpack.packb(value, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def relay_values(cases: list[Any], ackers: bool, workers: int, stream: str) -> None:
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(len(cases)))
    builder.set_bolt("relay", Relay(cases, stream)).shuffle_grouping("feed")
    builder.set_bolt("sink", ValueSink(), parallelism=3).fields_grouping("relay", ["value"])
    topology = builder.create_topology()
    conf = {"topology.workers": workers, "topology.acker.executors": None if ackers else 0}
    subscribed = stream == "default"
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf)
        relay = runner.instance("relay")
        sinks = instances(runner, "sink")

        def done(relay: Any = relay, sinks: list[Any] = sinks, runner: Any = runner) -> bool:
            sent = sum(1 for r in relay.results.values() if r[0] == "sent" and r[1])
            got = sum(len(s.received) for s in sinks)
            finished = len(relay.results) == len(cases)
            return finished and settled(runner, "feed", len(cases))() and got == sent

        drive(runner, done)
        assert sorted(relay.results) == list(range(len(cases)))
        where: dict[int, int] = {}
        for index, sink in enumerate(sinks):
            for i, text in sink.received.items():
                assert text == repr(cases[i]), f"case {i} arrived changed"
                where[i] = index
        for i, value in enumerate(cases):
            outcome = relay.results[i]
            if not subscribed:  # nobody subscribes: not encoded, so never refused
                assert outcome == ("sent", []), (i, value)
            elif msgpack_encodable(value):
                assert outcome[0] == "sent" and len(outcome[1]) == 1, (i, value, outcome)
                assert where[i] == runner.assignment.component_tasks["sink"].index(outcome[1][0])
            else:
                assert outcome[0] == "EmitError" and "msgpack cannot encode" in outcome[1]
                assert i not in where
        by_key: dict[str, set[int]] = {}
        for i, index in where.items():
            by_key.setdefault(repr(cases[i]), set()).add(index)
        assert all(len(tasks) == 1 for tasks in by_key.values())  # a key: one task
        if path == "compiled":  # which emits the compiled emit took itself
            assert relay.took == {i: int(not subscribed or plain(v)) for i, v in enumerate(cases)}
        acked, failed = spout_outcome(runner, "feed")
        assert acked == list(range(len(cases))) and failed == []
        assert runner.errors == []
        outcomes[path] = {
            "results": relay.results,
            "where": where,
            "counters": counters(runner),
        }
    agree(outcomes)


@pytest.mark.parametrize("stream", ["default", "unheard"])
@pytest.mark.parametrize(
    "ackers, workers", [(True, 1), (False, 1), (True, 2)], ids=["acked", "unacked", "2-workers"]
)
def test_values_of_every_kind_arrive_or_are_refused_alike(
    ackers: bool, workers: int, stream: str
) -> None:
    @FEW
    @given(st.lists(VALUES, min_size=1, max_size=10))
    def check(cases: list[Any]) -> None:
        relay_values(cases, ackers, workers, stream)

    check()
    compiled_side_ran()


def test_the_edge_values_arrive_or_are_refused_alike() -> None:
    cases: list[Any] = [*INT_EDGES, *TEXT_EDGES, *FLOAT_EDGES, True, False, None, b"", b"\xff"]
    cases += [[1, [2, "ü"]], {"k": [b"v", None]}, {1: math.nan}, [2**64], {"s": {1}}]
    cases += [{1, 2}, frozenset(), Opaque(), complex(0, 1), [Opaque()]]
    for ackers, workers in ((True, 1), (False, 2)):
        relay_values(cases, ackers, workers, "default")
        relay_values(cases, ackers, workers, "unheard")
    compiled_side_ran()


def test_the_fields_groupings_key_cache_fills_and_clears(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled emit reads the fields grouping's own key cache: keys are routed alike
    while it fills and after it is cleared (a small cache here)."""
    monkeypatch.setattr(fields_grouping, "KEY_CACHE_SIZE", 16)
    keys: list[Any] = [f"k{i % 40}" for i in range(200)] + [i % 30 - 10 for i in range(100)]
    keys += [b"b%d" % (i % 20) for i in range(60)] + [None, True, 1, 1.0, "1", b"1", 2**64 - 1]
    relay_values(keys, True, 1, "default")
    relay_values(keys, False, 2, "default")
    compiled_side_ran()


# -- 3. every way to call emit, over every grouping ---------------------------------------


class StrStream(str):
    pass


class ListValues(list[Any]):
    pass


def _gen() -> Iterator[str]:
    yield "g"


#: name -> emit call (the bolt, its input): each is made once, on its own input.
CALLS: dict[str, Callable[[Any, Tuple], Any]] = {
    "shuffle": lambda b, t: b.emit(["x"]),
    "arity long": lambda b, t: b.emit(["a", "b"]),
    "arity short": lambda b, t: b.emit([]),
    "arity long, unheard": lambda b, t: b.emit(["a", "b"], stream="unheard"),
    "a tuple": lambda b, t: b.emit(("t",)),
    "a generator": lambda b, t: b.emit(_gen()),
    "a str": lambda b, t: b.emit("abc"),
    "a bytes": lambda b, t: b.emit(b"abc"),
    "a dict": lambda b, t: b.emit({"word": 1}),
    "None": lambda b, t: b.emit(None),
    "an int": lambda b, t: b.emit(5),
    "a list subclass": lambda b, t: b.emit(ListValues(["sub"])),
    "a tuple, unheard": lambda b, t: b.emit(("t",), stream="unheard"),
    "a str, unheard": lambda b, t: b.emit("a", stream="unheard"),
    "undeclared stream=": lambda b, t: b.emit(["x"], stream="nope"),
    "undeclared positional": lambda b, t: b.emit(["x"], None, "nope"),
    "stream=None": lambda b, t: b.emit(["x"], stream=None),
    "stream unhashable": lambda b, t: b.emit(["x"], stream=[]),
    "stream a str subclass": lambda b, t: b.emit(["x"], stream=StrStream("single")),
    "stream=": lambda b, t: b.emit(["x"], stream="single"),
    "stream positional": lambda b, t: b.emit(["x"], None, "single"),
    "anchors=": lambda b, t: b.emit(["x"], anchors=t),
    "anchors positional": lambda b, t: b.emit(["x"], t),
    "anchors= a list, stream=": lambda b, t: b.emit(["x"], anchors=[t], stream="every"),
    "stream=, anchors=": lambda b, t: b.emit(["x"], stream="single", anchors=None),
    "anchors twice": lambda b, t: b.emit(["x"], t, anchors=t),
    "stream twice": lambda b, t: b.emit(["x"], None, "single", stream="single"),
    "values=": lambda b, t: b.emit(values=["kw"]),
    "values= stream=": lambda b, t: b.emit(values=["kw"], stream="every"),
    "unknown keyword": lambda b, t: b.emit(["x"], foo=1),
    "no arguments": lambda b, t: b.emit(),
    "four arguments": lambda b, t: b.emit(["x"], None, "single", 4),
    "a direct stream": lambda b, t: b.emit(["x"], stream="targeted"),
    "emit_direct": lambda b, t: b.emit_direct(b.direct_tasks[0], ["d"], stream="targeted"),
    "emit_direct to a stranger": lambda b, t: b.emit_direct(999, ["d"], stream="targeted"),
    "emit_direct, not direct": lambda b, t: b.emit_direct(b.direct_tasks[0], ["d"]),
    "two subscribers": lambda b, t: b.emit(["x"], stream="both"),
    "all grouping": lambda b, t: b.emit(["x"], stream="every"),
    "global grouping": lambda b, t: b.emit(["y"], stream="single"),
    "fields on two fields": lambda b, t: b.emit(["k", 3], stream="pairs"),
    "fields on two fields, again": lambda b, t: b.emit(["k", 3], stream="pairs"),
    "fields on two fields, a float": lambda b, t: b.emit(["k", 3.0], stream="pairs"),
    "fields on two fields, a set": lambda b, t: b.emit(["k", {3}], stream="pairs"),
    "fields on one field": lambda b, t: b.emit(["key", 1], stream="keyed"),
    "fields on one field, again": lambda b, t: b.emit(["key", 2], stream="keyed"),
    "fields on one field, int": lambda b, t: b.emit([1, 2], stream="keyed"),
    "fields on one field, True": lambda b, t: b.emit([True, 2], stream="keyed"),
    "fields on one field, 1.0": lambda b, t: b.emit([1.0, 2], stream="keyed"),
    "fields on one field, bytes": lambda b, t: b.emit([b"key", 2], stream="keyed"),
    "fields on one field, None": lambda b, t: b.emit([None, 2], stream="keyed"),
    "fields on one field, a list": lambda b, t: b.emit([["key"], 2], stream="keyed"),
    "local or shuffle": lambda b, t: b.emit(["x"], stream="local"),
    "partial key": lambda b, t: b.emit(["hot"], stream="partial"),
    "partial key, again": lambda b, t: b.emit(["hot"], stream="partial"),
    "none grouping": lambda b, t: b.emit(["x"], stream="none"),
    "custom grouping, one task": lambda b, t: b.emit(["one"], stream="custom"),
    "custom grouping, every task": lambda b, t: b.emit(["every"], stream="custom"),
    "custom grouping, no task": lambda b, t: b.emit(["nobody"], stream="custom"),
    "no fields": lambda b, t: b.emit([], stream="empty"),
    "no fields, one value": lambda b, t: b.emit(["x"], stream="empty"),
    "unheard": lambda b, t: b.emit(["x"], stream="unheard"),
    "unheard, a set": lambda b, t: b.emit([{1}], stream="unheard"),
    "unheard, stream positional": lambda b, t: b.emit([{1}], None, "unheard"),
    "twice in one process": lambda b, t: [b.emit(["1"]), b.emit(["2"], stream="every")],
    "after its own ack": lambda b, t: [b.ack(t), b.emit(["acked"], stream="single")],
    "after its own fail": lambda b, t: [b.fail(t), b.emit(["failed"], stream="single")],
    "then its own fail": lambda b, t: [b.emit(["failed"], stream="single"), b.fail(t)],
}
NAMES = list(CALLS)


#: The streams of a probe (a component that makes every kind of emit): one per grouping.
PROBE_STREAMS: dict[str, Any] = {
    "default": ["w"],
    "single": ["w"],
    "both": ["w"],
    "every": ["w"],
    "pairs": ["a", "b"],
    "keyed": ["k", "n"],
    "targeted": Stream(["w"], direct=True),
    "unheard": ["w"],
    "local": ["w"],
    "partial": ["w"],
    "none": ["w"],
    "custom": ["w"],
    "empty": [],
}


class Probe(BasicBolt):
    """Makes call ``NAMES[i]`` for input ``i``; records what it returned or raised."""

    outputs = PROBE_STREAMS

    def prepare(self, conf: Any, context: Any) -> None:
        self.direct_tasks = context.component_tasks("direct")
        self.results: dict[str, Any] = {}
        #: name -> emits the compiled emit took itself (0 on the pure path).
        self.took: dict[str, int] = {}

    def process(self, tup: Tuple) -> None:
        name = NAMES[tup["i"]]
        before = fast_emits(self)
        try:
            self.results[name] = ("returned", CALLS[name](self, tup))
        except Exception as exc:
            self.results[name] = (type(exc).__name__, str(exc))
        self.took[name] = fast_emits(self) - before


def fast_emits(bolt: Any) -> int:
    """Emits of ``bolt``'s task the compiled emit took without the Python one."""
    return sum(f.emitted for f in bolt._collector.fast_routes)


#: The calls the compiled emit takes itself (the others go to the Python emit): the
#: comparison covers both.
COMPILED_CALLS = {
    "shuffle",
    "stream=",
    "stream positional",
    "anchors=",
    "anchors positional",
    "anchors= a list, stream=",
    "stream=, anchors=",
    "all grouping",
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
    "unheard, a set",
    "unheard, stream positional",
    "twice in one process",
    "after its own ack",
    "after its own fail",
    "then its own fail",
}


def subscribe_to_probe(builder: TopologyBuilder) -> None:
    """A sink on every stream of :data:`PROBE_STREAMS` of component ``probe``, each with
    another grouping (two on ``both``; none on ``unheard``)."""
    builder.set_bolt("shuffled", Sink(), 2).shuffle_grouping("probe")
    builder.set_bolt("global", Sink(), 2).global_grouping("probe", "single")
    builder.set_bolt("left", Sink(), 2).shuffle_grouping("probe", "both")
    builder.set_bolt("right", Sink()).global_grouping("probe", "both")
    builder.set_bolt("all", Sink(), 3).all_grouping("probe", "every")
    builder.set_bolt("pairs", Sink(), 3).fields_grouping("probe", ["a", "b"], "pairs")
    builder.set_bolt("keyed", Sink(), 3).fields_grouping("probe", ["k"], "keyed")
    builder.set_bolt("direct", Sink(), 2).direct_grouping("probe", "targeted")
    builder.set_bolt("local", Sink(), 2).local_or_shuffle_grouping("probe", "local")
    builder.set_bolt("partial", Sink(), 3).partial_key_grouping("probe", ["w"], "partial")
    builder.set_bolt("none", Sink(), 2).none_grouping("probe", "none")
    builder.set_bolt("custom", Sink(), 3).custom_grouping("probe", ByWord(), "custom")
    builder.set_bolt("empty", Sink(), 2).shuffle_grouping("probe", "empty")


def probe_topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(len(NAMES)))
    builder.set_bolt("probe", Probe()).shuffle_grouping("feed")
    subscribe_to_probe(builder)
    return builder.create_topology()


class ByWord(CustomGrouping):
    """``one``: the first task; ``every``: all of them; anything else: nobody."""

    def choose_tasks(self, values: Any) -> list[int]:
        tasks = list(self.target_tasks)
        return {"one": tasks[:1], "every": tasks}.get(values[0], [])


SINKS = ["shuffled", "global", "left", "right", "all", "pairs", "keyed", "direct"]
SINKS += ["local", "partial", "none", "custom", "empty"]

#: What the pure path does with some of the calls (the rest: compared only).
EXPECTED = {
    "arity long": ("EmitError", "emitted 2 value(s) on stream 'default', which declares 1"),
    "arity long, unheard": ("EmitError", "on stream 'unheard', which declares 1 field(s)"),
    "a str": ("EmitError", "a str where a list of values was expected"),
    "a str, unheard": ("EmitError", "a str where a list of values was expected"),
    "a dict": ("EmitError", "a dict where a list"),
    "undeclared stream=": ("EmitError", "emitted on undeclared stream 'nope'"),
    "undeclared positional": ("EmitError", "emitted on undeclared stream 'nope'"),
    "stream=None": ("EmitError", "emitted on undeclared stream None"),
    "a direct stream": ("EmitError", "is a direct stream; use emit_direct(task, values)"),
    "emit_direct, not direct": ("EmitError", "which is not declared direct"),
    "emit_direct to a stranger": ("EmitError", "to task 999, which does not subscribe"),
    "anchors twice": ("TypeError", "multiple values for argument 'anchors'"),
    "stream twice": ("TypeError", "multiple values for argument 'stream'"),
    "unknown keyword": ("TypeError", "unexpected keyword argument 'foo'"),
    "fields on two fields, a set": ("EmitError", "a value of type set for field 'b'"),
    "no fields, one value": ("EmitError", "which declares 0 field(s) []"),
}


@pytest.mark.parametrize(
    "ackers, workers", [(True, 1), (False, 1), (True, 2)], ids=["acked", "unacked", "2-workers"]
)
def test_every_way_to_call_emit_behaves_alike(ackers: bool, workers: int) -> None:
    topology = probe_topology()
    conf = {"topology.workers": workers, "topology.acker.executors": None if ackers else 0}
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf)
        probe = runner.instance("probe")

        def done(probe: Any = probe, runner: InProcessRunner = runner) -> bool:
            return len(probe.results) == len(NAMES) and settled(runner, "feed", len(NAMES))()

        drive(runner, done)
        for _ in range(20):  # what is still on its way to the sinks
            runner.clock.advance(0.01)  # type: ignore[attr-defined]
            runner.turn()
        results = probe.results
        for name, (kind, text) in EXPECTED.items():
            assert results[name][0] == kind and text in results[name][1], (name, results[name])
        returned = {n: r[1] for n, r in results.items() if r[0] == "returned"}
        tasks = runner.assignment.component_tasks
        assert returned["all grouping"] == tasks["all"]
        assert len(returned["two subscribers"]) == 2
        assert returned["global grouping"] == [tasks["global"][0]]
        assert returned["emit_direct"] == [tasks["direct"][0]]
        assert returned["unheard, a set"] == returned["unheard"] == []
        assert returned["a tuple"] and returned["a generator"] and returned["anchors="]
        assert returned["fields on one field"] == returned["fields on one field, again"]
        assert returned["fields on two fields"] == returned["fields on two fields, again"]
        assert returned["custom grouping, every task"] == tasks["custom"]
        assert returned["custom grouping, no task"] == []
        assert len(returned["no fields"]) == 1
        acked, failed = spout_outcome(runner, "feed")
        own_fails = sorted(NAMES.index(n) for n in ("after its own fail", "then its own fail"))
        if ackers:  # (the runtime's ack after process changes nothing then)
            assert acked == sorted(set(range(len(NAMES))) - set(own_fails))
            assert [f[:3] for f in failed] == [(i, "failed", "probe") for i in own_fails]
        else:
            assert acked == list(range(len(NAMES))) and failed == []
        assert runner.errors == []
        took = {name for name, n in probe.took.items() if n}
        assert took == (COMPILED_CALLS if path == "compiled" else set())
        outcomes[path] = {
            "results": results,
            "received": received(runner, SINKS),
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


# -- 4. process raising; tuples in several trees ------------------------------------------


class Flaky(BasicBolt):
    """Emits ``[i]`` then raises for ``i`` in ``bad``; records the order it saw inputs in."""

    outputs = ["i"]

    def __init__(self, bad: frozenset[int]) -> None:
        self.bad = bad

    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[int] = []

    def process(self, tup: Tuple) -> None:
        i = tup[0]
        self.seen.append(i)
        self.emit([i])
        if i in self.bad:
            raise ValueError(f"bad input {i}")


def flaky_run(n: int, bad: frozenset[int], ackers: bool) -> None:
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(n))
    builder.set_bolt("flaky", Flaky(bad), 2).shuffle_grouping("feed")
    builder.set_bolt("sink", Sink(), 2).shuffle_grouping("flaky")
    topology = builder.create_topology()
    conf = {"topology.acker.executors": None if ackers else 0}
    outcomes = {}
    for path in paths():
        runner = build(path, topology, conf)
        flaky = instances(runner, "flaky")
        sinks = instances(runner, "sink")

        def done(
            flaky: list[Any] = flaky, sinks: list[Any] = sinks, runner: InProcessRunner = runner
        ) -> bool:
            seen = sum(len(f.seen) for f in flaky) == n == sum(len(s.received) for s in sinks)
            return seen and settled(runner, "feed", n)()

        drive(runner, done)
        assert sorted(i for f in flaky for i in f.seen) == list(range(n))
        acked, failed = spout_outcome(runner, "feed")
        if ackers:
            assert acked == sorted(set(range(n)) - bad)
            assert sorted(f[0] for f in failed) == sorted(bad)
            assert {f[1:] for f in failed} <= {
                ("failed", "flaky", f"ValueError: bad input {i}") for i in bad
            }
        else:
            assert acked == list(range(n)) and failed == []
        assert sorted(e[2] for e in error_lines(runner)) == sorted(
            f"ValueError: bad input {i}" for i in bad
        )
        stats = counters(runner)
        assert sum(stats[("flaky", i)]["failed"] for i in range(2)) == len(bad)
        assert sum(stats[("flaky", i)]["acked"] for i in range(2)) == n - len(bad)
        outcomes[path] = {
            "seen": [f.seen for f in flaky],
            "acked": acked,
            "failed": failed,
            "errors": error_lines(runner),
            "tracebacks": user_frames(runner),
            "counters": stats,
        }
    agree(outcomes)


def user_frames(runner: InProcessRunner) -> list[list[str]]:
    """The frames of this file in each reported traceback (the runtime's own frames
    differ: the compiled loop has no Python frame)."""
    out = []
    for _, _, text in runner.errors:
        out.append([line for line in text.splitlines() if __file__ in line or "bad input" in line])
    return out


def test_a_process_that_raises_fails_its_input_and_later_tuples_still_run() -> None:
    flaky_run(30, frozenset({0, 5, 6, 17, 29}), ackers=True)
    flaky_run(30, frozenset({3, 4, 11}), ackers=False)
    compiled_side_ran()


def test_generated_failures_agree() -> None:
    @FEW
    @given(
        st.integers(1, 25).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1))))
    )
    def check(case: tuple[int, set[int]]) -> None:
        n, bad = case
        flaky_run(n, frozenset(bad), ackers=True)

    check()
    compiled_side_ran()


def test_within_one_group_the_tuples_after_a_failure_still_run() -> None:
    """One received group handed to the task: the raising tuple is failed and reported,
    the others acked, in order."""
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(0))
    builder.set_bolt("flaky", Flaky(frozenset({1, 3})), 1).shuffle_grouping("feed")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology, {"topology.acker.executors": 0})
        task = runner.task("flaky")
        assert isinstance(task, BoltTask)
        source = task.source(runner.assignment.component_tasks["feed"][0], "default")
        task.run_group(source, [[0], [1], [2], [3], [4]], None)
        task.run_group(source, [[5]], [None])
        collector = task.collector
        assert runner.instance("flaky").seen == [0, 1, 2, 3, 4, 5]
        assert (collector.acked, collector.failed, task.stats.executed) == (4, 2, 6)
        assert collector.current is None
        assert [e[2] for e in error_lines(runner)] == [
            "ValueError: bad input 1",
            "ValueError: bad input 3",
        ]
        outcomes[path] = {"counters": counters(runner), "errors": error_lines(runner)}
    agree(outcomes)
    compiled_side_ran()


class Pairs(Bolt):
    """Joins inputs two by two: emits ``[a, b]`` anchored to both, then acks them."""

    outputs = ["a", "b"]

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


class AfterJoin(BasicBolt):
    """Emits the pair's sum (to one task, or to every task of ``all``); raises for the
    pairs holding a bad input."""

    outputs = {"default": ["sum"], "every": ["sum"]}

    def __init__(self, bad: frozenset[int]) -> None:
        self.bad = bad

    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[list[int]] = []

    def process(self, tup: Tuple) -> None:
        self.seen.append(tup.values)
        self.emit([tup["a"] + tup["b"]])
        self.emit([tup["a"] + tup["b"]], stream="every")
        if self.bad & {tup["a"], tup["b"]}:
            raise RuntimeError(f"bad pair {tup.values}")


def test_a_tuple_in_several_trees_is_acked_and_failed_alike() -> None:
    n, bad = 40, frozenset({7, 22})
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(n))
    builder.set_bolt("pairs", Pairs()).global_grouping("feed")
    builder.set_bolt("after", AfterJoin(bad), 2).shuffle_grouping("pairs")
    builder.set_bolt("sink", Sink(), 2).fields_grouping("after", ["sum"])
    builder.set_bolt("all", Sink(), 2).all_grouping("after", "every")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        drive(runner, settled(runner, "feed", n))
        seen = [pair for a in instances(runner, "after") for pair in a.seen]
        assert len(seen) == n // 2
        partners = {x: set(pair) for pair in seen for x in pair}
        failed_ids = {x for b in bad for x in partners[b]}
        acked, failed = spout_outcome(runner, "feed")
        assert acked == sorted(set(range(n)) - failed_ids)  # both trees of each pair
        assert sorted(f[0] for f in failed) == sorted(failed_ids)
        assert all(f[1:3] == ("failed", "after") for f in failed)
        outcomes[path] = {
            "seen": seen,
            "acked": acked,
            "failed": failed,
            "errors": error_lines(runner),
            "received": received(runner, ["sink", "all"]),
            "counters": counters(runner),
        }
    agree(outcomes)
    compiled_side_ran()


# -- 5. tick tuples and tup[key] ------------------------------------------------------------


def read(tup: Any, key: Any) -> tuple[str, Any]:
    try:
        return ("value", tup[key])
    except Exception as exc:
        return (type(exc).__name__, exc.args)


class Ticked(BasicBolt):
    """Records, for each input, ``is_tick()``, ``tup[0]``, ``tup[-1]``, ``tup[field]``,
    ``tup["missing"]`` and an index out of range; emits ``["tick"]`` on each tick (its
    current input is the untracked tick tuple) and ``[a]`` for the others."""

    outputs = ["w"]

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 1}

    def prepare(self, conf: Any, context: Any) -> None:
        self.reads: list[Any] = []

    def process(self, tup: Tuple) -> None:
        field = tup.fields[-1]
        self.reads.append(
            (
                tup.is_tick(),
                tup.stream,
                read(tup, 0),
                read(tup, -1),
                read(tup, field),
                read(tup, "missing"),
                read(tup, 5),
                self._collector.current is tup,
            )
        )
        self.emit(["tick"] if tup.is_tick() else [tup[0]])


class TwoFields(Spout):
    outputs = ["a", "b"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        if self.i < 20:
            self.emit([f"a{self.i}", self.i], msg_id=self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


def test_tick_tuples_and_reads_by_key_agree() -> None:
    builder = TopologyBuilder()
    builder.set_spout("feed", TwoFields())
    builder.set_bolt("ticked", Ticked()).shuffle_grouping("feed")
    builder.set_bolt("sink", Sink()).shuffle_grouping("ticked")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        bolt = runner.instance("ticked")
        task = runner.task("ticked")

        def done(bolt: Any = bolt, task: Any = task, runner: InProcessRunner = runner) -> bool:
            return settled(runner, "feed", 20)() and task.stats.ticks >= 3

        runner.activate()
        for _ in range(2000):
            if done():
                break
            runner.clock.advance(0.05)  # type: ignore[attr-defined]
            runner.turn()
        assert done()
        runner.turn(5)
        ticks = [r for r in bolt.reads if r[0]]
        inputs = [r for r in bolt.reads if not r[0]]
        assert len(ticks) == task.stats.ticks and len(inputs) == 20
        missing = "tuple from '__system' on stream '__tick' has no field 'missing' (fields: ["
        for tick in ticks:
            assert tick[1] == TICK_STREAM
            assert tick[2][0] == tick[3][0] == tick[4][0] == "value"
            assert tick[5][0] == "KeyError" and tick[5][1][0].startswith(missing)
            assert tick[6][0] == "IndexError" and tick[7] is True
        for n, tup in enumerate(inputs):
            assert tup[1:5] == ("default", ("value", f"a{n}"), ("value", n), ("value", n))
            assert tup[5] == (
                "KeyError",
                (
                    "tuple from 'feed' on stream 'default' has no field 'missing' "
                    "(fields: ['a', 'b'])",
                ),
            )
            assert tup[6][0] == "IndexError" and tup[7] is True
        acked, failed = spout_outcome(runner, "feed")
        assert acked == list(range(20)) and failed == []
        sink = runner.instance("sink")
        assert [v for _, v in sink.received].count(["tick"]) == len(ticks)
        outcomes[path] = {"reads": repr(bolt.reads), "errors": runner.errors}
    agree(outcomes)
    compiled_side_ran()


KEYS = st.one_of(
    st.integers(-4, 4),
    st.sampled_from(["a", "b", "missing", "", "é"]),
    st.text(max_size=3),
    st.none(),
    st.floats(allow_nan=False),
    st.slices(4),
)


def test_reads_by_key_match_the_pure_python_storage() -> None:
    """``tup[key]`` and ``is_tick()`` of ``topology.Tuple`` (compiled storage where built)
    and of ``acker.fastpath.PyTupleBase`` (its pure twin), on the same source."""
    sources = [
        TupleSource("feed", 4, "default", ("a", "b")),
        TupleSource("feed", 4, "other", ()),
        TupleSource(SYSTEM_COMPONENT, -1, TICK_STREAM, ("freq",)),
    ]

    @settings(max_examples=150, deadline=None)
    @given(st.sampled_from(sources), st.lists(st.integers() | st.text(), max_size=3), KEYS)
    def check(source: TupleSource, values: list[Any], key: Any) -> None:
        ours, twin = Tuple(values, source), PyTupleBase(values, source)
        assert ours.is_tick() == twin.is_tick() == (source.stream == TICK_STREAM)
        assert read(ours, key) == read(twin, key)

    check()


# -- 6. emits outside process, and through the class --------------------------------------


class Outside(BasicBolt):
    """Emits ``["prepared"]`` in ``prepare`` (no input current), ``["tick"]`` on ticks, and
    ``[i]`` for each input ``i`` through the class (``BasicBolt.emit(self, ...)``)."""

    outputs = {"default": ["w"], "unheard": ["w"]}

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 1}

    def prepare(self, conf: Any, context: Any) -> None:
        self.returned: list[Any] = [("prepare", self.emit(["prepared"]))]

    def process(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.returned.append(("tick", self.emit(["tick"])))
        else:
            self.returned.append(("class", BasicBolt.emit(self, [tup[0]])))
            self.returned.append(("class unheard", BasicBolt.emit(self, [1], None, "unheard")))


class FailAll(Sink):
    """Records and fails every tuple: a spout learns of it only through anchored emits."""

    def execute(self, tup: Tuple) -> None:
        self.received.append((tup.stream, tup.values))
        self.fail(tup)


def test_emits_outside_process_and_through_the_class_agree() -> None:
    n = 12
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(n))
    builder.set_bolt("outside", Outside()).shuffle_grouping("feed")
    builder.set_bolt("sink", FailAll(), 2).shuffle_grouping("outside")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        bolt = runner.instance("outside")
        task = runner.task("outside")
        sinks = instances(runner, "sink")
        runner.activate()
        for _ in range(2000):
            if settled(runner, "feed", n)() and task.stats.ticks >= 2:
                break
            runner.clock.advance(0.05)  # type: ignore[attr-defined]
            runner.turn()
        runner.turn(5)
        got = sorted((v for s in sinks for _, v in s.received), key=repr)
        ticks = task.stats.ticks
        assert got == sorted(
            [["prepared"], *[["tick"]] * ticks, *[[i] for i in range(n)]], key=repr
        )
        acked, failed = spout_outcome(runner, "feed")
        # BasicBolt.emit(self, ...) anchored each [i] to its input: the sink's fail failed it
        assert acked == [] and sorted(f[0] for f in failed) == list(range(n))
        assert all(f[1:3] == ("failed", "sink") for f in failed)
        assert runner.errors == []
        outcomes[path] = {
            "returned": bolt.returned,
            "received": received(runner, ["sink"]),
            "failed": failed,
            "counters": counters(runner),
        }
    agree(outcomes)
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
    builder.set_spout("feed", Recorder(0))
    builder.set_bolt("stops", Stops()).shuffle_grouping("feed")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology, {"topology.acker.executors": 0})
        task = runner.task("stops")
        assert isinstance(task, BoltTask)
        source = task.source(runner.assignment.component_tasks["feed"][0], "default")
        with pytest.raises(KeyboardInterrupt, match="stop"):
            task.run_group(source, [[0], [1], [2], [3]], None)
        assert runner.instance("stops").seen == [0, 1, 2]
        assert (task.collector.acked, task.collector.failed, runner.errors) == (2, 0, [])
        outcomes[path] = counters(runner)
    agree(outcomes)
    compiled_side_ran()


def test_a_grouping_that_raises_counts_the_emit_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """An emit is counted before its grouping runs (``_Collector._chosen``): a grouping that
    raises leaves the same counters on both paths, and the input fails."""

    def choose(self: ShuffleGrouping, values: Any) -> list[int]:
        raise ValueError("the grouping broke")

    class Echo(BasicBolt):
        outputs = ["i"]

        def process(self, tup: Tuple) -> None:
            self.emit([tup[0]])

    monkeypatch.setattr(ShuffleGrouping, "choose_tasks", choose)
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(0))
    builder.set_bolt("echo", Echo()).fields_grouping("feed", ["i"])
    builder.set_bolt("sink", Sink(), 2).shuffle_grouping("echo")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        task = runner.task("echo")
        assert isinstance(task, BoltTask)
        source = task.source(runner.assignment.component_tasks["feed"][0], "default")
        task.run_group(source, [[0], [1]], None)
        assert task.collector.failed == 2
        assert task.collector.routes["default"].emitted == 2
        outcomes[path] = (counters(runner), error_lines(runner))
    agree(outcomes)
    compiled_side_ran()


# -- the streams API's BasicBolts, and streams the compiled emit leaves to Python --------


def test_the_streams_api_word_count_agrees() -> None:
    """``flat_map`` and ``count_by_key`` run as BasicBolts (fused or not)."""
    for fusion in (True, False):
        sentences = [f"a b{i % 3} c" for i in range(30)] + ["naïve a", ""]
        sb = StreamBuilder(fusion=fusion)
        (
            sb.new_stream(Items(sentences), parallelism=2, name="lines")
            .flat_map(str.split)
            .key_by(lambda w: w)
            .count_by_key()
            .to(Collect(), 2, name="collect")
        )
        topology = sb.build()
        outcomes = {}
        for path in paths():
            runner = build(path, topology, {"topology.workers": 2})
            collects = instances(runner, "collect")
            words = sum(len(x.split()) for x in sentences)

            def done(
                collects: list[Any] = collects,
                runner: InProcessRunner = runner,
                words: int = words,
                n: int = len(sentences),
            ) -> bool:
                rows = sum(len(c.rows) for c in collects)
                return rows == words and settled(runner, "lines", n)()

            drive(runner, done)
            finals: dict[str, int] = {}
            for word, count in (row for c in collects for row in c.rows):
                finals[word] = max(finals.get(word, 0), count)
            assert finals == Counter(w for x in sentences for w in x.split())
            acked, failed = spout_outcome(runner, "lines")
            assert acked == list(range(len(sentences))) and failed == []
            assert runner.errors == []
            outcomes[path] = {
                "rows": [c.rows for c in collects],
                "counters": counters(runner),
            }
        agree(outcomes)
    compiled_side_ran()


class DirectDefault(BasicBolt):
    """Its default stream is direct (or, with ``other``, it has none): ``emit`` without a
    stream must raise either way, and ``emit_direct`` must work."""

    def __init__(self, default: bool) -> None:
        self.default = default

    def declare_output_fields(self, declarer: Any) -> None:
        if self.default:
            declarer.declare(["w"], direct=True)
        else:
            declarer.declare(["w"], "other")

    def prepare(self, conf: Any, context: Any) -> None:
        self.target = context.component_tasks("sink")[-1]
        self.results: list[Any] = []

    def process(self, tup: Tuple) -> None:
        for call in (
            lambda: self.emit([tup[0]]),
            lambda: self.emit([tup[0]], anchors=tup),
            lambda: self.emit_direct(self.target, [tup[0]]),
            lambda: self.emit([tup[0]], stream="other"),
        ):
            try:
                self.results.append(("returned", call()))
            except Exception as exc:
                self.results.append((type(exc).__name__, str(exc)))


@pytest.mark.parametrize("default", [True, False], ids=["direct-default", "no-default"])
def test_a_bolt_whose_default_stream_is_direct_or_missing(default: bool) -> None:
    n = 6
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(n))
    builder.set_bolt("bolt", DirectDefault(default)).shuffle_grouping("feed")
    sink = builder.set_bolt("sink", Sink(), 2)
    if default:
        sink.direct_grouping("bolt")
    else:
        sink.shuffle_grouping("bolt", "other")
    topology = builder.create_topology()
    outcomes = {}
    for path in paths():
        runner = build(path, topology)
        bolt = runner.instance("bolt")

        def done(runner: InProcessRunner = runner, bolt: Any = bolt) -> bool:
            return settled(runner, "feed", n)() and len(bolt.results) == 4 * n

        drive(runner, done)
        first = bolt.results[:4]
        if default:
            assert first[0][0] == first[1][0] == "EmitError" and "use emit_direct" in first[0][1]
            assert first[2] == ("returned", [runner.assignment.component_tasks["sink"][-1]])
            assert first[3][0] == "EmitError" and "undeclared stream 'other'" in first[3][1]
        else:
            assert first[0][0] == "EmitError" and "undeclared stream 'default'" in first[0][1]
            assert first[2][0] == "EmitError" and first[3][0] == "returned"
        acked, failed = spout_outcome(runner, "feed")
        assert acked == list(range(n)) and failed == []
        outcomes[path] = {"results": bolt.results, "counters": counters(runner)}
    agree(outcomes)
    compiled_side_ran()


@pytest.mark.parametrize(
    "conf",
    [{"topology.testing.always.try.serialize": True}, {"topology.debug": True}],
    ids=["serialize", "debug"],
)
def test_values_checked_everywhere_run_pure_python(
    conf: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Where every emit's values are checked (or shown), the task runs pure Python on both
    sides, and the unheard stream's unencodable value is refused too."""
    builder = TopologyBuilder()
    builder.set_spout("feed", Recorder(2))
    builder.set_bolt("relay", Relay([{1}, "ok"], "unheard")).shuffle_grouping("feed")
    topology = builder.create_topology()
    with on_path("compiled"):
        runner = InProcessRunner(topology, {"topology.workers": 1, **conf})
    assert runner.task("relay").collector.basic is None  # type: ignore[union-attr]
    relay = runner.instance("relay")
    drive(runner, lambda: len(relay.results) == 2 and settled(runner, "feed", 2)())
    assert relay.results[0][0] == "EmitError" and "msgpack cannot encode" in relay.results[0][1]
    assert relay.results[1] == ("sent", [])
