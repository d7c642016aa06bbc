"""The checkpoint hooks on the in-process runner (real executors and frames, the memory
backend, a simulated clock): a stateful bolt's ``pre_checkpoint`` runs before its snapshot
(what it puts in the state is what a restore gives back), ``checkpoint_complete`` of bolts
and replayable spouts only once a checkpoint is complete and durable, in increasing order,
never for an abandoned one."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from tests.unit.test_stateful_runtime import CONF, WORDS, Words, coordinator_of, run, settle
from topology import Spout, StatefulBolt, TopologyBuilder, TopologyContext, Tuple
from topology.runtime.inprocess import InProcessRunner
from topology.state.backends import decode_value
from topology.state.backends.memory import MemoryBackend
from topology.state.kv import KeyValueState

pytestmark = pytest.mark.timeout(60)

#: Every hook call, in order: (hook, task index, checkpoint, what the call saw).
CALLS: list[tuple[str, int, int, Any]] = []
#: The runner's state backend (the hooks read the last complete checkpoint from it).
BACKEND: list[Any] = []
#: The checkpoint task 0 of the sink declines (its pre_checkpoint raises); 0: none.
DECLINE = [0]
STAGED = "staged"


def latest() -> int:
    return BACKEND[0].latest()


class Sink(StatefulBolt):
    """Counts words in per-task state; stages each checkpoint's id in it at
    ``pre_checkpoint`` (a two-phase-commit sink would stage its transaction there)."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.index = context.task_index

    def init_state(self, state: KeyValueState) -> None:
        super().init_state(state)
        CALLS.append(("init", self.index, state.get(STAGED, 0), latest()))

    def execute(self, tup: Tuple) -> None:
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)

    def pre_checkpoint(self, checkpoint: int) -> None:
        if self.index == 0 and checkpoint == DECLINE[0]:
            raise RuntimeError(f"no checkpoint {checkpoint} today")
        self.state.put(STAGED, checkpoint)
        CALLS.append(("pre", self.index, checkpoint, latest()))

    def checkpoint_complete(self, checkpoint: int) -> None:
        CALLS.append(("complete", self.index, checkpoint, latest()))


class HookedWords(Words):
    def checkpoint_complete(self, checkpoint: int) -> None:
        stored = BACKEND[0].read(checkpoint, "words#0", lambda key: True)
        position = decode_value(stored[b"position"])
        covered = set(range(position)) <= set(self.acked)  # acked before the hook
        CALLS.append(("spout", 0, checkpoint, (latest(), covered)))


def sink_topology(spout: Spout) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", spout)
    builder.set_bolt("sink", Sink(), 2).shuffle_grouping("words")
    return builder.create_topology()


def start(words: list[str]) -> InProcessRunner:
    CALLS.clear()
    DECLINE[0] = 0
    state_id = f"hooks-{uuid.uuid4().hex[:12]}"
    BACKEND[:] = [MemoryBackend.open({}, state_id)]  # the one the workers open
    runner = InProcessRunner(sink_topology(HookedWords(words)), CONF, state_id=state_id)
    runner.activate()
    return runner


def calls(hook: str, index: int = 0) -> list[tuple[int, Any]]:
    return [(k, seen) for h, i, k, seen in CALLS if h == hook and i == index]


def sink_counts(runner: InProcessRunner) -> Counter[str]:
    total: Counter[str] = Counter()
    for index in range(2):
        state = runner.instance("sink", index).state
        total.update({k: v for k, v in state.items() if k != STAGED})
    return total


def test_checkpoint_complete_follows_pre_checkpoint_once_the_checkpoint_is_durable() -> None:
    runner = start(WORDS[:2000])
    settle(runner, lambda: runner.instance("words").acked, 2000)
    assert runner.errors == []
    restored = coordinator_of(runner).restore
    for index in range(2):
        completed = [k for k, _ in calls("complete", index)]
        assert len(completed) >= 2 and completed == sorted(set(completed))  # once, increasing
        assert completed[-1] <= restored
        for k, durable in calls("complete", index):
            assert durable >= k  # the completion record was written before the call
            before = CALLS.index(("complete", index, k, durable))
            assert any(c[:3] == ("pre", index, k) for c in CALLS[:before])
    spout = calls("spout")
    assert len(spout) >= 2 and [k for k, _ in spout] == sorted({k for k, _ in spout})
    assert all(durable >= k and covered for k, (durable, covered) in spout)
    assert {k for k, _ in spout} >= set(k for k, _ in calls("complete", 0))
    assert sink_counts(runner) == Counter(WORDS[:2000])


def test_a_restore_gives_init_state_what_pre_checkpoint_put_in_the_checkpoint() -> None:
    runner = start(WORDS)
    coordinator = coordinator_of(runner)
    while coordinator.completed < 3:
        run(runner, 1)
    for victim in (1, 0):  # one of them hosts the coordinator: it restarts from the backend
        agent = runner.restart_worker(victim).checkpoints
        assert agent is not None
        while agent.paused or coordinator_of(runner).recovering:  # all restore, then resume
            run(runner, 1)
        run(runner, 30)
    settle(runner, lambda: range(runner.task("words").instance.next), len(WORDS))
    inits = [(staged, durable) for h, _, staged, durable in CALLS if h == "init"]
    assert all(staged == durable for staged, durable in inits)  # the restored checkpoint's
    assert len([s for s, _ in inits if s > 0]) >= 4  # both tasks, at each of the restores
    assert sink_counts(runner) == Counter(WORDS)


def test_a_declined_checkpoint_is_abandoned_and_never_completed() -> None:
    """Task 0's ``pre_checkpoint`` raises for one checkpoint: the error is reported, the
    checkpoint abandoned (no ``checkpoint_complete`` for it anywhere), and its changes go
    into the next one — a restore after it still counts exactly."""
    runner = start(WORDS)
    coordinator = coordinator_of(runner)
    while coordinator.completed < 1:
        run(runner, 1)
    DECLINE[0] = coordinator.next_id + 1
    while not coordinator.restore > DECLINE[0]:
        run(runner, 1)
    assert coordinator.abandoned >= 1
    assert any(c == "sink" and "no checkpoint" in text for c, _, text in runner.errors)
    for hook, index in (("complete", 0), ("complete", 1), ("spout", 0)):
        assert DECLINE[0] not in [k for k, _ in calls(hook, index)]
    assert DECLINE[0] in [k for k, _ in calls("pre", 1)]  # the other task took it
    runner.restart_worker(1)
    settle(runner, lambda: range(runner.task("words").instance.next), len(WORDS))
    assert sink_counts(runner) == Counter(WORDS)
