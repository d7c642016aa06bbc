"""Generated comparisons of the runtime's compiled hot path with its pure-Python reference
(shared by ``test_spout_path.py`` and ``test_basic_path.py``).

:func:`compare` plays one script on a topology on both paths (pure: ``spout_path``,
``basic_path`` and ``acker.fastpath`` with ``COMPILED`` False) and asserts their traces are
equal: emit results, what each bolt received (with edge id and root), acks and fails with
their times, pending trees per turn, every outbox drain, counters, latencies, errors.  The
pure code's ``getrandbits`` draws from the compiled generator, seeded alike, so roots,
edges and the ackers' inits match to the bit.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import acker.anchoring as anchoring_module
import acker.envelope as envelope_module
import acker.spout as spout_module
from acker import ACK_ACK, ACK_INIT, AckOutbox, fastpath
from topology import Bolt, CustomGrouping, Tuple
from topology.runtime import basic_path, spout_path
from topology.runtime.inprocess import InProcessRunner
from topology.spec import Topology

#: The two paths, the reference first.
PATHS = ("pure", "compiled")
COMPILED = spout_path.COMPILED and basic_path.COMPILED
NOT_BUILT = (
    "topology.runtime._spout / _basic are not in use (not built, or SPARKSTORM_PURE_PYTHON "
    "is set): only the pure-Python side ran"
)
#: Hypothesis: few examples (each runs whole topologies twice), no deadline (the first
#: example of a run builds more than the others).
FEW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEED = 1234


def ci_requires_the_build(*modules: Any) -> None:
    """.ci/run sets SPARKSTORM_REQUIRE_SPEEDUPS: there a missing build is a failure."""
    for module in modules:
        if os.environ.get("SPARKSTORM_REQUIRE_SPEEDUPS"):
            assert module.COMPILED, f"{module.__name__}'s C module did not build"
        if os.environ.get("SPARKSTORM_PURE_PYTHON", "") not in ("", "0"):
            assert not module.COMPILED


def paths() -> tuple[str, ...]:
    return PATHS if COMPILED else PATHS[:1]


def compiled_side_ran() -> None:
    """Skip (saying why) a test whose compiled side could not run."""
    if not COMPILED:
        pytest.skip(NOT_BUILT)


def _draw_bits() -> Callable[[int], int]:
    """``getrandbits`` drawing from the compiled generator (where it is built)."""
    if not fastpath.COMPILED:
        return random.Random(SEED).getrandbits
    holder = fastpath.TupleBase([], None, 0, 0)  # (one tree: root 0)
    return lambda k: fastpath.edge_meta(holder)[0] >> (64 - k)


@contextmanager
def on_path(path: str) -> Iterator[None]:
    """Tasks built inside take ``path`` ("compiled": as installed; "pure": all Python),
    with ids from one seeded generator."""
    with pytest.MonkeyPatch.context() as patch:
        draw = _draw_bits()
        for module in (envelope_module, spout_module, anchoring_module):
            patch.setattr(module, "getrandbits", draw)
        fastpath.seed_edges(SEED)
        if path == "pure":
            for module in (spout_path, basic_path, fastpath):
                patch.setattr(module, "COMPILED", False)
        yield


def instances(runner: InProcessRunner, component: str) -> list[Any]:
    """The user's objects of every task of ``component``, by task index."""
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


def fast_emits(component: Any) -> int:
    """Emits of a task (its user object) the compiled emit took without the Python one."""
    return sum(f.emitted for f in component._collector.fast_routes)


def call_result(call: Callable[[], Any]) -> tuple[str, Any]:
    """("returned", what ``call`` returned) or (the exception's type, its message)."""
    try:
        return ("returned", call())
    except Exception as exc:
        return (type(exc).__name__, str(exc))


class Recording:
    """A runner's ``on_turn`` hook (pending trees after each turn), and outbox drains."""

    def __init__(self) -> None:
        self.runner: InProcessRunner | None = None
        self.turns: list[Any] = []
        self.drained: list[str] = []

    def __call__(self, worker: int, now: float) -> None:
        assert self.runner is not None
        pending = [
            (t.task_id, None if t.pending is None else len(t.pending))
            for w in self.runner.workers.values()
            for t in w.spouts
        ]
        self.turns.append((worker, now, pending))


