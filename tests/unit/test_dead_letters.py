"""Poison records on the in-process runner (real executors and frames, a simulated clock):
every kind of component gives up on an input that always raises and sends it to the
dead-letter stream exactly once, counts every clean input exactly, and never replays or
rolls back for it — in acked, unacked and checkpointed topologies (docs/ERRORS.md)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from grouping import GroupingSpec
from tests.unit.test_stateful_runtime import CONF as CHECKPOINTED
from tests.unit.test_stateful_runtime import Words, coordinator_of
from topology import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_STREAM,
    AsyncBolt,
    BasicBolt,
    Bolt,
    DataError,
    Spout,
    StatefulBolt,
    StreamBuilder,
    TopologyBuilder,
    Tuple,
    Window,
    WindowedBolt,
)
from topology.components import Stream
from topology.runtime.inprocess import InProcessRunner
from topology.spec import ComponentSpec, InputSpec
from topology.testing import FeederSpout
from topology.windows.bolt import Count as WindowCount

pytestmark = pytest.mark.timeout(60)

LIMIT = 200
#: Every tenth number from 3 on raises, whatever the attempt.
POISON = [n for n in range(LIMIT) if n % 10 == 3]
CLEAN = [n for n in range(LIMIT) if n % 10 != 3]


def check(n: int) -> int:
    if n % 10 == 3:
        raise ValueError(f"poison {n}")
    return n


class Keep(Bolt):
    """Keeps what it receives (by stream) and acks it."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.got: list[list[Any]] = []

    def execute(self, tup: Tuple) -> None:
        if not tup.is_tick():
            self.got.append(list(tup.values))
        self.ack(tup)


class PoisonBasic(BasicBolt):
    outputs = ["n"]

    def process(self, tup: Tuple) -> None:
        self.emit([check(tup[0])])


class PoisonBolt(Bolt):
    outputs = ["n"]

    def execute(self, tup: Tuple) -> None:
        self.emit([check(tup[0])], tup)
        self.ack(tup)


