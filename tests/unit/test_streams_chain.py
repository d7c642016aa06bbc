"""Stateless Streams operators chained into their spout's task, on the in-process runner:
the same results chained and unchained (hypothesis over random chains, against a plain
Python reference), the spout's msg ids as without chaining (an element dropped is acked,
a flat_map's outputs are one tree, an operator that raises goes through the failure
policy: replayed, or dead-lettered), the compiled and the pure-Python spout emit, and a
checkpointed topology counting exactly once through worker restarts."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_stateful_runtime import CONF, WORDS, Words, coordinator_of, settle
from tests.unit.test_stateful_runtime import run as run_turns
from tests.unit.test_streams import FAIL_AT_ONCE, Collect, Items, run, values
from topology import BasicBolt, Bolt, Tuple
from topology.runtime import spout_path
from topology.runtime.inprocess import InProcessRunner
from topology.spec import describe_components
from topology.streams import StreamBuilder, tumbling
from topology.streams.chained_spout import ChainedReplayableSpout, ChainedSpout

pytestmark = pytest.mark.timeout(60)

#: Values checked wherever they go: the spout task runs its pure-Python emit.
PURE = {"topology.testing.always.try.serialize": True}


def spout_of(runner: InProcessRunner, component: str, index: int = 0) -> Any:
    """The author's spout inside a chained spout task (its acked / failed record)."""
    instance = runner.instance(component, index)
    return instance.spout if isinstance(instance, ChainedSpout) else instance


# -- the plan ---------------------------------------------------------------------------------


def test_operators_after_a_spout_run_in_its_task_which_keeps_its_name() -> None:
    sb = StreamBuilder()
    (
        sb.new_stream(Items(list(range(5))), parallelism=2, name="numbers")
        .map(lambda n: n + 1)
        .filter(lambda n: n % 2 == 0)
        .to(Collect(), name="collect")
    )
    topology = sb.build()
    assert sorted(topology.components) == ["collect", "numbers"]
    numbers = topology.components["numbers"]
    assert numbers.kind == "spout" and numbers.num_tasks == 2
    assert isinstance(numbers.instance, ChainedReplayableSpout)  # Items is replayable
    described = describe_components(topology)
    assert described["numbers"]["operators"] == ["spout(Items)", "map", "filter"]
    assert described["collect"]["inputs"][0]["stream"] == "filter"
    assert sorted(described["numbers"]["streams"]) == ["default", "filter"]


def test_no_chaining_with_fusion_off_another_parallelism_or_a_window() -> None:
    off = StreamBuilder(fusion=False)
    off.new_stream(Items([1]), name="n").map(str).to(Collect(), name="collect")
    assert sorted(off.build().components) == ["collect", "n", "str"]
    wider = StreamBuilder()
    wider.new_stream(Items([1]), name="n").repartition(2).map(str).to(Collect(), name="collect")
    assert not isinstance(wider.build().components["n"].instance, ChainedSpout)
    windowed = StreamBuilder()
    windowed.new_stream(Items([1]), name="n").window(tumbling(count=1)).count().named("c")
    assert not isinstance(windowed.build().components["n"].instance, ChainedSpout)


def test_components_reading_the_spout_itself_still_get_its_tuples() -> None:
    """One consumer chained, one not (another parallelism): both get every element, and
    each msg id is acked once, when both are done."""
    sb = StreamBuilder()
    numbers = sb.new_stream(Items(list(range(20))), parallelism=2, name="numbers")
    numbers.map(lambda n: n * 10).to(Collect(), name="collect")
    numbers.repartition(3).to(Collect(), 3, name="spread")
    runner = run(sb)
    assert sorted(values(runner)) == [n * 10 for n in range(20)]
    assert sorted(values(runner, "spread")) == list(range(20))
    acked = [m for i in range(2) for m in spout_of(runner, "numbers", i).acked]
    assert sorted(acked) == list(range(20))


