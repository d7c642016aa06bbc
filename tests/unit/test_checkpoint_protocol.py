"""Unit tests of the checkpoint protocol's pure state machines: the coordinator (epochs,
checkpoints, recovery), barrier alignment, and a spout's deferred acks."""

from __future__ import annotations

import pytest

from topology.state.checkpoint import (
    EPOCH_SPAN,
    RESEND_SECS,
    Abandon,
    BarrierAligner,
    Begin,
    CheckpointCoordinator,
    Commit,
    Resume,
    RollBack,
    SpoutEpochs,
    Store,
)

pytestmark = pytest.mark.timeout(30)

TASKS = frozenset({1, 2, 3})


def running(workers: int = 2, incarnation: int = 5, restore: int = 4) -> CheckpointCoordinator:
    """A coordinator whose workers all restored its first epoch (resumed at t=0)."""
    c = CheckpointCoordinator(workers, TASKS, 1.0, 10.0, 0.0, incarnation, restore)
    assert c.pending == [RollBack(tuple(range(workers)), c.epoch, restore)]
    c.tick(0.0)
    for w in range(workers - 1):
        assert c.status(w, c.epoch, 0.0) == []
    assert c.status(workers - 1, c.epoch, 0.0) == [Resume(tuple(range(workers)), c.epoch)]
    return c


def complete(c: CheckpointCoordinator, now: float) -> int:
    """Run one checkpoint from begin to commit at ``now``; return its id."""
    [begin] = c.tick(now)
    assert isinstance(begin, Begin)
    k = begin.checkpoint
    for task in sorted(TASKS)[:-1]:
        assert c.done(c.epoch, k, task, True, now) == []
    [store] = c.done(c.epoch, k, max(TASKS), True, now)
    assert isinstance(store, Store) and store.checkpoint == k
    assert c.stored(k, True, now) == [Commit(c.epoch, k)]
    return k


def test_a_coordinator_starts_with_every_worker_restoring_the_last_checkpoint() -> None:
    c = CheckpointCoordinator(3, TASKS, 1.0, 10.0, 0.0, incarnation=7, restore=4)
    assert c.epoch == 7 * EPOCH_SPAN + 1
    assert c.tick(0.0) == [RollBack((0, 1, 2), c.epoch, 4)]
    assert c.tick(0.5) == []  # nothing begins while recovering
    # repeated to the workers that have not answered, once per RESEND_SECS
    c.status(1, c.epoch, 0.6)
    assert c.tick(RESEND_SECS + 0.1) == [RollBack((0, 2), c.epoch, 4)]
    assert c.recoveries == 0  # starting is not a failure


def test_checkpoints_begin_on_schedule_and_complete_when_every_task_stored_them() -> None:
    c = running(restore=4)
    assert c.tick(0.5) == []  # not due before the interval
    k1 = complete(c, 1.0)
    assert k1 > 4
    assert c.restore == k1 and c.completed == 1
    assert c.tick(1.5) == []
    k2 = complete(c, 2.0)
    assert k2 > k1


def test_no_checkpoint_begins_while_the_previous_one_is_being_stored() -> None:
    c = running()
    [begin] = c.tick(1.0)
    for task in TASKS:
        c.done(c.epoch, begin.checkpoint, task, True, 1.0)
    assert c.tick(5.0) == []
    assert c.stored(begin.checkpoint, True, 5.0) == [Commit(c.epoch, begin.checkpoint)]
    assert c.tick(5.5) == [] and isinstance(c.tick(6.0)[0], Begin)


def test_a_checkpoint_is_abandoned_on_timeout_or_decline_and_the_next_covers_it() -> None:
    c = running()
    [begin] = c.tick(1.0)
    c.done(c.epoch, begin.checkpoint, 1, True, 1.0)
    out = c.tick(11.0)
    assert isinstance(out[0], Abandon) and "2 task(s) did not report" in out[0].reason
    assert isinstance(out[1], Begin) and out[1].checkpoint > begin.checkpoint
    assert c.done(c.epoch, begin.checkpoint, 2, True, 11.0) == []  # late: ignored
    [abandon] = c.done(c.epoch, out[1].checkpoint, 3, False, 11.5)
    assert abandon == Abandon(out[1].checkpoint, "task 3 declined it")
    assert c.abandoned == 2
    assert c.restore == 4  # nothing completed


def test_a_failed_store_does_not_move_the_restore_point() -> None:
    c = running()
    [begin] = c.tick(1.0)
    for task in TASKS:
        c.done(c.epoch, begin.checkpoint, task, True, 1.0)
    [abandon] = c.stored(begin.checkpoint, False, 1.1)
    assert isinstance(abandon, Abandon) and c.restore == 4


def test_a_worker_that_restarted_starts_a_new_epoch_for_everyone() -> None:
    c = running()
    first = c.epoch
    k = complete(c, 1.0)
    [begin] = c.tick(2.0)
    assert c.status(1, 0, 2.1) == [RollBack((0, 1), first + 1, k)]
    assert c.recoveries == 1 and c.in_flight is None
    assert c.done(first, begin.checkpoint, 1, True, 2.2) == []  # from the old epoch
    # a worker joining late while recovering gets the rollback alone
    assert c.status(0, 0, 2.3) == [RollBack((0,), first + 1, k)]
    c.status(0, first + 1, 2.4)
    assert c.status(1, first + 1, 2.5) == [Resume((0, 1), first + 1)]
    # a paused worker that missed the resume is told again
    assert c.status(0, first + 1, 3.0) == [Resume((0,), first + 1)]