class PoisonBatch(Bolt):
    """All or nothing per batch: checks every tuple before it emits or acks one."""

    outputs = ["n"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        for tup in tuples:
            check(tup[0])
        for tup in tuples:
            self.emit([tup[0]], tup)
            self.ack(tup)


class PoisonAsync(AsyncBolt):
    outputs = ["n"]
    capacity = 8
    timeout_secs = 3600.0  # (topology time runs fast here: no call may time out)

    async def process_async(self, tup: Tuple) -> Any:
        await asyncio.sleep(0)
        return [check(tup[0])]


class PoisonWindow(WindowedBolt):
    """Emits each window of 5 (count); raises when the window holds a poison number."""

    outputs = ["n"]

    def execute(self, window: Window) -> None:
        for tup in window.new:
            check(tup[0])
        for tup in window.new:
            self.emit([tup[0]])


def run_acked(
    bolt: Bolt, conf: dict[str, Any], advance: float = 0.05
) -> tuple[InProcessRunner, Keep, Keep]:
    """numbers -> work -> out, and every dead letter -> dlq; run until the spout heard of
    every tree (or, without ackers, until everything arrived)."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    builder.set_bolt("work", bolt).shuffle_grouping("numbers")
    builder.set_bolt("out", Keep()).shuffle_grouping("work")
    builder.set_bolt("dlq", Keep()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1, **conf})
    runner.activate()
    out, dlq, spout = runner.instance("out"), runner.instance("dlq"), runner.task("numbers")
    if conf.get("topology.acker.executors") == 0:
        done = lambda: len(out.got) + len(dlq.got) >= LIMIT  # noqa: E731
    else:
        done = lambda: spout.stats.acked + spout.stats.failed == LIMIT  # noqa: E731
    deadline = time.monotonic() + 30
    while not done():  # (an async bolt's calls finish on their own thread: turns wait)
        assert time.monotonic() < deadline, "not done in 30 s"
        runner.clock.advance(advance)  # type: ignore[attr-defined]
        runner.turn()
        if isinstance(bolt, AsyncBolt):
            time.sleep(0.0005)
    return runner, out, dlq


def letters(dlq: Keep) -> list[dict[str, Any]]:
    return [dict(zip(DEAD_LETTER_FIELDS, values)) for values in dlq.got]


KINDS: dict[str, Callable[[], Bolt]] = {
    "basic": PoisonBasic,
    "bolt": PoisonBolt,
    "batch": PoisonBatch,
    "async": PoisonAsync,
}
ACKING = {"acked": {}, "unacked": {"topology.acker.executors": 0}}


@pytest.mark.parametrize("acking", list(ACKING))
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_poison_input_is_dead_lettered_once_and_each_clean_one_counted(
    kind: str, acking: str
) -> None:
    runner, out, dlq = run_acked(KINDS[kind](), ACKING[acking])
    assert sorted(n for [n] in out.got) == CLEAN
    found = letters(dlq)
    assert sorted(letter["values"][0] for letter in found) == POISON
    for letter in found:
        assert (letter["component"], letter["source"], letter["stream"]) == (
            "work",
            "numbers",
            "default",
        )
        assert letter["attempts"] == 4 and letter["error"].startswith("ValueError: poison")
        assert "Traceback" in letter["traceback"]
    spout = runner.task("numbers")
    if acking == "acked":  # every tree completes: none failed, none replayed
        assert (spout.stats.acked, spout.stats.failed) == (LIMIT, 0)
    (worker,) = runner.status()
    (work,) = [t for t in worker["tasks"].values() if t["component"] == "work"]
    assert work["emitted"][DEAD_LETTER_STREAM] == len(POISON)
    retried = work["windows"][":all-time"]["retried"]
    if kind == "batch":  # a batch that raised is tried again tuple by tuple
        assert retried >= 3 * len(POISON)
    else:
        assert retried == 3 * len(POISON)
    assert runner.errors == []  # heard by the dlq bolt: nothing to report


def test_the_compiled_and_the_pure_basic_loop_dead_letter_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from topology.runtime import basic_path

    compiled = sorted(map(str, run_acked(PoisonBasic(), {})[2].got))
    monkeypatch.setattr(basic_path, "COMPILED", False)
    pure = sorted(map(str, run_acked(PoisonBasic(), {})[2].got))

    def without_time(rows: list[str]) -> list[str]:
        return [row.rsplit(",", 1)[0] for row in rows]

    assert without_time(compiled) == without_time(pure) and len(pure) == len(POISON)


def test_a_windowed_bolt_dead_letters_the_new_tuples_of_a_window_that_raises() -> None:
    bolt = PoisonWindow().with_tumbling_window(count=WindowCount(5))
    runner, out, dlq = run_acked(bolt, {})
    bad_windows = {n // 5 for n in POISON}
    assert sorted(n for [n] in out.got) == [n for n in range(LIMIT) if n // 5 not in bad_windows]
    dead = sorted(letter["values"][0] for letter in letters(dlq))
    assert dead == [n for n in range(LIMIT) if n // 5 in bad_windows]
    assert {letter["attempts"] for letter in letters(dlq)} == {4}  # fired 4 times, at once
    assert runner.task("numbers").stats.failed == 0


class DataWindow(WindowedBolt):
    """Raises a data error on a window holding a poison number."""

    outputs = ["n"]

    def execute(self, window: Window) -> None:
        if any(t[0] % 10 == 3 for t in window.new):
            raise DataError("no such number")


def test_a_window_that_raises_a_data_error_is_not_fired_again() -> None:
    runner, out, dlq = run_acked(DataWindow().with_tumbling_window(count=WindowCount(5)), {})
    assert letters(dlq) and {d["attempts"] for d in letters(dlq)} == {1}


def test_a_stream_operator_that_raises_dead_letters_its_element() -> None:
    sb = StreamBuilder()
    numbers = sb.new_stream(FeederSpout(["n"], [[n] for n in range(LIMIT)]), name="numbers")
    numbers.map(check).filter(lambda n: n >= 0).to(Keep(), name="out")
    topology = sb.build()
    assert len(topology.components) == 2  # numbers (map+filter chained to it), out
    builder_dlq = Keep()
    inputs = [
        InputSpec(c, DEAD_LETTER_STREAM, GroupingSpec("shuffle"))
        for c in topology.components
        if c != "out"
    ]
    topology = topology.with_component(ComponentSpec("dlq", "bolt", builder_dlq, 1, 1, {}, inputs))
    runner = InProcessRunner(topology, {"topology.workers": 1})
    runner.activate()
    spout, dlq = runner.task("numbers"), runner.instance("dlq")
    runner.run_until(lambda: spout.stats.acked == LIMIT, advance=0.05)
    assert sorted(letter["values"][0] for letter in letters(dlq)) == POISON
    assert spout.stats.failed == 0


def test_a_stream_builders_dead_letters_are_kept_through_its_topology_builder() -> None:
    sb = StreamBuilder()
    sb.topology_builder.set_bolt("dlq", Keep()).dead_letters()  # (the components built later too)
    numbers = sb.new_stream(FeederSpout(["n"], [[n] for n in range(LIMIT)]), name="numbers")
    numbers.map(check).to(Keep(), name="out")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1})
    runner.activate()
    spout, dlq = runner.task("numbers"), runner.instance("dlq")
    runner.run_until(lambda: spout.stats.acked == LIMIT, advance=0.05)
    assert sorted(letter["values"][0] for letter in letters(dlq)) == POISON


def test_a_component_added_past_validation_still_acks_what_it_gives_up() -> None:
    """A testing helper's component (``Topology.with_component``) has no dead-letter stream:
    an input its code raised on is reported and acked, never left to time out."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    topology = builder.create_topology()
    inputs = [InputSpec("numbers", "default", GroupingSpec("shuffle"))]
    streams = {"default": Stream(["n"])}
    topology = topology.with_component(
        ComponentSpec("work", "bolt", PoisonBasic(), 1, 1, streams, inputs)
    )
    runner = InProcessRunner(topology, {"topology.workers": 1, "topology.message.timeout.secs": 5})
    runner.activate()
    spout = runner.task("numbers")
    runner.run_until(lambda: spout.stats.acked + spout.stats.failed == LIMIT, advance=0.05)
    assert (spout.stats.acked, spout.stats.failed) == (LIMIT, 0)
    assert len([e for e in runner.errors if e[0] == "work"]) == len(POISON)


class CountWords(StatefulBolt):
    """Counts words; raises on a poison word before it counts it."""

    def execute(self, tup: Tuple) -> None:
        word = tup[0]
        if word.endswith("3"):
            raise ValueError(f"poison {word}")
        self.state.put(word, self.state.get(word, 0) + 1)


WORDS = [f"w{n % 40}" for n in range(2000)]


def checkpointed(bolt: Bolt, conf: dict[str, Any] | None = None) -> InProcessRunner:
    builder = TopologyBuilder()
    builder.set_spout("words", Words(WORDS))
    builder.set_bolt("count", bolt, 3).fields_grouping("words", ["word"])
    builder.set_bolt("dlq", Keep()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), {**CHECKPOINTED, **(conf or {})})
    runner.activate()
    spout = runner.instance("words")
    runner.run_until(lambda: len(spout.acked) == len(WORDS), max_turns=20_000, advance=0.005)
    return runner


