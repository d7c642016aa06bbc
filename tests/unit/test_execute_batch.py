"""Issue 30, item 3: ``Bolt.execute_batch(tuples)``, on the in-process runner.

A bolt that overrides it gets every tuple once, in order, a received group per call,
instead of ``execute``; it acks or fails each tuple itself.  If it raises, the error is
reported and the tuples of the batch it had not acked or failed are failed (in a
checkpointed topology: a replay from the last checkpoint, counts staying exact).  A basic,
windowed or async bolt that defines it is refused by ``create_topology``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.test_stateful_runtime import CONF, WORDS, Words, coordinator_of, settle
from topology import (
    AsyncBolt,
    BasicBolt,
    Bolt,
    Spout,
    StatefulBolt,
    TopologyBuilder,
    TopologyValidationError,
    Tuple,
    Window,
    WindowedBolt,
)
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.tasks.collector import FAILED_BY_ERROR
from topology.testing import FeederSpout

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(60)

TOTAL = 60
PER_CALL = 6
#: Words whose batch raised once already, shared by every copy of the bolt in this process.
RAISED: set[str] = set()


class Blocks(Spout):
    """Emits ``PER_CALL`` tracked tuples per ``next_tuple`` call, ``TOTAL`` in all."""

    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.acked: list[int] = []
        self.failed: list[int] = []

    def next_tuple(self) -> None:
        for _ in range(PER_CALL):
            if self.i < TOTAL:
                self.emit([self.i], msg_id=self.i)
                self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


class Batches(Bolt):
    """Records each batch (its values; ``"tick"`` for a tick tuple) and acks every tuple;
    ``execute`` must never run."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.batches: list[list[Any]] = []

    def execute(self, tup: Tuple) -> None:
        raise AssertionError("execute() was called on a bolt with execute_batch()")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.batches.append(["tick" if t.is_tick() else t[0] for t in tuples])
        for t in tuples:
            self.ack(t)


class Midway(Batches):
    """On the batch holding 10: acks its first tuple, fails its second, then raises (the
    rest stay unacked); acks every tuple of the other batches."""

    def execute_batch(self, tuples: list[Tuple]) -> None:
        values = [t[0] for t in tuples]
        if 10 not in values:
            super().execute_batch(tuples)
            return
        self.batches.append(values)
        self.ack(tuples[0])
        self.fail(tuples[1])  # failed by the bolt: not failed again
        raise ValueError(f"midway through {values}")


def blocks_topology(bolt: Bolt) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("blocks", Blocks())
    builder.set_bolt("batch", bolt).shuffle_grouping("blocks")
    return builder.create_topology()


def drive(runner: InProcessRunner, done: Callable[[], bool], limit: int = 3000) -> None:
    runner.activate()
    runner.run_until(done, limit, advance=0.01)


def test_execute_batch_gets_every_tuple_once_in_order_in_groups() -> None:
    runner = InProcessRunner(blocks_topology(Batches()), {"topology.workers": 1})
    spout = runner.instance("blocks")
    drive(runner, lambda: len(spout.acked) == TOTAL)
    bolt = runner.instance("batch")
    assert [n for batch in bolt.batches for n in batch] == list(range(TOTAL))
    assert max(len(batch) for batch in bolt.batches) > 1  # grouped, not one at a time
    assert sorted(spout.acked) == list(range(TOTAL)) and spout.failed == []
    task = runner.task("batch")
    assert task.stats.executed == TOTAL  # tuples, not calls
    assert task.collector.acked == TOTAL
    assert runner.errors == []


def test_tick_tuples_come_in_a_batch_of_their_own() -> None:
    class Ticked(Batches):
        def get_component_configuration(self) -> dict[str, Any]:
            return {"topology.tick.tuple.freq.secs": 1}

    runner = InProcessRunner(blocks_topology(Ticked()), {"topology.workers": 1})
    spout = runner.instance("blocks")
    task = runner.task("batch")
    drive(runner, lambda: len(spout.acked) == TOTAL and task.stats.ticks >= 2)
    batches = runner.instance("batch").batches
    assert [b for b in batches if "tick" in b] == [["tick"]] * task.stats.ticks
    assert [n for b in batches if "tick" not in b for n in b] == list(range(TOTAL))
    assert task.stats.executed == TOTAL
    assert runner.errors == []


def test_a_batch_that_raises_fails_what_it_had_not_acked_and_reports_the_error() -> None:
    runner = InProcessRunner(blocks_topology(Midway()), {"topology.workers": 1, **FAIL_AT_ONCE})
    spout = runner.instance("blocks")
    drive(runner, lambda: len(spout.acked) + len(spout.failed) == TOTAL)
    batches = runner.instance("batch").batches
    assert [n for b in batches for n in b] == list(range(TOTAL))
    [batch] = [b for b in batches if 10 in b]
    assert len(batch) > 2  # something was left unacked when it raised
    assert sorted(spout.failed) == batch[1:]  # the bolt's own fail, then the rest
    assert sorted(spout.acked) == sorted(set(range(TOTAL)) - set(batch[1:]))
    [error] = runner.errors
    assert error[0] == "batch" and "ValueError: midway through" in error[2]
    collector = runner.task("batch").collector
    assert collector.failed_by[FAILED_BY_ERROR] == len(batch) - 2


# -- a checkpointed topology: a StatefulBolt may batch ----------------------------------


