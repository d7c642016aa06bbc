"""Unit tests for the acker wire protocol: FailReason, the per-worker AckOutbox, AckerTask.

Every test runs twice where ``acker._ledger`` was built: with the outbox's compiled split
of acks by acker and (``pure``) with the Python one, ``acker.outbox._split_acks``."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acker
from acker import outbox as outbox_module
from acker.outbox import AckOutbox
from acker.protocol import (
    ACK_ACK,
    ACK_FAIL,
    ACK_INIT,
    ACK_RESET,
    ACKER_COMPONENT,
    TIMEOUT,
    FailReason,
)
from acker.task import AckerTask
from tests.unit.path_switch import compiled_and_pure

pytestmark = pytest.mark.timeout(30)

split = compiled_and_pure(outbox_module, "_ledger")


def test_names() -> None:
    assert ACKER_COMPONENT == "__acker"
    streams = ("__ack_init", "__ack_ack", "__ack_fail", "__ack_reset_timeout")
    assert (ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET) == streams
    for name in acker.__all__:
        assert hasattr(acker, name)


# -- FailReason -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reason",
    [
        TIMEOUT,
        FailReason("failed"),
        FailReason("failed", "split", 3),
        FailReason("failed", "split", 3, "Traceback...\nValueError: boom"),
    ],
)
def test_fail_reason_wire_roundtrip(reason: FailReason) -> None:
    wire = reason.to_wire()
    assert type(wire) is list
    assert wire == [reason.kind, reason.component, reason.task, reason.error]
    assert FailReason.from_wire(wire) == reason
    assert FailReason.from_wire(list(wire)) == reason


def test_timeout_reason() -> None:
    assert TIMEOUT == FailReason("timeout")
    assert TIMEOUT.to_wire() == ["timeout", None, None, None]
    assert str(TIMEOUT) == "timeout"


@pytest.mark.parametrize(
    ("reason", "text"),
    [
        (FailReason("failed"), "failed"),
        (FailReason("failed", "split", 3), "failed in 'split' task 3"),
        (FailReason("failed", "split", 3, "bad input"), "failed in 'split' task 3: bad input"),
        (
            FailReason(
                "failed", "count", 12, "Traceback (most recent call last):\n  ...\nKeyError: 'x'"
            ),
            "failed in 'count' task 12: KeyError: 'x'",
        ),
        (FailReason("failed", None, None, "oops"), "failed: oops"),
    ],
)
def test_fail_reason_str(reason: FailReason, text: str) -> None:
    assert str(reason) == text


def test_fail_reason_is_immutable_and_hashable() -> None:
    reason = FailReason("failed", "b", 1, "e")
    with pytest.raises(AttributeError):
        reason.kind = "timeout"  # type: ignore[misc]
    assert len({reason, FailReason("failed", "b", 1, "e")}) == 1


# -- AckOutbox --------------------------------------------------------------------------------


def test_roots_route_to_ackers_by_modulo() -> None:
    box = AckOutbox([4, 9, 2])
    for root in range(30):
        assert box.acker_of(root) == [4, 9, 2][root % 3]
    big = 2**64 - 1
    assert box.acker_of(big) == [4, 9, 2][big % 3]


def test_every_message_kind_goes_to_the_acker_of_its_root() -> None:
    ackers = [4, 9, 2]
    rng = random.Random(3)
    roots = [rng.getrandbits(64) or 1 for _ in range(40)]
    for kind in ("init", "ack", "fail", "reset"):
        box = AckOutbox(ackers)
        for root in roots:
            if kind == "init":
                box.init(root, 5, 1)
            elif kind == "ack":
                box.ack(root, 5)
            elif kind == "fail":
                box.fail(root, TIMEOUT)
            else:
                box.reset(root)
        seen: dict[int, set[int]] = {}
        for dest, _stream, values in box.drain():
            if kind == "init":
                found = {r for r, _, _ in values[0]}
            elif kind == "ack":
                found = set(values[0])
            elif kind == "fail":
                found = {values[0]}
            else:
                found = set(values[0])
            seen.setdefault(dest, set()).update(found)
        expected: dict[int, set[int]] = {}
        for root in roots:
            expected.setdefault(ackers[root % 3], set()).add(root)
        assert seen == expected, kind


def test_single_acker_gets_everything() -> None:
    box = AckOutbox([7])
    box.init(10, 1, 3)
    box.ack(11, 2)
    box.fail(12, TIMEOUT)
    box.reset(13)
    assert {dest for dest, _, _ in box.drain()} == {7}


def test_init_shape() -> None:
    box = AckOutbox([1, 2])
    box.init(4, 0xAA, 9)  # 4 % 2 -> acker 1
    box.init(6, 0xBB, 8)
    box.init(5, 0xCC, 9)  # acker 2
    assert box.drain() == [
        (1, ACK_INIT, [[[4, 0xAA, 9], [6, 0xBB, 8]]]),
        (2, ACK_INIT, [[[5, 0xCC, 9]]]),
    ]


def test_acks_for_one_root_are_xor_combined_within_a_drain() -> None:
    box = AckOutbox([1, 2])
    box.ack(4, 0b0011)
    box.ack(4, 0b0101)
    box.ack(6, 0b1000)
    box.ack(5, 0b0001)
    box.ack(4, 0b1111)
    assert box.drain() == [
        (1, ACK_ACK, [{4: 0b0011 ^ 0b0101 ^ 0b1111, 6: 0b1000}]),
        (2, ACK_ACK, [{5: 0b0001}]),
    ]


def test_acks_are_not_combined_across_drains() -> None:
    box = AckOutbox([1])
    box.ack(4, 0x10)
    assert box.drain() == [(1, ACK_ACK, [{4: 0x10}])]
    box.ack(4, 0x10)
    assert box.drain() == [(1, ACK_ACK, [{4: 0x10}])]


def test_zero_valued_combined_acks_are_dropped() -> None:
    box = AckOutbox([1, 2])
    box.ack(4, 0x77)
    box.ack(4, 0x77)  # cancels
    box.ack(6, 0x01)
    box.ack(5, 0x33)
    box.ack(5, 0x33)  # acker 2 is left with nothing at all
    box.ack(8, 0)
    assert box.drain() == [(1, ACK_ACK, [{6: 0x01}])]
    assert box.drain() == []


def test_fails_are_one_tuple_each_with_the_wire_reason() -> None:
    box = AckOutbox([1, 2])
    r1 = FailReason("failed", "split", 3, "boom")
    box.fail(4, r1)
    box.fail(6, TIMEOUT)
    box.fail(5, r1)
    assert box.drain() == [
        (1, ACK_FAIL, [4, r1.to_wire()]),
        (1, ACK_FAIL, [6, TIMEOUT.to_wire()]),
        (2, ACK_FAIL, [5, r1.to_wire()]),
    ]


def test_resets_are_batched_per_acker() -> None:
    box = AckOutbox([1, 2])
    box.reset(4)
    box.reset(5)
    box.reset(6)
    box.reset(4)
    assert box.drain() == [(1, ACK_RESET, [[4, 6, 4]]), (2, ACK_RESET, [[5]])]


def test_drain_orders_streams_per_acker_and_empties_the_outbox() -> None:
    box = AckOutbox([1])
    box.reset(3)
    box.fail(3, TIMEOUT)
    box.ack(3, 0x5)
    box.init(3, 0x5, 2)
    assert [stream for _, stream, _ in box.drain()] == [ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET]
    assert box.drain() == []
    box.ack(3, 1)
    assert box.drain() == [(1, ACK_ACK, [{3: 1}])]
    assert box.drain() == []


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.one_of(
            st.integers(0, 2**64 - 1),
            st.integers(-(2**70), 2**70),
            # the compiled reader's digit edges (acker/_ids.h), and just past them
            st.sampled_from([2**30 - 1, 2**30, 2**60 - 1, 2**60, 2**64 - 1, 2**64, -(2**30)]),
        ),
        st.one_of(st.just(0), st.integers(0, 2**64 - 1)),
        max_size=30,
    ),
    st.lists(st.integers(1, 50), min_size=1, max_size=5, unique=True),
)
def test_the_compiled_split_of_acks_is_the_python_one(
    acks: dict[int, int], ackers: list[int]
) -> None:
    expected = outbox_module._split_acks(acks, ackers)
    assert all(v for part in expected.values() for v in part.values())
    assert sum(map(len, expected.values())) == sum(1 for v in acks.values() if v)
    compiled = outbox_module.load("acker._ledger")
    if compiled is None:
        pytest.skip("acker._ledger is not built (or SPARKSTORM_PURE_PYTHON is set)")
    got = compiled.split_acks(acks, tuple(ackers))
    assert got == expected
    assert [list(part) for part in got.values()] == [list(part) for part in expected.values()]


#: An int at or past the edges of a 64-bit id (and of the compiled reader's digits).
EDGE_INTS = st.sampled_from([0, 2**30, 2**60, 2**64 - 1, 2**64, -1, True, 1.0])
ANY_ID = st.one_of(st.integers(0, 2**64 - 1), st.integers(-(2**70), 2**70), EDGE_INTS)
JUNK = st.one_of(st.none(), st.text(max_size=2), st.lists(st.integers(), max_size=2), ANY_ID)


class IntKind(int):
    """An int subclass: not an exact int, so refused by both checks."""


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.dictionaries(ANY_ID, ANY_ID, max_size=6),
        st.lists(ANY_ID, max_size=6),
        st.lists(
            st.one_of(
                st.lists(ANY_ID, min_size=2, max_size=2).map(lambda rv: [*rv, 3]),
                st.lists(JUNK, max_size=4),
                st.tuples(ANY_ID, ANY_ID, st.integers()),
                st.just([1, 2, IntKind(3)]),
                st.just([IntKind(1), 2, 3]),
            ),
            max_size=4,
        ),
        JUNK,
    )
)
def test_the_compiled_ack_traffic_checks_are_the_python_ones(items: object) -> None:
    from acker import protocol

    compiled = outbox_module.load("acker._ledger")
    if compiled is None:
        pytest.skip("acker._ledger is not built (or SPARKSTORM_PURE_PYTHON is set)")
    assert compiled.u64_map(items) is protocol.py_u64_map(items)
    assert compiled.u64_list(items) is protocol.py_u64_list(items)
    assert compiled.inits_ok(items) is protocol.py_inits_ok(items)


def test_empty_outbox_drains_nothing() -> None:
    assert AckOutbox([1, 2, 3]).drain() == []


# -- AckerTask ----------------------------------------------------------------------------------


def deliver(box: AckOutbox, ackers: dict[int, AckerTask]) -> None:
    """Each drained entry is one tuple: feed it to its acker as a one-tuple group."""
    for dest, stream, values in box.drain():
        ackers[dest].receive(stream, [values])


def test_init_and_acks_in_one_batch_complete_a_tree() -> None:
    task = AckerTask(1, 30.0, 0.0)
    task.receive(ACK_INIT, [[[[100, 0x3 ^ 0x5, 8]]]])
    task.receive(ACK_ACK, [[{100: 0x3}], [{100: 0x5}]])
    assert task.drain() == [(8, ACK_ACK, [[100]])]
    assert task.drain() == []
    assert len(task.ledger) == 0


def test_acks_before_the_init_in_one_drain() -> None:
    task = AckerTask(1, 30.0, 0.0)
    task.receive(ACK_ACK, [[{100: 0x3, 200: 0x9}]])
    assert task.drain() == []
    task.receive(ACK_INIT, [[[[100, 0x3, 8], [200, 0x9 ^ 0x1, 8]]]])
    assert task.drain() == [(8, ACK_ACK, [[100]])]
    task.receive(ACK_ACK, [[{200: 0x1}]])
    assert task.drain() == [(8, ACK_ACK, [[200]])]


def test_outcomes_are_grouped_per_spout_task() -> None:
    task = AckerTask(1, 30.0, 0.0)
    task.receive(ACK_INIT, [[[[1, 0x1, 8], [2, 0x2, 9], [3, 0x3, 8]]]])
    task.receive(ACK_ACK, [[{1: 0x1, 2: 0x2, 3: 0x3}]])
    assert sorted(task.drain()) == [(8, ACK_ACK, [[1, 3]]), (9, ACK_ACK, [[2]])]


def test_fail_outcome_shape_keeps_the_wire_reason() -> None:
    task = AckerTask(1, 30.0, 0.0)
    reason = FailReason("failed", "split", 3, "boom").to_wire()
    task.receive(ACK_FAIL, [[100, reason]])  # before the init
    assert task.drain() == []
    task.receive(ACK_INIT, [[[[100, 0x7, 8]]]])
    out = task.drain()
    assert out == [(8, ACK_FAIL, [100, reason])]
    assert FailReason.from_wire(out[0][2][1]) == FailReason("failed", "split", 3, "boom")


def test_several_fails_are_several_tuples() -> None:
    task = AckerTask(1, 30.0, 0.0)
    task.receive(ACK_INIT, [[[[1, 0x1, 8], [2, 0x2, 8]]]])
    task.receive(ACK_FAIL, [[1, TIMEOUT.to_wire()], [2, ["failed", "b", 4, None]]])
    assert task.drain() == [
        (8, ACK_FAIL, [1, TIMEOUT.to_wire()]),
        (8, ACK_FAIL, [2, ["failed", "b", 4, None]]),
    ]


def test_resets_are_forwarded_to_the_spout_task_when_known() -> None:
    task = AckerTask(1, 30.0, 0.0)
    task.receive(ACK_INIT, [[[[1, 0x1, 8], [2, 0x2, 9]]]])
    task.receive(ACK_RESET, [[[1, 2, 77]]])  # 77: unknown root, not forwarded
    assert sorted(task.drain()) == [(8, ACK_RESET, [[1]]), (9, ACK_RESET, [[2]])]
    assert task.drain() == []


def test_acked_failed_and_reset_in_one_drain() -> None:
    task = AckerTask(1, 30.0, 0.0)
    task.receive(ACK_INIT, [[[[1, 0x1, 8], [2, 0x2, 8], [3, 0x3, 8]]]])
    task.receive(ACK_ACK, [[{1: 0x1}]])
    task.receive(ACK_FAIL, [[2, TIMEOUT.to_wire()]])
    task.receive(ACK_RESET, [[[3]]])
    assert task.drain() == [
        (8, ACK_ACK, [[1]]),
        (8, ACK_FAIL, [2, TIMEOUT.to_wire()]),
        (8, ACK_RESET, [[3]]),
    ]


def test_acker_task_expiry_delegates_to_its_ledger() -> None:
    task = AckerTask(1, 10.0, 0.0)
    task.receive(ACK_INIT, [[[[1, 0x1, 8]]]])
    assert task.expire(14.9) == 0
    assert task.expire(15.0) == 1
    assert task.ledger.expired == 1
    task.receive(ACK_ACK, [[{1: 0x1}]])
    assert task.drain() == []  # nobody to tell any more


def test_acker_task_without_expiry_keeps_trees() -> None:
    task = AckerTask(1, 10.0, 0.0, expire=False)
    task.receive(ACK_INIT, [[[[1, 0x1, 8]]]])
    assert task.expire(1e9) == 0
    task.receive(ACK_ACK, [[{1: 0x1}]])
    assert task.drain() == [(8, ACK_ACK, [[1]])]


def test_outbox_to_ackers_end_to_end_with_two_ackers() -> None:
    rng = random.Random(42)
    box = AckOutbox([1, 2])
    tasks = {1: AckerTask(1, 30.0, 0.0), 2: AckerTask(2, 30.0, 0.0)}
    trees = {}
    for _ in range(20):
        root = rng.getrandbits(64) or 1
        edges = [rng.getrandbits(64) or 1 for _ in range(3)]
        trees[root] = edges
        box.init(root, edges[0] ^ edges[1] ^ edges[2], 5)
        box.ack(root, edges[0])  # combined with the next one in the outbox
        box.ack(root, edges[1])
    deliver(box, tasks)
    assert [t.drain() for t in tasks.values()] == [[], []]
    for root, edges in trees.items():
        box.ack(root, edges[2])
    deliver(box, tasks)
    done = [
        (task_id, root)
        for task_id, t in tasks.items()
        for spout, stream, (roots,) in t.drain()
        for root in roots
        if spout == 5 and stream == ACK_ACK
    ]
    assert sorted(r for _, r in done) == sorted(trees)
    assert all(box.acker_of(root) == task_id for task_id, root in done)
