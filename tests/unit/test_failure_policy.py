"""The failure policy's decisions and the parking of inputs waiting for another attempt, as
pure logic: times are given, nothing sleeps (docs/ERRORS.md)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from topology import config as cfg
from topology.constants import DEAD_LETTER_FIELDS
from topology.errors import ConfigError, DataError, WindowError
from topology.failure_policy import (
    DEFAULT_POLICY,
    MAX_ERROR_CHARS,
    FailurePolicy,
    dead_letter,
    one_line,
)
from topology.runtime.net.codec import encodable
from topology.runtime.tasks.failures import Parking
from topology.tuple import Tuple, TupleSource

pytestmark = pytest.mark.timeout(30)

SOURCE = TupleSource("words", 3, "default", ("word",))


# -- the policy -----------------------------------------------------------------------------


def test_the_pause_doubles_from_the_first_up_to_the_cap_then_the_attempts_are_spent() -> None:
    policy = FailurePolicy(retries=5, backoff_secs=0.1, backoff_max_secs=0.5)
    pauses = [policy.next_attempt_in(n) for n in range(1, 7)]
    assert pauses == [0.1, 0.2, 0.4, 0.5, 0.5, None]


def test_without_retries_the_first_failure_is_the_last() -> None:
    assert FailurePolicy(retries=0).next_attempt_in(1) is None


def test_a_huge_attempt_count_neither_overflows_nor_passes_the_cap() -> None:
    policy = FailurePolicy(retries=10**6, backoff_secs=1.0, backoff_max_secs=30.0)
    assert policy.next_attempt_in(10**5) == 30.0


def test_the_defaults_are_three_retries_then_the_dead_letter_stream() -> None:
    assert DEFAULT_POLICY == FailurePolicy.from_conf({})
    assert DEFAULT_POLICY.retries == 3 and DEFAULT_POLICY.dead_letters
    spent = [DEFAULT_POLICY.next_attempt_in(n) for n in (1, 2, 3, 4)]
    assert spent == [0.1, 0.2, 0.4, None]


def test_the_policy_is_read_from_a_components_conf() -> None:
    conf = {
        cfg.ERRORS_RETRIES: 1,
        cfg.ERRORS_BACKOFF_MS: 250,
        cfg.ERRORS_BACKOFF_MAX_MS: 250,
        cfg.ERRORS_ACTION: "fail",
    }
    policy = FailurePolicy.from_conf(conf)
    assert policy == FailurePolicy(1, 0.25, 0.25, "fail")
    assert not policy.dead_letters


def test_a_pause_ends_within_half_the_message_timeout_when_timeouts_are_on() -> None:
    conf = {cfg.ERRORS_BACKOFF_MAX_MS: 30_000, cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30}
    assert FailurePolicy.from_conf(conf).backoff_max_secs == 15.0
    off = {**conf, cfg.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: False}
    assert FailurePolicy.from_conf(off).backoff_max_secs == 30.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (cfg.ERRORS_RETRIES, -1),
        (cfg.ERRORS_RETRIES, 1.5),
        (cfg.ERRORS_RETRIES, True),
        (cfg.ERRORS_BACKOFF_MS, -5),
        (cfg.ERRORS_ACTION, "skip"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=key):
        cfg.resolve({key: value})


def test_every_key_may_be_set_per_component() -> None:
    keys = {cfg.ERRORS_RETRIES, cfg.ERRORS_BACKOFF_MS, cfg.ERRORS_BACKOFF_MAX_MS, cfg.ERRORS_ACTION}
    assert keys <= cfg.COMPONENT_KEYS


def test_a_window_error_is_a_data_error() -> None:
    assert issubclass(WindowError, DataError)


# -- a dead letter --------------------------------------------------------------------------


def test_a_dead_letter_has_every_field_in_order() -> None:
    try:
        raise ValueError("no\nnumber")
    except ValueError as exc:
        error = exc
    letter = dead_letter(
        component="split",
        task=4,
        source="words",
        stream="default",
        values=("x", 1),
        error=error,
        attempts=4,
        time=12.5,
    )
    assert len(letter) == len(DEAD_LETTER_FIELDS)
    named = dict(zip(DEAD_LETTER_FIELDS, letter))
    assert named["values"] == ["x", 1] and named["error"] == "ValueError: no number"
    assert named["traceback"].startswith("Traceback") and "no\nnumber" in named["traceback"]
    assert (named["component"], named["task"], named["attempts"]) == ("split", 4, 4)


@given(st.text(st.characters(exclude_categories=())), st.booleans())
@example("name \udcff", True)
@example("\ud800", False)
def test_a_dead_letters_texts_always_encode(message: str, raised: bool) -> None:
    """An error text with a lone surrogate (``surrogateescape`` decoding leaves them) is
    escaped, not a dead letter no wire can carry (its input would hang, never acked)."""
    error: BaseException | str = message
    if raised:
        try:
            raise ValueError(message)
        except ValueError as exc:
            error = exc
    letter = dead_letter(
        component="c", task=1, source="s", stream="", values=[1], error=error, attempts=1, time=0.0
    )
    assert all(encodable(v) for v in letter)


def test_the_one_line_error_is_clipped() -> None:
    text = one_line(RuntimeError("x" * 10_000))
    assert len(text) <= MAX_ERROR_CHARS and text.startswith("RuntimeError: xxx")
    assert one_line(KeyError()) == "KeyError" and one_line("plain text") == "plain text"


# -- parking --------------------------------------------------------------------------------


def tup(n: int) -> Tuple:
    return Tuple([f"w{n}"], SOURCE)


def test_inputs_come_back_when_due_in_due_order_and_not_before() -> None:
    parking = Parking()
    owner: Any = object()
    parking.park(2.0, 7, tup(1), 1, owner)
    parking.park(1.0, 8, tup(2), 2, owner)
    parking.park(1.0, 7, tup(3), 1, owner)
    assert parking.next_due == 1.0 and len(parking) == 3
    assert parking.take_due(0.5) == []
    first = parking.take_due(1.0)
    assert [p.tup.values for p in first] == [["w2"], ["w3"]]  # equal times: arrival order
    assert (parking.holds(7), parking.holds(8)) == (1, 0)
    assert [p.tup.values for p in parking.take_due(5.0)] == [["w1"]]
    assert parking.next_due == math.inf and not parking


def test_a_task_is_taken_apart_hurried_and_dropped() -> None:
    parking = Parking()
    owner: Any = object()
    for n, (due, task) in enumerate([(5.0, 1), (3.0, 2), (9.0, 1)]):
        parking.park(due, task, tup(n), 1, owner)
    parking.hurry(1)
    assert [p.task for p in parking.take_due(0.0)] == [1, 1]  # both due now, in their order
    parking.park(4.0, 1, tup(9), 2, owner)
    [taken] = parking.take_task(1)
    assert taken.attempts == 2 and parking.holds(1) == 0 and parking.holds(2) == 1
    parking.put_back(taken)
    assert parking.holds(1) == 1
    assert parking.drop() == 2 and len(parking) == 0 and parking.holds(2) == 0


def test_parking_is_full_from_its_limit_until_below_half() -> None:
    parking = Parking()
    owner: Any = object()
    for n in range(10):
        assert not parking.full(10)
        parking.park(float(n), 1, tup(n), 1, owner)
    assert parking.full(10)
    parking.take_due(4.0)  # 5 left: still full ...
    assert len(parking) == 5 and parking.full(10)
    parking.take_due(5.0)  # ... 4 left: below half
    assert not parking.full(10)


def test_take_due_stops_at_its_limit() -> None:
    parking = Parking()
    owner: Any = object()
    for n in range(10):
        parking.park(float(n), 1, tup(n), 1, owner)
    assert len(parking.take_due(100.0, limit=4)) == 4 and len(parking) == 6


class NoRoom:
    """The failures of an async task at capacity: no attempt can be made now."""

    def retry(self, parked: Any) -> bool:
        return False


def test_an_attempt_that_cannot_be_made_now_waits_instead_of_spinning() -> None:
    parking = Parking()
    owner: Any = NoRoom()
    parking.park(1.0, 1, tup(1), 1, owner)
    assert parking.run_due(1.0, 10, lambda task: None) is False  # nothing ran: not busy
    assert len(parking) == 1 and parking.next_due > 1.0  # due again a little later


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("park"), st.floats(0, 100), st.integers(0, 3)),
            st.tuples(st.just("take"), st.floats(0, 100), st.just(0)),
            st.tuples(st.just("task"), st.just(0.0), st.integers(0, 3)),
            st.tuples(st.just("hurry"), st.just(0.0), st.integers(0, 3)),
        ),
        max_size=60,
    )
)
def test_parking_never_loses_nor_invents_an_input(ops: list[tuple[str, float, int]]) -> None:
    """Whatever is done to it, every input parked comes out once (taken when due, taken by
    its task, or left parked), each task's count stays true, and due ones come in order."""
    parking, owner = Parking(), object()
    parked: dict[int, int] = {}  # id -> task
    out: list[int] = []
    for n, (op, at, task) in enumerate(ops):
        if op == "park":
            parking.park(at, task, tup(n), 1, owner)  # type: ignore[arg-type]
            parked[n] = task
        elif op == "take":
            taken = parking.take_due(at)
            assert all(p.due <= at for p in taken)
            assert [p.due for p in taken] == sorted(p.due for p in taken)
            out.extend(int(p.tup.values[0][1:]) for p in taken)
        elif op == "task":
            taken = parking.take_task(task)
            assert {p.task for p in taken} <= {task}
            out.extend(int(p.tup.values[0][1:]) for p in taken)
        else:
            parking.hurry(task)
        left = {p: t for p, t in parked.items() if p not in out}
        assert len(parking) == len(left)
        for t in range(4):
            assert parking.holds(t) == sum(1 for v in left.values() if v == t)
    assert len(out) == len(set(out))


def test_the_modules_examples_run() -> None:
    import doctest

    from topology import failure_policy

    assert doctest.testmod(failure_policy).failed == 0