def counted(runner: InProcessRunner) -> Counter[str]:
    total: Counter[str] = Counter()
    for i in range(3):
        total.update(dict(runner.instance("count", i).state.items()))
    return total


def test_a_checkpointed_stateful_bolt_dead_letters_without_a_rollback() -> None:
    runner = checkpointed(CountWords())
    assert counted(runner) == Counter(w for w in WORDS if not w.endswith("3"))
    dead = [dict(zip(DEAD_LETTER_FIELDS, v)) for v in runner.instance("dlq").got]
    poison = [w for w in WORDS if w.endswith("3")]
    assert sorted(d["values"][0] for d in dead) == sorted(poison)
    assert coordinator_of(runner).recoveries == 0


def test_with_the_fail_action_a_checkpointed_topology_rolls_back_as_before() -> None:
    conf = {"topology.errors.retries": 0, "topology.errors.action": "fail"}
    builder = TopologyBuilder()
    builder.set_spout("words", Words(["w1", "w3", "w2"]))
    builder.set_bolt("count", CountWords()).shuffle_grouping("words")
    runner = InProcessRunner(builder.create_topology(), {**CHECKPOINTED, **conf})
    runner.activate()
    runner.run_until(lambda: coordinator_of(runner).recoveries >= 2, advance=0.005)
    assert runner.instance("words").acked == []  # w3 replays for ever: nothing completes