def test_a_spout_of_several_fields_gives_its_chained_operators_dicts() -> None:
    sb = StreamBuilder()
    rows_in = [(n, f"s{n}") for n in range(6)]
    sb.new_stream(Items(rows_in, fields=["n", "s"]), name="n").map(
        lambda row: row["s"] * row["n"]
    ).to(Collect(), name="collect")
    runner = run(sb, workers=1)
    assert sorted(values(runner)) == sorted(f"s{n}" * n for n in range(6))


def test_the_wrapped_spouts_module_is_shipped_with_the_topology() -> None:
    """A spout class imported by name must import on the workers: its module's path is
    found through the wrapper (``topology.deploy.shipping``)."""
    from topology.deploy.shipping import module_paths, topology_objects

    sb = StreamBuilder()
    sb.new_stream(Items([1]), name="n").map(str).to(Collect(), name="collect")
    objects = topology_objects(sb.build())
    assert any(type(o) is Items for o in objects)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert os.path.realpath(here) in module_paths(objects)


# -- results: chained and unchained, against a plain-Python reference -----------------------

#: Each operator: what it adds to a stream, and what it does to a list of elements.
CHAIN_OPS: dict[str, tuple[Any, Any]] = {
    "inc": (lambda s: s.map(lambda n: n + 1), lambda xs: [n + 1 for n in xs]),
    "triple": (lambda s: s.map(lambda n: n * 3), lambda xs: [n * 3 for n in xs]),
    "odd": (lambda s: s.filter(lambda n: n % 2 == 1), lambda xs: [n for n in xs if n % 2]),
    "none": (lambda s: s.filter(lambda n: n < 0), lambda xs: []),
    "split": (
        lambda s: s.flat_map(lambda n: range(n % 4)),
        lambda xs: [i for n in xs for i in range(n % 4)],
    ),
    "peek": (lambda s: s.peek(lambda n: None), lambda xs: xs),
    "branch": (
        lambda s: s.branch(lambda n: n % 3 == 0, lambda n: True)[1],
        lambda xs: [n for n in xs if n % 3 != 0],
    ),
}


def chain_results(ops: list[str], fusion: bool, parallelism: int, conf: dict[str, Any]) -> Any:
    sb = StreamBuilder(fusion=fusion)
    stream = sb.new_stream(Items(list(range(15))), parallelism=parallelism, name="numbers")
    for op in ops:
        stream = CHAIN_OPS[op][0](stream)
    stream.to(Collect(), name="collect")
    stream.map_to_pair(lambda n: (n % 3, n)).count_by_key().named("count")  # fields grouping
    runner = run(sb, turns=40, **conf)
    counts: Counter[Any] = Counter()
    for task in range(runner.topology.components["count"].num_tasks):
        counts.update(runner.instance("count", task).aggregates)
    acked = [m for i in range(parallelism) for m in spout_of(runner, "numbers", i).acked]
    failed = [m for i in range(parallelism) for m in spout_of(runner, "numbers", i).failed]
    assert sorted(acked) == list(range(15)) and failed == []  # each msg id acked once
    assert not runner.errors
    return Counter(values(runner)), counts


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    ops=st.lists(st.sampled_from(sorted(CHAIN_OPS)), max_size=5),
    parallelism=st.sampled_from([1, 2]),
    pure=st.booleans(),
)
def test_any_chain_after_a_spout_gives_the_reference_results_chained_or_not(
    ops: list[str], parallelism: int, pure: bool
) -> None:
    expected = list(range(15))
    for op in ops:
        expected = CHAIN_OPS[op][1](expected)
    reference = (Counter(expected), Counter(dict(Counter(n % 3 for n in expected))))
    conf = PURE if pure else {}
    assert chain_results(ops, True, parallelism, conf) == reference
    assert chain_results(ops, False, parallelism, conf) == reference