class BatchCount(StatefulBolt):
    """Counts words in its state a batch at a time; raises once (after counting its batch)
    on the first batch holding ``word``, when one is given."""

    def __init__(self, word: str | None = None) -> None:
        self.word = word

    def execute_batch(self, tuples: list[Tuple]) -> None:
        counts = Counter(t[0] for t in tuples)
        for word, n in counts.items():
            self.state.put(word, self.state.get(word, 0) + n)
        if self.word in counts and self.word not in RAISED:
            RAISED.add(self.word)
            raise RuntimeError(f"lost {self.word}")


def stateful_counts(runner: InProcessRunner, tasks: int = 3) -> Counter[str]:
    total: Counter[str] = Counter()
    for i in range(tasks):
        total.update(dict(runner.instance("count", i).state.items()))
    return total


def stateful_topology(counter: StatefulBolt) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", Words(WORDS))
    builder.set_bolt("count", counter, 3).fields_grouping("words", ["word"])
    return builder.create_topology()


def test_a_stateful_bolt_counts_exactly_with_execute_batch() -> None:
    runner = InProcessRunner(stateful_topology(BatchCount()), CONF)
    runner.activate()
    spout = runner.task("words")
    settle(runner, lambda: spout.instance.acked, len(WORDS))
    assert stateful_counts(runner) == Counter(WORDS)
    assert runner.errors == []


def test_a_stateful_batch_that_raises_replays_from_the_last_checkpoint() -> None:
    RAISED.discard("w7")
    runner = InProcessRunner(stateful_topology(BatchCount("w7")), {**CONF, **FAIL_AT_ONCE})
    runner.activate()
    spout = runner.task("words")
    settle(runner, lambda: range(spout.instance.next), len(WORDS))
    assert "w7" in RAISED
    assert stateful_counts(runner) == Counter(WORDS)  # the raising batch counted once
    assert coordinator_of(runner).recoveries == 1
    assert [e[0] for e in runner.errors] == ["count"]


class AckingBatchCount(StatefulBolt):
    """Counts a batch tuple by tuple, acking each once counted; raises on a word ending
    in 3, before counting it (every attempt); gives up on a word ending in 5 itself."""

    def execute_batch(self, tuples: list[Tuple]) -> None:
        for t in tuples:
            if t[0].endswith("3"):
                raise ValueError(f"poison {t[0]}")
            if t[0].endswith("5"):
                self.dead_letter(t, "no fives")
                continue
            self.state.put(t[0], self.state.get(t[0], 0) + 1)
            self.ack(t)


def test_a_stateful_batch_that_raises_retries_only_what_it_had_not_acked() -> None:
    """Untracked tuples (a checkpointed topology): those the batch acked (or dead-lettered)
    before it raised are not tried again, so none is counted or dead-lettered twice; the
    poison ones are dead-lettered."""
    builder = TopologyBuilder()
    builder.set_spout("words", Words(WORDS))
    builder.set_bolt("count", AckingBatchCount(), 3).fields_grouping("words", ["word"])
    builder.set_bolt("dlq", Batches()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), CONF)
    runner.activate()
    spout = runner.task("words")
    settle(runner, lambda: spout.instance.acked, len(WORDS))
    assert stateful_counts(runner) == Counter(w for w in WORDS if w[-1] not in "35")
    dead = [v for batch in runner.instance("dlq").batches for v in batch if v != "tick"]
    assert len(dead) == sum(w[-1] in "35" for w in WORDS)
    assert coordinator_of(runner).recoveries == 0


# -- where it does not apply: refused by create_topology() ----------------------------


class BasicWithBatch(BasicBolt):
    def process(self, tup: Tuple) -> None:
        pass

    def execute_batch(self, tuples: list[Tuple]) -> None:
        pass


class WindowWithBatch(WindowedBolt):
    def execute(self, window: Window) -> None:
        pass

    def execute_batch(self, tuples: list[Tuple]) -> None:
        pass


class AsyncWithBatch(AsyncBolt):
    async def process_async(self, tup: Tuple) -> Any:
        return None

    def execute_batch(self, tuples: list[Tuple]) -> None:
        pass


@pytest.mark.parametrize(
    ("bolt", "expected", "fix"),
    [
        (BasicWithBatch(), "bolt 'work' (BasicWithBatch): a BasicBolt's", "subclass Bolt"),
        (
            WindowWithBatch().with_tumbling_window(count=2),
            "bolt 'work' (WindowWithBatch): a WindowedBolt",
            "remove it",
        ),
        (AsyncWithBatch(), "bolt 'work' (AsyncWithBatch): an AsyncBolt's", "subclass Bolt"),
    ],
)
def test_execute_batch_is_refused_where_the_runtime_would_not_call_it(
    bolt: Bolt, expected: str, fix: str
) -> None:
    builder = TopologyBuilder()
    builder.set_spout("source", FeederSpout(["n"], [[1]]))
    builder.set_bolt("work", bolt).shuffle_grouping("source")
    with pytest.raises(TopologyValidationError) as info:
        builder.create_topology()
    [problem] = info.value.problems
    assert problem.startswith(expected), problem
    assert "execute_batch() is never called" in problem and fix in problem


def test_a_bolt_with_only_execute_batch_is_accepted() -> None:
    blocks_topology(Batches())  # (Batches also defines execute)

    class OnlyBatch(Bolt):
        def execute_batch(self, tuples: list[Tuple]) -> None:
            pass

    blocks_topology(OnlyBatch())


def test_the_default_execute_batch_runs_execute_for_each_tuple() -> None:
    seen: list[Any] = []

    class Each(Bolt):
        def execute(self, tup: Any) -> None:
            seen.append(tup)

    Each().execute_batch(["a", "b"])  # type: ignore[list-item]
    assert seen == ["a", "b"]