class FailsTwice(BasicBolt):
    """Raises on the first two attempts at every multiple of 7, then gets through."""

    outputs = ["n"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.tries: Counter[int] = Counter()

    def process(self, tup: Tuple) -> None:
        n = tup[0]
        self.tries[n] += 1
        if n % 7 == 0 and self.tries[n] <= 2:
            raise ConnectionError("try again")
        self.emit([n])


def test_an_input_that_gets_through_on_a_retry_is_emitted_once_and_not_dead_lettered() -> None:
    runner, out, dlq = run_acked(FailsTwice(), {})
    assert sorted(n for [n] in out.got) == list(range(LIMIT))
    assert dlq.got == []
    tries = runner.instance("work").tries
    assert {n: tries[n] for n in tries if tries[n] > 1} == {n: 3 for n in range(0, LIMIT, 7)}


def test_retries_do_not_hold_the_other_input_up() -> None:
    """With a minute's backoff the poison inputs wait; everything else goes through."""
    conf = {
        "topology.errors.retry.backoff.ms": 60_000,
        "topology.errors.retry.backoff.max.ms": 60_000,
    }
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    builder.set_bolt("work", PoisonBasic()).shuffle_grouping("numbers")
    builder.set_bolt("out", Keep()).shuffle_grouping("work")
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1, **conf})
    runner.activate()
    out = runner.instance("out")
    runner.run_until(lambda: len(out.got) == len(CLEAN), advance=0.01)
    assert len(runner.worker(0).executor.parking) == len(POISON)
    assert runner.worker(0).executor.buffered() >= len(POISON)  # a drain waits for them


class RaisesData(BasicBolt):
    def process(self, tup: Tuple) -> None:
        if tup[0] % 10 == 3:
            raise DataError(f"no such record {tup[0]}")


def test_retries_longer_than_the_message_timeout_never_time_the_tree_out() -> None:
    """Five retries a second apart (more than the 3 s timeout in all; one pause asked to be
    longer than it): each parking restarts the tree's timeout, and a pause ends within
    half of it, so every poison tree completes once, with one dead letter (they timed out
    and were replayed for ever, a dead letter each time)."""
    conf = {
        "topology.message.timeout.secs": 3,
        "topology.errors.retries": 5,
        "topology.errors.retry.backoff.ms": 1000,
        "topology.errors.retry.backoff.max.ms": 5000,
    }
    runner, out, dlq = run_acked(PoisonBasic(), conf)
    spout = runner.task("numbers")
    assert (spout.stats.acked, spout.stats.failed) == (LIMIT, 0)
    assert sorted(d["values"][0] for d in letters(dlq)) == POISON


class SurrogateAsync(PoisonAsync):
    """Raises with a lone surrogate in the message (surrogateescape decoding leaves them);
    its error stream gets ``[text, values]``, which no wire can carry."""

    error_stream = "errors"

    async def process_async(self, tup: Tuple) -> Any:
        if tup[0] % 10 == 3:
            raise ValueError(f"bad name \udcff{tup[0]}")
        return [tup[0]]


def test_a_text_no_wire_carries_never_keeps_an_input_from_its_dead_letter() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    builder.set_bolt("work", SurrogateAsync()).shuffle_grouping("numbers")
    builder.set_bolt("errors", Keep()).shuffle_grouping("work", "errors")
    builder.set_bolt("dlq", Keep()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1})
    runner.activate()
    spout, dlq = runner.task("numbers"), runner.instance("dlq")
    while spout.stats.acked + spout.stats.failed < LIMIT:  # (calls end on their own thread)
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
        time.sleep(0.0005)
    assert (spout.stats.acked, spout.stats.failed) == (LIMIT, 0)
    found = letters(dlq)
    assert sorted(d["values"][0] for d in found) == POISON
    assert all("\\udcff" in d["error"] for d in found)  # escaped


def test_a_data_error_is_dead_lettered_at_once_and_unheard_ones_are_reported() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    builder.set_bolt("work", RaisesData()).shuffle_grouping("numbers")
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1})
    runner.activate()
    spout = runner.task("numbers")
    runner.run_until(lambda: spout.stats.acked == LIMIT)  # no time passes: no retries
    assert spout.stats.failed == 0
    (worker,) = runner.status()
    (work,) = [t for t in worker["tasks"].values() if t["component"] == "work"]
    assert work["emitted"][DEAD_LETTER_STREAM] == len(POISON)
    texts = [text for component, _, text in runner.errors if component == "work"]
    assert len(texts) == len(POISON)
    assert "DataError: no such record 3" in texts[0]
    assert "nothing subscribes to 'work''s dead-letter stream" in texts[0]
    assert "topology.errors.action: fail" in texts[0]


