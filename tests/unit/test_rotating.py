"""Unit tests for Storm's RotatingMap and its RotationClock (pure, no clock of their own)."""

from __future__ import annotations

import pytest

from acker.rotating import RotatingMap, RotationClock

pytestmark = pytest.mark.timeout(30)


# -- RotatingMap ----------------------------------------------------------------------------


@pytest.mark.parametrize("buckets", [0, 1, -3])
def test_needs_at_least_two_buckets(buckets: int) -> None:
    with pytest.raises(ValueError, match="at least 2 buckets"):
        RotatingMap(buckets)


def test_put_get_contains_len_iter() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    assert len(m) == 0
    assert m.get("a") is None
    assert "a" not in m
    m.put("a", 1)
    m.put("b", 2)
    assert m.get("a") == 1
    assert m.get("b") == 2
    assert "a" in m and "b" in m
    assert "c" not in m
    assert len(m) == 2
    assert sorted(m) == ["a", "b"]


def test_put_replaces_and_never_duplicates_a_key() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("a", 1)
    m.rotate()  # "a" is now in an older bucket
    m.put("a", 2)
    assert len(m) == 1
    assert list(m) == ["a"]
    assert m.get("a") == 2
    # the re-put moved it to the newest bucket: it survives two more rotations
    assert m.rotate() == {}
    assert m.rotate() == {}
    assert m.rotate() == {"a": 2}


def test_pop() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("a", 1)
    m.rotate()
    m.put("b", 2)
    assert m.pop("a") == 1
    assert m.pop("a") is None
    assert "a" not in m
    assert m.pop("missing") is None
    assert len(m) == 1
    assert m.get("b") == 2


def test_values_may_be_falsy() -> None:
    m: RotatingMap[str, int] = RotatingMap(2)
    m.put("zero", 0)
    assert "zero" in m
    assert m.get("zero") == 0
    assert m.touch("zero") is True
    assert m.pop("zero") == 0


def test_rotate_returns_only_the_oldest_bucket() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("old", 1)
    m.rotate()
    m.put("mid", 2)
    m.rotate()
    m.put("new", 3)
    assert len(m) == 3
    assert m.rotate() == {"old": 1}
    assert sorted(m) == ["mid", "new"]
    assert m.rotate() == {"mid": 2}
    assert m.rotate() == {"new": 3}
    assert m.rotate() == {}
    assert len(m) == 0


@pytest.mark.parametrize("buckets", [2, 3, 5])
def test_untouched_entry_survives_buckets_minus_one_rotations(buckets: int) -> None:
    """An entry lives through ``buckets - 1`` rotations and is returned by the next one.

    With the rotation interval ``timeout / (buckets - 1)`` that is what makes an entry expire
    between ``timeout`` and ``timeout * buckets / (buckets - 1)`` after its insert.
    """
    m: RotatingMap[str, str] = RotatingMap(buckets)
    m.put("k", "v")
    for _ in range(buckets - 1):
        assert m.rotate() == {}
        assert m.get("k") == "v"
    assert m.rotate() == {"k": "v"}
    assert "k" not in m
    assert len(m) == 0


@pytest.mark.parametrize("buckets", [2, 3, 5])
def test_touch_restarts_the_expiry(buckets: int) -> None:
    m: RotatingMap[str, str] = RotatingMap(buckets)
    m.put("k", "v")
    for _ in range(buckets - 1):
        m.rotate()
    assert m.touch("k") is True  # in the oldest bucket, one rotation from expiry
    for _ in range(buckets - 1):
        assert m.rotate() == {}
    assert m.rotate() == {"k": "v"}


def test_touch_of_a_missing_key_is_false_and_inserts_nothing() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    assert m.touch("nope") is False
    assert len(m) == 0
    assert "nope" not in m


def test_touch_keeps_the_value_and_the_count() -> None:
    m: RotatingMap[str, list[int]] = RotatingMap(3)
    value = [1, 2]
    m.put("k", value)
    m.rotate()
    m.touch("k")
    m.touch("k")  # touching an entry already in the newest bucket is harmless
    assert len(m) == 1
    assert m.get("k") is value


# -- RotationClock --------------------------------------------------------------------------


def test_rotation_interval_is_timeout_over_buckets_minus_one() -> None:
    assert RotationClock(10.0, 3, 0.0).interval == 5.0
    assert RotationClock(10.0, 2, 0.0).interval == 10.0
    assert RotationClock(12.0, 5, 100.0).interval == 3.0
    assert RotationClock(12.0, 5, 100.0).next_rotation == 103.0


def test_due_counts_rotations_on_a_fixed_grid() -> None:
    clock = RotationClock(10.0, 3, 0.0)  # rotations due at 5, 10, 15, ...
    assert clock.due(0.0) == 0
    assert clock.due(4.999) == 0
    assert clock.due(5.0) == 1
    assert clock.due(5.0) == 0  # already counted
    assert clock.due(9.999) == 0
    assert clock.due(10.0) == 1
    assert clock.due(27.0) == 3  # 15, 20, 25 after a stall
    assert clock.due(29.999) == 0  # the grid is kept: next one at 30, not 27 + 5
    assert clock.due(30.0) == 1
    assert clock.due(30.1) == 0


def test_due_after_a_long_stall_reports_every_missed_rotation() -> None:
    clock = RotationClock(1.0, 3, 0.0)  # every 0.5 s
    assert clock.due(100.0) == 200
    assert clock.due(100.25) == 0
    assert clock.due(100.5) == 1


def test_due_with_a_nonzero_start() -> None:
    clock = RotationClock(30.0, 3, 1000.0)
    assert clock.due(1014.9) == 0
    assert clock.due(1015.0) == 1
    assert clock.due(1029.9) == 0
    assert clock.due(1045.0) == 2


def test_clear_empties_every_bucket_and_returns_the_values_oldest_first() -> None:
    m: RotatingMap[str, int] = RotatingMap(3)
    m.put("old", 1)
    m.rotate()
    m.put("new", 2)
    assert m.clear() == [1, 2]
    assert len(m) == 0 and "old" not in m
