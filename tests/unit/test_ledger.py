"""Unit tests for the acker's XOR ledger on a simulated clock (plain floats).

Every test runs twice: on the compiled batch steps (``acker._ledger``, when built) and on
the pure-Python ones; ``test_ledger_compiled.py`` adds what only C can get wrong.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Any

import pytest

from acker import ledger as ledger_module
from acker.ledger import AckLedger, Outcome
from acker.protocol import ACK_ACK, ACK_FAIL, ACK_INIT
from acker.rotating import TIMEOUT_BUCKETS as BUCKETS
from acker.task import AckerTask
from tests.unit.path_switch import compiled_and_pure

pytestmark = pytest.mark.timeout(30)

TIMEOUT = 10.0  # 3 buckets: rotations every 5 s, expiry between 10 s and 15 s


def edge(rng: random.Random) -> int:
    return rng.getrandbits(64) or 1


def xor(*values: int) -> int:
    out = 0
    for v in values:
        out ^= v
    return out


batch_steps = compiled_and_pure(ledger_module, "_compiled")


@pytest.fixture
def ledger() -> AckLedger:
    return AckLedger(TIMEOUT, 0.0)


# -- completing trees -------------------------------------------------------------------------


def test_buckets_constant() -> None:
    assert BUCKETS == 3


def test_init_then_acks_complete_the_tree(ledger: AckLedger) -> None:
    rng = random.Random(1)
    root, c1, c2 = edge(rng), edge(rng), edge(rng)
    assert ledger.init(root, c1 ^ c2, 7) is None
    assert len(ledger) == 1
    assert ledger.ack(root, c1) is None
    assert len(ledger) == 1
    outcome = ledger.ack(root, c2)
    assert outcome == Outcome(root, 7)
    assert outcome is not None and outcome.acked
    assert outcome.spout_task == 7
    assert outcome.reason is None
    assert len(ledger) == 0


def test_outcome_acked_property() -> None:
    assert Outcome(1, 2).acked is True
    assert Outcome(1, 2, "why").acked is False
    assert Outcome(1, 2, ["failed", "b", 3, None]).acked is False


def test_ack_before_init_completes_when_the_init_arrives(ledger: AckLedger) -> None:
    rng = random.Random(2)
    root, c1, c2 = edge(rng), edge(rng), edge(rng)
    assert ledger.ack(root, c1) is None
    assert ledger.ack(root, c2) is None
    assert len(ledger) == 1  # kept until the init says which spout task to tell
    assert ledger.init(root, c1 ^ c2, 4) == Outcome(root, 4)
    assert len(ledger) == 0


def test_acks_xoring_to_zero_before_init_do_not_complete(ledger: AckLedger) -> None:
    rng = random.Random(3)
    root, c = edge(rng), edge(rng)
    assert ledger.ack(root, c) is None
    assert ledger.ack(root, c) is None  # value back to 0, but no spout task known
    assert len(ledger) == 1
    assert ledger.init(root, c, 1) is None  # the init's edge is still outstanding
    assert ledger.ack(root, c) == Outcome(root, 1)


def test_fail_before_init_fails_when_the_init_arrives(ledger: AckLedger) -> None:
    rng = random.Random(4)
    root, c = edge(rng), edge(rng)
    reason = ["failed", "split", 3, "ValueError: boom"]
    assert ledger.fail(root, reason) is None
    assert len(ledger) == 1
    outcome = ledger.init(root, c, 9)
    assert outcome == Outcome(root, 9, reason)
    assert outcome is not None and not outcome.acked
    assert len(ledger) == 0


def test_fail_after_init_fails_at_once_even_with_edges_outstanding(ledger: AckLedger) -> None:
    rng = random.Random(5)
    root, c1, c2 = edge(rng), edge(rng), edge(rng)
    ledger.init(root, c1 ^ c2, 2)
    assert ledger.ack(root, c1) is None
    assert ledger.fail(root, "bad") == Outcome(root, 2, "bad")
    assert len(ledger) == 0


def test_first_fail_reason_wins(ledger: AckLedger) -> None:
    rng = random.Random(6)
    root, c = edge(rng), edge(rng)
    assert ledger.fail(root, "first") is None
    assert ledger.fail(root, "second") is None
    assert ledger.init(root, c, 5) == Outcome(root, 5, "first")


def test_fail_wins_over_a_tree_whose_acks_also_completed(ledger: AckLedger) -> None:
    rng = random.Random(7)
    root, c = edge(rng), edge(rng)
    ledger.fail(root, "boom")
    ledger.ack(root, c)
    assert ledger.init(root, c, 1) == Outcome(root, 1, "boom")


def test_partially_acked_tree_is_not_complete(ledger: AckLedger) -> None:
    rng = random.Random(8)
    root = edge(rng)
    children = [edge(rng) for _ in range(4)]
    assert ledger.init(root, xor(*children), 3) is None
    for c in children[:-1]:
        assert ledger.ack(root, c) is None
    assert len(ledger) == 1
    assert ledger.ack(root, children[-1]) == Outcome(root, 3)


def test_outcome_is_reported_exactly_once(ledger: AckLedger) -> None:
    rng = random.Random(9)
    root, c1, c2 = edge(rng), edge(rng), edge(rng)
    ledger.init(root, c1 ^ c2, 3)
    ledger.fail(root, "boom")
    # stragglers of a finished tree never produce a second outcome
    assert ledger.ack(root, c1) is None
    assert ledger.ack(root, c2) is None
    assert ledger.fail(root, "again") is None


def test_trees_are_independent(ledger: AckLedger) -> None:
    rng = random.Random(10)
    r1, r2, c = edge(rng), edge(rng), edge(rng)
    ledger.init(r1, c, 1)
    ledger.init(r2, c, 2)  # same edge value in another tree
    assert ledger.ack(r2, c) == Outcome(r2, 2)
    assert len(ledger) == 1
    assert ledger.ack(r1, c) == Outcome(r1, 1)


# -- expiry -----------------------------------------------------------------------------------


def test_untouched_entry_expires_after_the_timeout_and_not_before(ledger: AckLedger) -> None:
    ledger.init(1, 0xABC, 3)
    t = 0.0
    while t < 14.75:  # rotations at 5 and 10 leave it in the oldest bucket
        assert ledger.expire(t) == 0, t
        t += 0.25
    assert len(ledger) == 1
    assert ledger.expire(15.0) == 1
    assert len(ledger) == 0
    assert ledger.expired == 1


@pytest.mark.parametrize("born", [0.0, 0.5, 2.5, 4.75])
def test_expiry_happens_between_timeout_and_one_and_a_half_timeouts(born: float) -> None:
    ledger = AckLedger(TIMEOUT, 0.0)
    t = 0.0
    while t < born:
        ledger.expire(t)
        t += 0.25
    ledger.expire(born)
    ledger.init(42, 0x1, 1)
    t = born
    while ledger.expire(t) == 0:
        t += 0.25
        assert t < 100
    assert TIMEOUT <= t - born <= TIMEOUT * 1.5


def _init_batch(root: int, value: int, spout_task: int) -> list[list[list[list[int]]]]:
    """One ``__ack_init`` group holding a single init."""
    return [[[[root, value, spout_task]]]]


def test_tree_inited_while_a_rotation_is_overdue_is_not_dropped_early() -> None:
    # The acker task applies the rotation due at 5.0 before the init it receives at 9.9.
    acker = AckerTask(1, TIMEOUT, 0.0)
    acker.receive(ACK_INIT, _init_batch(1, 0x5, 3), now=9.9)
    t = 10.0
    while t < 9.9 + TIMEOUT:
        acker.expire(t)
        assert len(acker.ledger) == 1, f"dropped at {t}"
        t += 0.5


def test_tree_inited_after_a_long_stall_survives_the_catch_up() -> None:
    acker = AckerTask(1, TIMEOUT, 0.0)
    acker.receive(ACK_INIT, _init_batch(1, 0x5, 3), now=0.0)
    acker.receive(ACK_INIT, _init_batch(2, 0x6, 3), now=50.0)
    assert acker.expire(50.0) == 0  # the stall's rotations already dropped tree 1 only
    assert acker.ledger.expired == 1
    assert acker.ledger.ack(2, 0x6) == Outcome(2, 3)


def test_expired_count_accumulates(ledger: AckLedger) -> None:
    for root in range(1, 6):
        ledger.init(root, root * 3, 1)
    ledger.expire(5.0)
    ledger.ack(100, 7)  # an orphan ack (no init yet) is dropped as well
    assert ledger.expire(15.0) == 5
    assert ledger.expire(20.0) == 1
    assert ledger.expired == 6
    assert len(ledger) == 0


def test_long_stall_drops_everything_at_once(ledger: AckLedger) -> None:
    for root in range(1, 4):
        ledger.init(root, root, 1)
    assert ledger.expire(1_000_000.0) == 3
    assert len(ledger) == 0


def test_late_acks_after_expiry_do_not_complete(ledger: AckLedger) -> None:
    ledger.init(1, 0x55, 3)
    ledger.expire(15.0)
    assert ledger.ack(1, 0x55) is None  # the init is gone: no spout task to tell
    assert len(ledger) == 1  # an orphan, to be expired in turn


def test_reset_keeps_an_entry_past_the_original_expiry(ledger: AckLedger) -> None:
    ledger.init(1, 0x11, 6)
    ledger.init(2, 0x22, 6)
    assert ledger.expire(9.0) == 0  # rotation at 5
    assert ledger.reset(1) == 6  # the spout task, to forward the reset to
    assert ledger.expire(15.0) == 1  # tree 2 expires on schedule; tree 1 does not
    assert len(ledger) == 1
    assert ledger.ack(2, 0x22) is None  # tree 2 is gone (this ack only leaves an orphan)
    assert ledger.expire(19.9) == 0
    assert ledger.ack(1, 0x11) == Outcome(1, 6)  # still completable after its old deadline


def test_reset_moves_the_deadline_to_timeout_after_the_reset(ledger: AckLedger) -> None:
    ledger.init(1, 0x11, 6)
    ledger.expire(9.0)
    ledger.reset(1)
    assert ledger.expire(19.9) == 0
    assert ledger.expire(20.0) == 1


def test_reset_of_unknown_or_uninitialized_roots(ledger: AckLedger) -> None:
    assert ledger.reset(12345) is None
    assert len(ledger) == 0  # a reset creates nothing
    ledger.ack(7, 0x9)
    assert ledger.reset(7) is None  # known root, unknown spout task


def test_expire_false_never_drops(ledger: AckLedger) -> None:
    forever = AckLedger(TIMEOUT, 0.0, expire=False)
    forever.init(1, 0x1, 1)
    forever.ack(2, 0x2)
    for t in (0.0, 15.0, 1e6, 1e12):
        assert forever.expire(t) == 0
    assert len(forever) == 2
    assert forever.expired == 0
    assert forever.ack(1, 0x1) == Outcome(1, 1)


# -- many trees, random edge ids, XOR arithmetic as the bolts do it ------------------------------


def three_level_tree(rng: random.Random, root: int, spout_task: int) -> list[tuple[Any, ...]]:
    """Messages of a spout -> 2 children -> 3 grandchildren each tree, as bolts send them.

    The spout inits with the XOR of its two edges; each child bolt acks ``its input edge ^
    the three edges it anchored``; each grandchild acks its own input edge.
    """
    children = [edge(rng), edge(rng)]
    grand = [[edge(rng) for _ in range(3)] for _ in children]
    messages: list[tuple[Any, ...]] = [("init", root, xor(*children), spout_task)]
    for c, gs in zip(children, grand):
        messages.append(("ack", root, c ^ xor(*gs)))
        messages.extend(("ack", root, g) for g in gs)
    return messages


def apply(ledger: AckLedger, message: tuple[Any, ...]) -> Outcome | None:
    if message[0] == "init":
        return ledger.init(message[1], message[2], message[3])
    if message[0] == "ack":
        return ledger.ack(message[1], message[2])
    return ledger.fail(message[1], message[2])


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 17, 2024])
def test_interleaved_trees_complete_exactly_when_their_last_edge_is_acked(seed: int) -> None:
    rng = random.Random(seed)
    ledger = AckLedger(TIMEOUT, 0.0)
    trees: dict[int, list[tuple[Any, ...]]] = {}
    spout_of: dict[int, int] = {}
    while len(trees) < 40:
        root = edge(rng)
        spout_of[root] = rng.randrange(1, 5)
        trees[root] = three_level_tree(rng, root, spout_of[root])
    assert all(len(m) == 9 for m in trees.values())  # 1 init + 2 + 6 acks
    schedule = [m for messages in trees.values() for m in messages]
    rng.shuffle(schedule)  # any order, acks before inits included
    last_index = {}
    for i, m in enumerate(schedule):
        last_index[m[1]] = i
    completed: dict[int, int] = {}
    for i, m in enumerate(schedule):
        outcome = apply(ledger, m)
        if outcome is not None:
            assert outcome.acked
            assert outcome.root not in completed, "a tree completed twice"
            assert outcome.spout_task == spout_of[outcome.root]
            completed[outcome.root] = i
    assert completed == last_index
    assert len(ledger) == 0


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_a_missing_ack_leaves_exactly_that_tree_incomplete(seed: int) -> None:
    rng = random.Random(seed)
    ledger = AckLedger(TIMEOUT, 0.0)
    trees = {}
    for _ in range(20):
        root = edge(rng)
        trees[root] = three_level_tree(rng, root, 1)
    broken = set(rng.sample(sorted(trees), 5))
    schedule = []
    for root, messages in trees.items():
        if root in broken:
            messages = list(messages)
            del messages[rng.randrange(len(messages))]  # lose one message of the tree
        schedule.extend(messages)
    rng.shuffle(schedule)
    done = set()
    for m in schedule:
        outcome = apply(ledger, m)
        if outcome is not None:
            done.add(outcome.root)
    assert done == set(trees) - broken
    assert len(ledger) == len(broken)
    ledger.expire(5.0)
    assert ledger.expire(15.0) == len(broken)


def test_a_failed_tree_reports_once_and_its_stragglers_expire() -> None:
    rng = random.Random(11)
    ledger = AckLedger(TIMEOUT, 0.0)
    root = edge(rng)
    messages = three_level_tree(rng, root, 2)
    outcomes = [apply(ledger, m) for m in messages[:3]]
    outcomes.append(ledger.fail(root, "boom"))
    outcomes += [apply(ledger, m) for m in messages[3:]]
    reported = [o for o in outcomes if o is not None]
    assert reported == [Outcome(root, 2, "boom")]
    ledger.expire(5.0)
    ledger.expire(15.0)
    assert len(ledger) == 0


def test_ack_all_completes_trees_and_keeps_acks_that_come_before_the_init(
    ledger: AckLedger,
) -> None:
    rng = random.Random(5)
    done, open_, early = edge(rng), edge(rng), edge(rng)
    e1, e2, e3 = edge(rng), edge(rng), edge(rng)
    ledger.init(done, e1, 7)
    ledger.init(open_, e2, 8)
    completed: dict[int, list[int]] = {7: [99]}
    failed: list[Outcome] = []
    ledger.ack_all({done: e1, open_: e3, early: e3}, completed, failed)
    assert failed == []
    assert completed == {7: [99, done]}  # appended to what was there
    assert len(ledger) == 2  # open_ still has an edge out; early waits for its init
    assert ledger.init(early, e3, 9) == Outcome(early, 9)


def test_ack_all_keeps_a_tree_failed_before_its_init(ledger: AckLedger) -> None:
    rng = random.Random(6)
    root, e = edge(rng), edge(rng)
    assert ledger.fail(root, "early") is None
    failed: list[Outcome] = []
    ledger.ack_all({root: e}, {}, failed)
    assert failed == []  # its spout is unknown yet
    assert ledger.init(root, e, 3) == Outcome(root, 3, "early")


# -- batches: what the acker task applies per received message --------------------------------


@pytest.mark.parametrize("seed", [0, 3, 99])
def test_batches_complete_each_tree_once_in_the_batch_of_its_last_message(seed: int) -> None:
    """init_all / ack_all over shuffled batches, acks XOR-combined per batch like the
    outbox does: a tree completes exactly once, in the batch that holds its last message."""
    rng = random.Random(seed)
    ledger = AckLedger(TIMEOUT, 0.0)
    spout_of: dict[int, int] = {}
    schedule: list[tuple[Any, ...]] = []
    for _ in range(30):
        root = edge(rng)
        spout_of[root] = rng.randrange(1, 4)
        schedule.extend(three_level_tree(rng, root, spout_of[root]))
    rng.shuffle(schedule)
    batches = [schedule[i : i + 7] for i in range(0, len(schedule), 7)]
    last_batch = {m[1]: i for i, batch in enumerate(batches) for m in batch}
    done_in: dict[int, int] = {}
    for i, batch in enumerate(batches):
        inits = [[m[1], m[2], m[3]] for m in batch if m[0] == "init"]
        acks: dict[int, int] = {}
        for m in batch:
            if m[0] == "ack":
                acks[m[1]] = acks.get(m[1], 0) ^ m[2]
        completed: dict[int, list[int]] = {}
        failed: list[Outcome] = []
        ledger.init_all(inits, completed, failed)
        ledger.ack_all(acks, completed, failed)
        assert failed == []
        for spout_task, roots in completed.items():
            for root in roots:
                assert spout_of[root] == spout_task
                assert root not in done_in, "a tree completed twice"
                done_in[root] = i
    assert done_in == last_batch
    assert len(ledger) == 0


def test_init_all_reports_a_fail_that_came_first_and_completes_a_tree_without_edges(
    ledger: AckLedger,
) -> None:
    assert ledger.fail(5, "boom") is None  # no spout known yet
    ledger.ack(6, 0x30)  # an ack before its init
    completed: dict[int, list[int]] = {}
    failed: list[Outcome] = []
    ledger.init_all([[5, 0x1, 2], [6, 0x30, 2], [7, 0, 3], [8, 0x4, 3]], completed, failed)
    assert failed == [Outcome(5, 2, "boom")]
    assert completed == {2: [6], 3: [7]}
    assert len(ledger) == 1  # tree 8 waits for its edge
    assert ledger.ack(8, 0x4) == Outcome(8, 3)


@pytest.mark.parametrize(
    "bad",
    [[5, "x", 2], [5, None, 2], [5, 0.0, 2], [5, 0, None], [5, 0x1, "spout"], [5, 0, [1]]],
)
def test_a_malformed_init_raises_and_is_not_stored(ledger: AckLedger, bad: list[Any]) -> None:
    completed: dict[int, list[int]] = {}
    with pytest.raises(TypeError, match="wrong shape"):
        ledger.init_all([bad], completed, [])
    assert completed == {} and len(ledger) == 0  # nothing reported, nothing kept


def test_a_malformed_ack_value_raises_before_it_is_stored(ledger: AckLedger) -> None:
    with pytest.raises(TypeError):
        ledger.ack_all({6: 1.5}, {}, [])  # type: ignore[dict-item]
    assert len(ledger) == 0


def test_outcomes_settled_before_a_malformed_item_still_reach_their_spouts() -> None:
    acker = AckerTask(1, TIMEOUT, 0.0)
    acker.receive(ACK_INIT, [[[[1, 0x5, 4]]]])
    assert acker.ledger.fail(7, "boom") is None  # a fail before its init
    with pytest.raises(TypeError):
        acker.receive(ACK_INIT, [[[[7, 0x9, 2], [8, "bad", 2]]]])
    with pytest.raises(TypeError):
        acker.receive(ACK_ACK, [[{1: 0x5, 9: 2.5}]])
    assert acker.drain() == [(4, ACK_ACK, [[1]]), (2, ACK_FAIL, [7, "boom"])]


@pytest.mark.parametrize(
    "bad",
    ["abc", b"\x05\x07\x02", {5: 0, 7: 0, 2: 0}, (1, 2), [1, 2, 3, 4], [5, 2**64, 1.0], 17, None],
)
def test_an_init_of_the_wrong_shape_raises_type_error(bad: Any) -> None:
    """Only a list or tuple of three is an init (not any other iterable of three)."""
    ledger = AckLedger(TIMEOUT, 0.0)
    completed: dict[int, list[int]] = {}
    ledger.init_all([[1, 0, 3]], completed, [])  # settled before the bad one: kept
    with pytest.raises(TypeError, match="wrong shape"):
        ledger.init_all([[2, 0, 3], bad], completed, [])
    assert completed == {3: [1, 2]} and len(ledger) == 0


@pytest.mark.parametrize("acks", [[(1, 2)], "x", None, 5, OrderedDict({1: 2})])
def test_acks_that_are_not_a_dict_raise_type_error(acks: Any) -> None:
    with pytest.raises(TypeError, match="acks must be a dict"):
        AckLedger(TIMEOUT, 0.0).ack_all(acks, {}, [])


@pytest.mark.parametrize("value", [1.5, "x", None, [1], b"\x01"])
def test_an_ack_value_that_is_not_an_int_raises_and_leaves_the_rest(value: Any) -> None:
    ledger = AckLedger(TIMEOUT, 0.0)
    ledger.init(1, 0x5, 4)
    completed: dict[int, list[int]] = {}
    with pytest.raises(TypeError):
        ledger.ack_all({1: 0x5, 2: value, 3: 0x1}, completed, [])
    assert completed == {4: [1]}  # settled before the bad item
    assert len(ledger) == 0  # the bad item stored nothing; the one after it was not reached