def test_a_tick_that_raises_is_reported_and_never_dead_lettered() -> None:
    class TickBoom(BasicBolt):
        def get_component_configuration(self) -> dict[str, Any]:
            return {"topology.tick.tuple.freq.secs": 1}

        def process(self, tup: Tuple) -> None:
            if tup.is_tick():
                raise RuntimeError("tick")

    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], []))
    builder.set_bolt("work", TickBoom()).shuffle_grouping("numbers")
    builder.set_bolt("dlq", Keep()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1})
    runner.activate()
    runner.run_until(lambda: len(runner.errors) >= 2, advance=0.5)
    assert runner.instance("dlq").got == [] and len(runner.worker(0).executor.parking) == 0


def test_the_fail_action_replays_as_before_after_the_retries() -> None:
    conf = {"topology.errors.action": "fail", "topology.errors.retries": 1}
    runner, out, dlq = run_acked(PoisonBasic(), conf)
    spout = runner.task("numbers")
    assert (spout.stats.acked, spout.stats.failed) == (len(CLEAN), len(POISON))
    assert dlq.got == [] and spout.stats.failed_by == {"failed": len(POISON)}
    (worker,) = runner.status()
    (work,) = [t for t in worker["tasks"].values() if t["component"] == "work"]
    assert work["failed_by"] == {"error": len(POISON)}
    assert work["windows"][":all-time"]["retried"] == len(POISON)


class GivesUp(BasicBolt):
    """Gives up on the poison numbers itself, and emits the others."""

    outputs = ["n"]

    def process(self, tup: Tuple) -> None:
        if tup[0] % 10 == 3:
            self.dead_letter(tup, f"no {tup[0]}")
            return
        self.emit([tup[0]])


def test_a_bolt_that_gives_up_on_an_input_itself_sends_it_once_and_acks_it_once() -> None:
    runner, out, dlq = run_acked(GivesUp(), {})
    assert sorted(n for [n] in out.got) == CLEAN
    found = letters(dlq)
    assert sorted(d["values"][0] for d in found) == POISON
    assert {(d["error"], d["attempts"]) for d in found if d["values"] == [3]} == {("no 3", 1)}
    assert runner.task("work").collector.acked == LIMIT  # each input acked once
    assert runner.task("numbers").stats.failed == 0


def test_status_the_cli_view_and_prometheus_count_dead_letters_per_component() -> None:
    from prometheus_client.parser import text_string_to_metric_families
    from rich.console import Console

    from cli.status_view import bolts_table
    from topology.spec import describe_components
    from topology.stats.prometheus import TopologySnapshot, exposition
    from topology.stats.status_report import build_report

    runner, _, _ = run_acked(PoisonBasic(), {})
    replies = runner.status()
    summary = {"name": "demo", "status": "ACTIVE", "workers": 1, "workers_alive": 1}
    components = describe_components(runner.topology)
    report = build_report(summary, components, replies, window="all")
    bolts = {b["id"]: b for b in report["bolts"]}
    assert (bolts["work"]["dead_lettered"], bolts["work"]["retried"]) == (20, 60)
    assert (bolts["out"]["dead_lettered"], bolts["out"]["retried"]) == (0, 0)
    assert DEAD_LETTER_STREAM in components["work"]["streams"]  # subscribed: listed
    assert DEAD_LETTER_STREAM not in components["dlq"]["streams"]  # nobody takes it
    console = Console(width=200, record=True)
    console.print(bolts_table(report))
    text = console.export_text()
    assert "dead letters" in text and "20 (retried 60)" in text
    exported = exposition(lambda: [TopologySnapshot(report, replies)]).decode()
    samples = {
        (s.name, s.labels["component"]): s.value
        for family in text_string_to_metric_families(exported)
        for s in family.samples
        if "component" in s.labels
    }
    assert samples[("sparkstorm_dead_lettered_total", "work")] == 20
    assert samples[("sparkstorm_retried_total", "work")] == 60