# -- msg ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize("conf", [{}, PURE], ids=["compiled", "pure"])
def test_elements_a_filter_drops_are_acked_at_once(conf: dict[str, Any]) -> None:
    sb = StreamBuilder()
    sb.new_stream(Items(list(range(10))), name="n").filter(lambda n: n < 3).to(
        Collect(), name="collect"
    )
    runner = run(sb, workers=1, **conf)
    if spout_path.COMPILED:
        assert (runner.task("n").compiled is None) == bool(conf)  # type: ignore[union-attr]
    assert sorted(values(runner)) == [0, 1, 2]
    spout = spout_of(runner, "n")
    assert sorted(spout.acked) == list(range(10)) and spout.failed == []


def test_a_for_each_after_a_spout_consumes_in_its_task() -> None:
    seen: list[int] = []
    sb = StreamBuilder()
    sb.new_stream(Items(list(range(8))), name="n").map(lambda n: n * n).for_each(seen.append)
    topology = sb.build()
    assert list(topology.components) == ["n"]
    runner = InProcessRunner(topology, {"topology.workers": 1})
    runner.activate()
    runner.run_until(lambda: len(spout_of(runner, "n").acked) == 8, advance=0.05)
    assert sorted(seen) == [n * n for n in range(8)]
    # each element counts as the spout's emit (the spout wait strategy sees it busy)
    assert runner.task("n").collector.emit_calls == 8