def test_a_failed_tuple_replays_from_the_last_checkpoint_at_most_once_per_interval() -> None:
    c = running()
    epoch = c.epoch
    assert c.failed(epoch, 0.2) == []  # 0.8 s after resuming: waits for the interval
    assert c.failed(epoch, 0.3) == []  # one replay covers every failure until then
    assert c.tick(0.9) == []
    [rollback] = c.tick(1.0)
    assert rollback == RollBack((0, 1), epoch + 1, 4)
    assert c.failed(epoch, 1.1) == []  # a failure reported from the old epoch: covered


def test_a_recovery_during_a_store_waits_for_it_and_restores_it() -> None:
    c = running()
    [begin] = c.tick(1.0)
    for task in TASKS:
        c.done(c.epoch, begin.checkpoint, task, True, 1.0)
    assert c.status(0, 0, 1.1) == []  # the rollback must name the checkpoint being stored
    assert c.tick(5.0) == []
    commit, rollback = c.stored(begin.checkpoint, True, 5.0)
    assert isinstance(commit, Commit)
    assert rollback == RollBack((0, 1), c.epoch, begin.checkpoint)


def test_a_restarted_coordinator_has_epochs_above_every_earlier_one() -> None:
    old = running(incarnation=5)
    for i in range(50):  # many recoveries in the old incarnation
        old.status(0, 0, float(i))
    new = CheckpointCoordinator(2, TASKS, 1.0, 10.0, 0.0, incarnation=6, restore=4)
    assert new.epoch > old.epoch
    # a survivor of the old incarnation is rolled into the new one
    assert new.status(0, old.epoch, 0.0) == [RollBack((0,), new.epoch, 4)]
    assert new.status(1, new.epoch + 1, 0.0) == []  # from the future: not ours


def test_alignment_holds_channels_that_delivered_the_barrier_until_all_did() -> None:
    a, b, c = (1, "default"), (2, "default"), (2, "other")
    aligner = BarrierAligner(frozenset({a, b, c}))
    assert not aligner.held(a)
    assert aligner.arrive(a, 3) is False
    assert aligner.held(a) and not aligner.held(b)
    aligner.hold("g1", 10)
    assert aligner.arrive(b, 3) is False
    aligner.hold("g2", 5)
    assert aligner.held_tuples == 15
    assert aligner.arrive(c, 3) is True
    assert aligner.release() == ["g1", "g2"] and aligner.held_tuples == 0
    assert not aligner.held(a)
    assert aligner.arrive(a, 3) is False  # a stale repeat
    assert aligner.arrive((9, "x"), 4) is False  # not an input


def test_a_single_input_aligns_at_once_and_give_up_ignores_the_rest_of_a_barrier() -> None:
    only = (1, "default")
    assert BarrierAligner(frozenset({only})).arrive(only, 1) is True
    a, b = (1, "s"), (2, "s")
    aligner = BarrierAligner(frozenset({a, b}))
    aligner.arrive(a, 5)
    aligner.hold("g", 1)
    assert aligner.give_up() == ["g"]
    assert aligner.arrive(b, 5) is False  # the given-up checkpoint stays given up
    assert aligner.arrive(b, 6) is False and aligner.arrive(a, 6) is True
    aligner.reset()  # a rollback: ids may start lower again
    assert aligner.arrive(a, 2) is False and aligner.arrive(b, 2) is True


def test_spout_msg_ids_are_acked_when_the_checkpoint_after_them_commits() -> None:
    epochs = SpoutEpochs(epoch=1)
    epochs.emitted("a")
    epochs.emitted("b")
    assert epochs.begin(1) == ["a", "b"]  # stored with checkpoint 1
    epochs.emitted("c")  # after barrier 1: belongs to checkpoint 2
    assert epochs.waiting == 3
    assert epochs.commit(1) == ["a", "b"]
    assert epochs.begin(3) == ["c"]  # checkpoint 2 was abandoned: 3 covers c
    assert epochs.commit(2) == []
    assert epochs.commit(3) == ["c"] and epochs.waiting == 0


def test_a_rollback_acks_what_the_checkpoint_holds_and_fails_the_rest() -> None:
    epochs = SpoutEpochs(epoch=1)
    for m in ("a", "b"):
        epochs.emitted(m)
    epochs.begin(4)
    epochs.emitted("c")
    epochs.begin(5)
    epochs.emitted("d")
    assert epochs.roll_back(4) == (["a", "b"], ["c", "d"])
    assert epochs.waiting == 0 and epochs.epoch == 5


def test_replays_of_ids_the_restored_checkpoint_holds_are_recognised_once() -> None:
    epochs = SpoutEpochs(replayed={1, ("k", 2)})
    assert epochs.is_replayed(1) is True
    assert epochs.is_replayed(1) is False
    assert epochs.is_replayed(["k", 2]) is True  # msgpack gives tuples back as lists
    assert epochs.is_replayed({"unhashable": 1}) is False


def test_the_pending_cap_holds_a_spout_back() -> None:
    epochs = SpoutEpochs(cap=2)
    epochs.emitted(1)
    assert epochs.can_emit()
    epochs.emitted(2)
    assert not epochs.can_emit()
    epochs.begin(1)
    epochs.commit(1)
    assert epochs.can_emit()