def test_each_component_follows_its_own_policy() -> None:
    """One topology: ``strict`` fails at once (its declarer's configuration), ``lenient``
    retries 5 times (its own configuration) and dead-letters."""

    class Lenient(PoisonBasic):
        def get_component_configuration(self) -> dict[str, Any]:
            return {"topology.errors.retries": 5, "topology.errors.retry.backoff.max.ms": 100}

    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    builder.set_bolt("strict", PoisonBasic()).shuffle_grouping("numbers").add_configurations(
        {"topology.errors.retries": 0, "topology.errors.action": "fail"}
    )
    builder.set_bolt("lenient", Lenient()).shuffle_grouping("numbers")
    builder.set_bolt("dlq", Keep()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1})
    runner.activate()
    spout, dlq = runner.task("numbers"), runner.instance("dlq")
    runner.run_until(lambda: spout.stats.acked + spout.stats.failed == LIMIT, advance=0.05)
    runner.run_until(lambda: len(dlq.got) == len(POISON), advance=0.05)
    assert (spout.stats.acked, spout.stats.failed) == (len(CLEAN), len(POISON))  # strict's
    found = letters(dlq)
    assert {(d["component"], d["attempts"]) for d in found} == {("lenient", 6)}
    assert runner.task("strict").failures.retried == 0


class Broken(BasicBolt):
    """A dead-letter writer that raises on everything."""

    def process(self, tup: Tuple) -> None:
        raise RuntimeError("the dead-letter writer is broken")


def test_a_dead_letter_is_never_dead_lettered_again() -> None:
    """A bolt subscribed to its own dead letters that raises on every one: each poison
    input is dropped once there, reported, and every tree completes (no loop)."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[n] for n in range(LIMIT)]))
    builder.set_bolt("work", PoisonBasic()).shuffle_grouping("numbers")
    builder.set_bolt("dlq", Broken()).shuffle_grouping("work", DEAD_LETTER_STREAM).shuffle_grouping(
        "dlq", DEAD_LETTER_STREAM
    )
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1})
    runner.activate()
    spout = runner.task("numbers")
    runner.run_until(lambda: spout.stats.acked == LIMIT, advance=0.05)
    runner.run_until(lambda: not runner.worker(0).executor.parking, advance=0.05)
    (worker,) = runner.status()
    (dlq,) = [t for t in worker["tasks"].values() if t["component"] == "dlq"]
    assert dlq["emitted"].get(DEAD_LETTER_STREAM, 0) == 0 and spout.stats.failed == 0
    texts = [text for component, _, text in runner.errors if component == "dlq"]
    assert len(texts) == len(POISON) and "never dead-lettered again" in texts[0]


class Endless(Spout):
    """Emits a number a call, for ever."""

    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.emit([self.i], msg_id=self.i)
        self.i += 1


class Down(BasicBolt):
    def process(self, tup: Tuple) -> None:
        raise ConnectionRefusedError("the service is down")


@pytest.mark.parametrize("acking", list(ACKING))
def test_a_flood_of_failures_parks_a_bounded_number_of_inputs(acking: str) -> None:
    """Every input fails and waits a second for its retry: the spout is held back at the
    receive buffer's size of parked inputs (not millions), and goes on as they drain."""
    limit = 500
    builder = TopologyBuilder()
    builder.set_spout("numbers", Endless())
    builder.set_bolt("work", Down()).shuffle_grouping("numbers")
    conf = {
        "topology.workers": 1,
        "topology.executor.receive.buffer.size": limit,
        "topology.errors.retries": 1,
        "topology.errors.retry.backoff.ms": 1000,
        **ACKING[acking],
    }
    runner = InProcessRunner(builder.create_topology(), conf)
    runner.activate()
    executor, spout = runner.worker(0).executor, runner.instance("numbers")
    peak = 0
    for _ in range(300):  # 3 s of topology time: three rounds of retries
        runner.clock.advance(0.01)  # type: ignore[attr-defined]
        runner.turn()
        peak = max(peak, len(executor.parking))
    assert limit <= peak <= limit + 100  # (a turn's emits may pass the limit)
    assert spout.i > 2 * limit  # the spout went on as the attempts drained the parking