class FailOnce(Bolt):
    """Fails the first tuple whose value is ``-3``; acks everything else."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.rows: list[list[Any]] = []
        self.failed_once = False

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == -3 and not self.failed_once:
            self.failed_once = True
            self.fail(tup)
            return
        self.rows.append(list(tup.values))
        self.ack(tup)


@pytest.mark.parametrize("conf", [{}, PURE], ids=["compiled", "pure"])
def test_a_flat_maps_outputs_are_one_tree_acked_or_failed_once(conf: dict[str, Any]) -> None:
    sb = StreamBuilder()
    (
        sb.new_stream(Items(list(range(6))), name="n")
        .flat_map(lambda n: [n, -n, n])
        .to(FailOnce(), 2, name="collect")
    )
    runner = run(sb, **conf)
    spout = spout_of(runner, "n")
    assert spout.failed == [3]  # one of its three outputs failed: the msg id fails, once
    assert sorted(spout.acked) == list(range(6))  # once each, the replayed 3 too
    # 3's outputs went out twice (the replay), but -3 reached the bolt's rows only then
    assert Counter(v for v in values(runner) if v == -3) == Counter({-3: 1})


class Boom(Exception):
    pass


def test_an_operator_that_raises_fails_the_msg_id_and_the_spout_replays_it() -> None:
    seen: set[int] = set()

    def flaky(n: int) -> int:
        if n in (2, 4) and n not in seen:
            seen.add(n)
            raise Boom(f"first time {n}")
        return n

    sb = StreamBuilder()
    (
        sb.new_stream(Items(list(range(6))), name="numbers")
        .flat_map(lambda n: [n, n])
        .map(flaky)
        .to(Collect(), name="collect")
    )
    runner = run(sb, workers=1, **FAIL_AT_ONCE)
    spout = spout_of(runner, "numbers")
    assert sorted(spout.failed) == [2, 4]
    assert runner.task("numbers").stats.failed == 2
    assert sorted(spout.acked) == list(range(6))
    # nothing of an element went out before its chain raised: each value exactly twice
    assert sorted(values(runner)) == sorted(2 * list(range(6)))
    assert {c for c, _, text in runner.errors if "Boom: first time" in text} == {"numbers"}


def test_with_the_default_policy_a_failing_element_is_retried_then_dead_lettered() -> None:
    attempts: Counter[int] = Counter()

    def picky(n: int) -> int:
        attempts[n] += 1
        if n == 5 or (n == 1 and attempts[n] == 1):
            raise Boom(f"no {n}")
        return n

    class Letters(BasicBolt):
        def prepare(self, conf: Any, context: Any) -> None:
            self.rows: list[list[Any]] = []

        def process(self, tup: Tuple) -> None:
            self.rows.append(list(tup.values))

    sb = StreamBuilder()
    sb.topology_builder.set_bolt("dlq", Letters()).dead_letters()
    sb.new_stream(Items(list(range(8))), name="numbers").map(picky).to(Collect(), name="collect")
    runner = run(sb, workers=1)
    spout = spout_of(runner, "numbers")
    assert sorted(spout.acked) == list(range(8)) and spout.failed == []
    assert sorted(values(runner)) == [0, 1, 2, 3, 4, 6, 7]  # 1 passed on its second attempt
    assert attempts[5] == 4  # the first and 3 retries (topology.errors.retries)
    [letter] = runner.instance("dlq").rows
    component, _, source, stream, letter_values, error = letter[:6]
    assert (component, source, stream, letter_values) == ("numbers", "numbers", "default", [5])
    assert error == "Boom: no 5" and letter[7] == 4


def test_a_value_no_wire_carries_is_given_up_on_at_once() -> None:
    sb = StreamBuilder()
    sb.new_stream(Items(list(range(4))), name="n").map(lambda n: {n} if n == 2 else n).to(
        Collect(), name="collect"
    )
    runner = run(sb, workers=1)
    assert sorted(values(runner)) == [0, 1, 3]
    spout = spout_of(runner, "n")
    assert sorted(spout.acked) == list(range(4)) and spout.failed == []
    assert any("msgpack cannot encode" in text for _, _, text in runner.errors)


def test_untracked_emits_go_through_the_chain_too() -> None:
    class NoIds(Items):
        def next_tuple(self) -> None:
            if self.next < len(self.items):
                self.emit([self.items[self.next]])
                self.next += self.step

    sb = StreamBuilder()
    sb.new_stream(NoIds(list(range(10))), parallelism=2, name="n").flat_map(
        lambda n: [n] * (n % 3)
    ).to(Collect(), name="collect")
    runner = run(sb)
    assert Counter(values(runner)) == Counter({n: n % 3 for n in range(10) if n % 3})


# -- checkpointed ------------------------------------------------------------------------------


def add_one(count: int | None, _: Any) -> int:
    return (count or 0) + 1


#: Each word's first element fails once (a rollback, then the replay).
FAILED: set[int] = set()


def counted(words: list[str]) -> Counter[str]:
    return Counter(w + s for w in words if not w.endswith("7") for s in ("", "!"))


@pytest.mark.parametrize("fusion", [True, False], ids=["chained", "unchained"])
def test_a_checkpointed_chain_counts_exactly_once_through_restarts_and_a_failure(
    fusion: bool,
) -> None:
    FAILED.clear()

    def once(word: str) -> str:
        if word == "w11" and not FAILED:
            FAILED.add(1)
            raise Boom("once")
        return word

    words = WORDS[:3000]
    sb = StreamBuilder(fusion=fusion)
    (
        sb.new_stream(Words(words), name="words")
        .filter(lambda w: not w.endswith("7"))
        .map(once)
        .flat_map(lambda w: [w, w + "!"])
        .key_by(lambda w: w)
        .update_state_by_key(add_one)
        .named("count")
    )
    topology = sb.build()
    assert isinstance(topology.components["words"].instance, ChainedSpout) == fusion
    runner = InProcessRunner(topology, {**CONF, **FAIL_AT_ONCE})
    runner.activate()
    coordinator = coordinator_of(runner)
    while coordinator.completed < 3:
        run_turns(runner, 1)
    for victim in (1, 0):
        agent = runner.restart_worker(victim).checkpoints
        assert agent is not None
        while agent.paused or coordinator_of(runner).recovering:
            run_turns(runner, 1)
        run_turns(runner, 30)
    settle(runner, lambda: range(spout_of(runner, "words").next), len(words))
    total: Counter[str] = Counter()
    for task in range(topology.components["count"].num_tasks):
        total.update(dict(runner.instance("count", task).state.items()))
    assert total == counted(words)
    assert FAILED == {1}
    assert all("Boom: once" in text for _, _, text in runner.errors)