def run_traced(
    path: str,
    topology: Topology,
    conf: dict[str, Any],
    play: Callable[[InProcessRunner], dict[str, Any]],
) -> dict[str, Any]:
    """``play(runner)`` on a runner of ``topology`` built on ``path``; its result and the
    recording's (pending trees per turn, outbox drains, counters, errors)."""
    recording = Recording()
    with on_path(path), pytest.MonkeyPatch.context() as patch:
        real = AckOutbox.drain

        def drain(outbox: AckOutbox) -> list[Any]:
            out = real(outbox)
            ackers, n = outbox.ackers, len(outbox.ackers)
            [local] = [
                w.acking.ackers for w in runner.workers.values() if w.acking.outbox is outbox
            ]
            for acker, stream, values in out:  # a root goes to an acker of this worker if any
                for root, _, _ in values[0] if stream == ACK_INIT else ():
                    assert 0 < root < 2**64 and acker == ackers[root % n]
                    assert acker in local or not local
            if out:  # (combined acks in root order: the order of folds does not matter)
                sorted_acks = [v if s != ACK_ACK else sorted(v[0].items()) for _, s, v in out]
                recording.drained.append(
                    repr([(a, s, v) for (a, s, _), v in zip(out, sorted_acks)])
                )
            return out

        patch.setattr(AckOutbox, "drain", drain)
        runner = InProcessRunner(topology, {"topology.workers": 1, **conf}, on_turn=recording)
        recording.runner = runner
        if path == "pure":
            for worker in runner.workers.values():
                for task in worker.tasks():
                    assert getattr(task, "compiled", None) is None
                    assert getattr(task.collector, "basic", None) is None
        trace = play(runner)
    trace.update(
        turns=recording.turns,
        drained=recording.drained,
        counters=counters(runner),
        latencies=[
            (t.task_id, t.pending.completed, t.pending.latency_sum, t.latencies.counts)
            for w in runner.workers.values()
            for t in w.spouts
            if t.pending is not None
        ],
        errors=[(c, t, text.splitlines()[-1]) for c, t, text in runner.errors],
    )
    return trace


def compare(
    topology: Topology,
    conf: dict[str, Any],
    play: Callable[[InProcessRunner, str], dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """The traces of ``play`` on each path (``play(runner, path)``), asserted equal."""
    traces = {
        path: run_traced(path, topology, conf, lambda runner, path=path: play(runner, path))
        for path in paths()
    }
    if "compiled" in traces:
        pure, compiled = traces["pure"], traces["compiled"]
        for key in pure:
            assert compiled[key] == pure[key], key
    return traces


# -- the components -----------------------------------------------------------------------


class Sink(Bolt):
    """Records what it receives (stream, values, edge id, root); acks it, fails it (the
    repr of its first value in ``bad``) or holds it until :meth:`release`."""

    def __init__(self, hold: bool = False, bad: frozenset[Any] = frozenset()) -> None:
        self.hold = hold
        self.bad = bad

    def prepare(self, conf: Any, context: Any) -> None:
        self.received: list[tuple[Any, ...]] = []
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.received.append((tup.stream, tup.values, tup.id, tup.anchors))
        if self.hold:
            self.held.append(tup)
        elif tup.values and repr(tup.values[0]) in self.bad:
            self.fail(tup)
        else:
            self.ack(tup)

    def release(self, count: int | None = None) -> None:
        """Ack the ``count`` oldest held tuples (all by default)."""
        done = self.held[:count] if count is not None else self.held[:]
        del self.held[: len(done)]
        for tup in done:
            self.ack(tup)


def received(runner: InProcessRunner, components: list[str]) -> dict[tuple[str, int], str]:
    """What each task of ``components`` received, in order (repr: NaN equals NaN)."""
    return {
        (c, i): repr(sink.received)
        for c in components
        for i, sink in enumerate(instances(runner, c))
    }


class ByWord(CustomGrouping):
    """``one``: the first task; ``every``: all of them; anything else: nobody."""

    def choose_tasks(self, values: Any) -> list[int]:
        tasks = list(self.target_tasks)
        return {"one": tasks[:1], "every": tasks}.get(values[0] if values else None, [])


class Opaque:
    """A value msgpack cannot encode."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Opaque

    def __hash__(self) -> int:
        return 7

    def __repr__(self) -> str:
        return "Opaque()"


class StrStream(str):
    pass


class ListValues(list[Any]):
    pass


# -- values ---------------------------------------------------------------------------------

INT_EDGES = [0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 2**100, -(2**70)]
TEXT_EDGES = ["", "word", "naïve", "日本語", "\ud800", "a\udfffb", "emoji 🐄", "\x00", "\x7f"]
FLOAT_EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, 1e308]
#: Values of the types the compiled emits send themselves (and their edges).
PLAIN = st.one_of(
    st.sampled_from(["one", "every", "hot", "k", "key"]),
    st.integers(-(2**63), 2**64 - 1),
    st.text(st.characters(max_codepoint=127), max_size=4),
    st.sampled_from(FLOAT_EDGES),
    st.booleans(),
    st.none(),
    st.binary(max_size=4),
)
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
    st.just(bytearray(b"ba")),
)
#: Any value: plain, nested, or one msgpack cannot encode.
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
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


def plain(value: Any) -> bool:
    """A value the compiled emit sends itself: ASCII str, int within 64 bits, float, bool,
    None or bytes (exact types)."""
    t = type(value)
    if t is str:
        return value.isascii()
    if t is int:
        return -(2**63) <= value < 2**64
    return t in (float, bool, type(None), bytes)


def _gen() -> Iterator[str]:
    yield "g"


#: Values that are not a list (each refused or converted by the Python emit).
NOT_A_LIST = st.sampled_from(["tuple", "str", "bytes", "dict", "None", "int", "subclass", "gen"])


def not_a_list(kind: str, arity: int) -> Any:
    return {
        "tuple": lambda: tuple(["t"] * arity),
        "str": lambda: "abc",
        "bytes": lambda: b"abc",
        "dict": lambda: {"w": 1},
        "None": lambda: None,
        "int": lambda: 5,
        "subclass": lambda: ListValues(["s"] * arity),
        "gen": _gen,
    }[kind]()


# -- generated topologies -------------------------------------------------------------------

#: How a stream's subscriber groups (the kinds a compiled emit takes alone, and custom).
GROUPINGS = ["shuffle", "fields", "all", "global", "local", "partial", "none", "custom"]
KEYLESS = ["shuffle", "all", "global", "local", "none", "custom"]


@st.composite
def subscribers(draw: Any, fields: list[str], some: bool = False) -> list[tuple[str, int, str]]:
    """0-2 subscribers (1-2 with ``some``) of a stream of ``fields``: (grouping,
    parallelism, behaviour)."""
    kinds = GROUPINGS if fields else KEYLESS
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(kinds),
                st.integers(1, 3),
                st.sampled_from(["ack", "ack", "fail", "hold"]),
            ),
            min_size=int(some),
            max_size=2,
        )
    )


def subscribe(declarer: Any, grouping: str, source: str, stream: str, fields: list[str]) -> None:
    """``declarer`` subscribes to ``source``'s ``stream`` with ``grouping``."""
    if grouping == "shuffle":
        declarer.shuffle_grouping(source, stream)
    elif grouping == "fields":
        declarer.fields_grouping(source, fields[:1] if len(fields) < 2 else fields, stream)
    elif grouping == "all":
        declarer.all_grouping(source, stream)
    elif grouping == "global":
        declarer.global_grouping(source, stream)
    elif grouping == "local":
        declarer.local_or_shuffle_grouping(source, stream)
    elif grouping == "partial":
        declarer.partial_key_grouping(source, fields[:1], stream)
    elif grouping == "none":
        declarer.none_grouping(source, stream)
    else:
        declarer.custom_grouping(source, ByWord(), stream)


def add_sinks(builder: Any, source: str, streams: dict[str, list[str]], subs: Any) -> list[str]:
    """A :class:`Sink` per subscriber ``subs[stream]`` draws, and one on ``source``'s direct
    ``targeted``; their names."""
    builder.set_bolt("direct", Sink(), 2).direct_grouping(source, "targeted")
    sinks = ["direct"]
    for stream, fields in streams.items():
        for n, (grouping, parallelism, behaviour) in enumerate(subs[stream]):
            bad = frozenset(["0", "'k'", "'one'"] if behaviour == "fail" else [])
            sink = Sink(hold=behaviour == "hold", bad=bad)
            sinks.append(f"{stream}-{n}")
            subscribe(
                builder.set_bolt(sinks[-1], sink, parallelism), grouping, source, stream, fields
            )
    return sinks


def fast_stream(subs: list[tuple[str, int, str]], direct: bool = False) -> bool:
    """Whether a compiled emit takes a stream with ``subs`` itself (``fast_route``)."""
    return not direct and (not subs or (len(subs) == 1 and subs[0][0] != "custom"))


#: Layouts: (ackers: None = one per worker, 0 = none, n; workers).
LAYOUTS = st.sampled_from([(None, 1), (0, 1), (None, 2), (1, 2), (3, 2), (0, 2)])
