"""Unit tests for a spout task's pending trees on a simulated clock (plain floats).

Every test runs twice where ``acker._ledger`` was built: on its compiled completion loop
and (``pure``) on the Python one, :func:`acker.pending._complete_all`."""

from __future__ import annotations

from typing import Any

import pytest

from acker import pending as pending_module
from acker.pending import (
    AUTO_START_CAP,
    MIN_ADAPTIVE_CAP,
    QUEUE_SHARE,
    RATE_WINDOW,
    STALL_REFUSALS,
    PendingTrees,
)
from acker.rotating import TIMEOUT_BUCKETS as BUCKETS
from tests.unit.path_switch import compiled_and_pure
from topology.metrics import Histogram

pytestmark = pytest.mark.timeout(30)

TIMEOUT = 10.0  # 3 buckets: rotations every 5 s, timeouts between 10 s and 15 s
STEP = 0.125  # exact in binary, so simulated times never drift

completion_loop = compiled_and_pure(pending_module, "_ledger")


def test_constants() -> None:
    assert BUCKETS == 3
    assert MIN_ADAPTIVE_CAP == 16
    assert RATE_WINDOW == 0.1


# -- add / complete / fail --------------------------------------------------------------------


def test_add_and_complete_return_the_msg_id_and_measure_latency() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    assert p.mean_complete_latency == 0.0
    p.add(111, "m1", 1.0)
    p.add(222, {"id": 2}, 2.0)
    assert len(p) == 2
    assert p.complete(111, 1.5) == "m1"
    assert len(p) == 1
    assert p.completed == 1
    assert p.mean_complete_latency == pytest.approx(0.5)
    assert p.complete(222, 3.5) == {"id": 2}
    assert p.completed == 2
    assert p.latency_sum == pytest.approx(2.0)
    assert p.mean_complete_latency == pytest.approx(1.0)
    assert len(p) == 0


def test_complete_of_an_unknown_root_is_none_and_counts_nothing() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "m", 0.0)
    assert p.complete(2, 1.0) is None
    assert p.complete(1, 1.0) == "m"
    assert p.complete(1, 2.0) is None  # already completed
    assert p.completed == 1
    assert p.mean_complete_latency == pytest.approx(1.0)


def test_fail_returns_the_msg_id_once_and_is_not_a_completion() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "m", 0.0)
    assert p.fail(1) == "m"
    assert p.fail(1) is None
    assert p.fail(99) is None
    assert len(p) == 0
    assert p.completed == 0
    assert p.complete(1, 1.0) is None


def test_msg_ids_may_be_falsy_or_repeated() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, 0, 0.0)
    p.add(2, 0, 0.0)
    assert p.complete(1, 0.5) == 0
    assert p.fail(2) == 0


# -- timeouts ---------------------------------------------------------------------------------


def first_timeout(p: PendingTrees, start: float, limit: float = 100.0) -> tuple[float, list]:
    """Call ``expire`` every STEP from ``start``; the time and ids of the first timeouts."""
    t = start
    while t < limit:
        expired = p.expire(t)
        if expired:
            return t, expired
        t += STEP
    return t, []


@pytest.mark.parametrize("born", [0.0, STEP, 1.0, 2.5, 4.875, 5.0, 5.125, 7.5, 9.875, 12.0])
def test_timeout_fires_between_timeout_and_one_and_a_half_timeouts(born: float) -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    t = 0.0
    while t < born:  # the executor calls expire every turn
        assert p.expire(t) == []
        t += STEP
    p.expire(born)
    p.add(7, "m", born)
    fired, expired = first_timeout(p, born)
    assert expired == ["m"]
    assert TIMEOUT <= fired - born <= TIMEOUT * 1.5
    assert len(p) == 0


@pytest.mark.parametrize("born", [5.0, 10.0])
def test_add_just_before_a_due_rotation_still_waits_the_full_timeout(born: float) -> None:
    """The executor runs spouts before ``expire`` in a turn: add at t, then expire(t)."""
    p = PendingTrees(TIMEOUT, 0.0)
    t = 0.0
    while t < born:
        p.expire(t)
        t += STEP
    p.add(7, "m", born)  # the rotation due at ``born`` has not run yet
    fired, expired = first_timeout(p, born)
    assert expired == ["m"]
    assert fired - born >= TIMEOUT


def test_no_timeout_before_the_timeout() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "a", 0.0)
    t = 0.0
    while t < TIMEOUT:
        assert p.expire(t) == []
        t += STEP
    assert len(p) == 1


def test_timeouts_report_every_expired_msg_id() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    for root in range(1, 6):
        p.add(root, f"m{root}", 0.0)
    p.complete(3, 1.0)
    p.fail(4)
    assert p.expire(5.0) == []
    assert p.expire(10.0) == []
    assert sorted(p.expire(15.0)) == ["m1", "m2", "m5"]
    assert len(p) == 0
    assert p.complete(1, 16.0) is None  # a timed-out tree completing late is unknown


def test_long_stall_times_out_everything_once() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "a", 0.0)
    p.add(2, "b", 0.0)
    assert sorted(p.expire(1000.0)) == ["a", "b"]
    assert p.expire(2000.0) == []


def test_reset_postpones_the_timeout() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "reset", 0.0)
    p.add(2, "plain", 0.0)
    assert p.expire(9.0) == []
    p.reset(1)  # at 9.0
    assert p.expire(15.0) == ["plain"]
    assert p.expire(19.875) == []
    assert p.expire(20.0) == ["reset"]


def test_repeated_resets_keep_a_tree_alive() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "m", 0.0)
    t = 0.0
    while t < 100.0:
        assert p.expire(t) == []
        if t % 4 == 0:
            p.reset(1)
        t += STEP
    assert p.complete(1, t) == "m"


def test_reset_of_an_unknown_root_is_harmless() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.reset(12345)
    assert len(p) == 0
    assert p.expire(15.0) == []


def test_timeouts_disabled_never_expire() -> None:
    p = PendingTrees(TIMEOUT, 0.0, timeouts_enabled=False)
    p.add(1, "m", 0.0)
    for t in (5.0, 10.0, 15.0, 1e6, 1e12):
        assert p.expire(t) == []
    assert len(p) == 1
    assert p.complete(1, 1e12) == "m"


def test_tree_added_while_a_rotation_is_overdue_does_not_time_out_early() -> None:
    # Nothing called expire between 0 and 9.9 (one slow executor turn): the rotation due at
    # 5.0 is overdue when the spout emits at 9.9.  The executor's turn order is exactly
    # this: spouts run (add at the turn's time), then _periodic calls expire(now).
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "m", 9.9)
    assert p.expire(9.9) == []
    assert p.expire(10.0) == []
    t = 10.0
    while t < 9.9 + TIMEOUT:
        assert p.expire(t) == [], f"timed out {t - 9.9:.2f}s after the emit (timeout {TIMEOUT})"
        t += STEP


def test_tree_added_after_a_long_stall_is_not_timed_out_at_once() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.add(1, "old", 0.0)
    p.add(2, "new", 50.0)  # spouts run before expire in the executor's turn
    assert p.expire(50.0) == ["old"]


# -- max pending --------------------------------------------------------------------------------


def test_hard_cap_is_honoured_by_can_emit() -> None:
    p = PendingTrees(TIMEOUT, 0.0, max_pending=3, adaptive=False)
    assert p.cap == 3
    assert p.adaptive_cap is None
    for root in range(1, 4):
        assert p.can_emit()
        p.add(root, root, 0.0)
    assert not p.can_emit()
    p.complete(2, 1.0)
    assert p.can_emit()
    p.add(4, 4, 1.0)
    assert not p.can_emit()
    p.fail(4)
    assert p.can_emit()


def test_no_cap_at_all_without_max_pending_and_adaptive() -> None:
    p = PendingTrees(TIMEOUT, 0.0, max_pending=None, adaptive=False)
    assert p.cap is None
    assert p.adaptive_cap is None
    for root in range(1, 1001):
        p.add(root, root, 0.0)
    assert p.can_emit()


def test_adaptive_false_ignores_update_rate() -> None:
    p = PendingTrees(TIMEOUT, 0.0, max_pending=50, adaptive=False)
    for i in range(1, 1001):
        p.add(i, i, i * 0.001)
        p.complete(i, i * 0.001)
        p.update_rate(i * 0.001)
    assert p.adaptive_cap is None
    assert p.cap == 50


def test_adaptive_cap_starts_at_the_floor() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    assert p.adaptive_cap == MIN_ADAPTIVE_CAP
    assert p.cap == MIN_ADAPTIVE_CAP
    for root in range(MIN_ADAPTIVE_CAP):
        assert p.can_emit()
        p.add(root, root, 0.0)
    assert not p.can_emit()


@pytest.mark.parametrize(("max_pending", "cap"), [(5, 5), (1000, MIN_ADAPTIVE_CAP)])
def test_cap_is_the_smaller_of_max_pending_and_the_adaptive_cap(max_pending: int, cap: int) -> None:
    p = PendingTrees(TIMEOUT, 0.0, max_pending=max_pending)
    assert p.cap == cap
    for root in range(cap):
        p.add(root, root, 0.0)
    assert not p.can_emit()


def run_at_rate(
    p: PendingTrees, rate: float, start: float, seconds: float, first_root: int = 1
) -> list[int]:
    """Complete trees at a fixed ``rate`` on a simulated clock, sampling after each one.

    Returns the adaptive cap after every completion.
    """
    caps = []
    n = int(rate * seconds)
    for i in range(1, n + 1):
        t = start + i / rate
        root = first_root + i
        p.add(root, root, t)
        p.complete(root, t)
        p.update_rate(t)
        caps.append(p.adaptive_cap)
    return caps


def test_update_rate_waits_for_a_full_window() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    for root in range(1, 1001):
        p.add(root, root, 0.0)
        p.complete(root, 0.05)
    p.update_rate(0.05)
    p.update_rate(RATE_WINDOW / 2)
    assert p.adaptive_cap == MIN_ADAPTIVE_CAP
    p.update_rate(RATE_WINDOW)
    assert p.adaptive_cap == 2 * MIN_ADAPTIVE_CAP  # 10000/s would allow 50000: doubles only


def test_adaptive_cap_grows_at_most_twofold_per_window_while_completions_are_fast() -> None:
    p = PendingTrees(30.0, 0.0)
    caps = [p.adaptive_cap]
    t = 0.0
    root = 0
    for _ in range(12):
        for _ in range(5000):  # 40000 completions/s: Little's bound is 600000
            root += 1
            p.add(root, root, t)
            p.complete(root, t)
        t += STEP  # one sampling window (>= RATE_WINDOW; exact in binary)
        p.update_rate(t)
        caps.append(p.adaptive_cap)
    assert caps == [MIN_ADAPTIVE_CAP * 2**k for k in range(13)]


def test_growth_is_bounded_per_window_even_with_frequent_sampling() -> None:
    p = PendingTrees(30.0, 0.0)
    caps = run_at_rate(p, 100_000.0, 0.0, 1.0)
    windows = [MIN_ADAPTIVE_CAP, *caps]
    for before, after in zip(windows, windows[1:]):
        assert after <= 2 * before
    # ~10 windows in a second: at most 2**10 growth
    assert max(caps) <= MIN_ADAPTIVE_CAP * 2**11
    assert max(caps) >= MIN_ADAPTIVE_CAP * 2**8


@pytest.mark.parametrize(("rate", "timeout"), [(200.0, 10.0), (50.0, 30.0), (1000.0, 30.0)])
def test_adaptive_cap_converges_near_rate_times_the_queue_share_of_the_timeout(
    rate: float, timeout: float
) -> None:
    p = PendingTrees(timeout, 0.0)
    caps = run_at_rate(p, rate, 0.0, 5.0)
    target = rate * timeout * QUEUE_SHARE
    assert caps[-1] == pytest.approx(target, rel=0.05)
    tail = caps[-len(caps) // 4 :]
    assert all(c == pytest.approx(target, rel=0.05) for c in tail)
    assert max(caps) <= target * 1.05  # never overshoots Little's bound


def test_adaptive_cap_follows_a_rate_drop() -> None:
    p = PendingTrees(10.0, 0.0)
    run_at_rate(p, 1000.0, 0.0, 3.0)
    assert p.adaptive_cap == pytest.approx(1000 * 10 * QUEUE_SHARE, rel=0.05)
    caps = run_at_rate(p, 100.0, 3.0, 3.0, first_root=10**6)
    assert caps[-1] == pytest.approx(100 * 10 * QUEUE_SHARE, rel=0.05)


@pytest.mark.parametrize("rate", [0.0, 0.5, 2.0])
def test_adaptive_cap_never_drops_below_the_floor(rate: float) -> None:
    p = PendingTrees(10.0, 0.0)  # 2/s * 10 s * QUEUE_SHARE = 5 < 16
    if rate:
        caps = run_at_rate(p, rate, 0.0, 20.0)
        assert caps and min(caps) == MIN_ADAPTIVE_CAP
    t = 0.0
    for _ in range(50):  # idle windows: no completions at all
        t += RATE_WINDOW * 2
        p.update_rate(100.0 + t)
        assert p.adaptive_cap == MIN_ADAPTIVE_CAP
    assert p.cap == MIN_ADAPTIVE_CAP


def test_adaptive_cap_drops_back_to_the_floor_when_completions_stop() -> None:
    p = PendingTrees(10.0, 0.0)
    run_at_rate(p, 1000.0, 0.0, 2.0)
    assert p.adaptive_cap > 1000
    t = 2.0
    for _ in range(40):
        t += RATE_WINDOW
        p.update_rate(t)
    assert p.adaptive_cap == MIN_ADAPTIVE_CAP


def test_adaptive_cap_never_shrinks_below_the_trees_in_flight() -> None:
    p = PendingTrees(10.0, 0.0)
    run_at_rate(p, 1000.0, 0.0, 2.0)
    high = p.adaptive_cap
    assert high is not None and high > 1000
    for root in range(10**6, 10**6 + 600):  # 600 trees out, none completing
        p.add(root, root, 2.0)
    t = 2.0
    for _ in range(40):
        t += RATE_WINDOW
        p.update_rate(t)
        assert p.adaptive_cap >= 600  # falls with the rate, but not below what is out
    assert p.adaptive_cap == 600  # held there, not at the floor
    for root in range(10**6, 10**6 + 600):  # they finish: the cap may fall again
        p.complete(root, t)
    for _ in range(40):
        t += RATE_WINDOW
        p.update_rate(t)
    assert p.adaptive_cap == MIN_ADAPTIVE_CAP


def test_max_pending_caps_the_adaptive_cap() -> None:
    p = PendingTrees(10.0, 0.0, max_pending=100)
    run_at_rate(p, 1000.0, 0.0, 3.0)
    assert p.adaptive_cap > 100
    assert p.cap == 100


def test_fail_all_forgets_every_pending_tree_oldest_first() -> None:
    p = PendingTrees(timeout=30.0, now=0.0)
    p.add(1, "a", now=0.0)
    p.add(2, "b", now=15.0)
    p.add(3, "c", now=16.0)
    p.expire(16.0)  # a rotation: "a" is older than the other two
    assert p.fail_all() == ["a", "b", "c"]
    assert len(p) == 0
    assert p.complete(2, now=17.0) is None  # a late ack of a failed tree counts nothing
    assert p.completed == 0


def timed_pending() -> tuple[PendingTrees, Histogram]:
    """Pending trees whose complete latencies go to a histogram with bounds 0.5 and 1 s."""
    p = PendingTrees(TIMEOUT, 0.0)
    p.latencies = histogram = Histogram((0.5, 1.0))
    return p, histogram


def test_complete_all_appends_known_msg_ids_in_order_and_counts_their_latency() -> None:
    p, histogram = timed_pending()
    p.add(1, "a", 0.0)
    p.add(2, "b", 0.5)
    p.add(3, "c", 0.75)
    p.expire(6.0)  # a rotation: trees 1-3 move to an older bucket, still pending
    p.add(4, "d", 6.0)
    done: list[Any] = ["earlier"]
    p.complete_all([4, 99, 1, 3, 1], 6.25, done)  # 99: unknown, 1: twice
    assert done == ["earlier", "d", "a", "c"]  # appended to what was there
    assert len(p) == 1
    assert p.completed == 3
    assert p.latency_sum == pytest.approx(0.25 + 6.25 + 5.5)
    assert histogram.counts == [1, 0, 2]
    assert histogram.sum == pytest.approx(p.latency_sum)
    p.complete_all([], 7.0, done)
    assert len(done) == 4
    assert p.complete(2, 7.0) == "b"


def test_trees_completed_before_a_malformed_root_are_kept_and_counted() -> None:
    p, histogram = timed_pending()
    p.add(11, "m11", 0.0)
    p.add(12, "m12", 0.0)
    done: list[Any] = []
    with pytest.raises(TypeError):
        p.complete_all([11, [1], 12], 0.25, done)  # a list is no root: hostile traffic
    assert done == ["m11"]
    assert (p.completed, p.latency_sum, histogram.counts, histogram.sum) == (
        1,
        0.25,
        [1, 0, 0],
        0.25,
    )
    assert p.complete(12, 0.5) == "m12"


# -- the auto cap (topology.max.spout.pending.auto) ---------------------------------------


def _fill(p: PendingTrees, first: int, last: int, at: float) -> None:
    for root in range(first, last + 1):
        p.add(root, root, at)


def test_auto_cap_starts_at_a_thousand_and_holds_while_trees_turn_over_quickly() -> None:
    p = PendingTrees(TIMEOUT, 0.0, adaptive=False, auto=True)
    assert p.cap == AUTO_START_CAP == 1_000
    _fill(p, 1, AUTO_START_CAP, 0.0)
    assert not p.can_emit()
    # each window a whole cap's worth completes and is replaced: the cap is what binds,
    # and it stays (a word count at full speed, its trees a few ms old)
    t, root = 0.0, AUTO_START_CAP
    for _ in range(20):
        t += RATE_WINDOW
        p.complete_all(range(root - AUTO_START_CAP + 1, root + 1), t, [])
        _fill(p, root + 1, root + AUTO_START_CAP, t)
        root += AUTO_START_CAP
        p.update_rate(t)
        assert p.cap == AUTO_START_CAP
    assert not p.can_emit()


def test_auto_cap_doubles_while_trees_outlive_the_window_and_shrinks_back_once_they_do_not() -> (
    None
):
    p = PendingTrees(TIMEOUT, 0.0, adaptive=False, auto=True)
    _fill(p, 1, AUTO_START_CAP, 0.0)
    p.update_rate(RATE_WINDOW / 2)  # not a whole window yet
    assert p.cap == AUTO_START_CAP
    p.complete_all(range(1, 101), 0.05, [])  # 100 of 1,000 completed: slow trees
    _fill(p, 1_001, 1_100, 0.05)
    p.update_rate(RATE_WINDOW)
    assert p.cap == 2 * AUTO_START_CAP and p.can_emit()
    p.update_rate(2 * RATE_WINDOW)  # below the new cap: nothing waits on it, no growth
    assert p.cap == 2 * AUTO_START_CAP
    _fill(p, 1_101, 2_100, 0.25)
    p.update_rate(3 * RATE_WINDOW)
    assert p.cap == 4 * AUTO_START_CAP
    # everything completes; what is pending (300) turns over within a window: back down,
    # a halving per window, never below the start
    p.complete_all(range(101, 2_101), 0.35, [])
    _fill(p, 3_000, 3_299, 0.35)
    caps = []
    for w in range(4):  # windows of 0.25 s (exact in binary)
        t = 0.5 + w * 0.25
        p.complete_all(range(3_000 + w * 300, 3_300 + w * 300), t, [])
        _fill(p, 3_300 + w * 300, 3_599 + w * 300, t)
        p.update_rate(t)
        caps.append(p.cap)
    assert caps == [2 * AUTO_START_CAP, AUTO_START_CAP, AUTO_START_CAP, AUTO_START_CAP]


def test_auto_cap_grows_without_the_clock_when_nothing_completes() -> None:
    # a join on a manual clock: time never moves, the spout asks every turn
    p = PendingTrees(TIMEOUT, 0.0, adaptive=False, auto=True)
    _fill(p, 1, AUTO_START_CAP, 0.0)
    answers = [p.can_emit() for _ in range(STALL_REFUSALS)]
    assert answers == [False] * (STALL_REFUSALS - 1) + [True]
    assert p.cap == 2 * AUTO_START_CAP
    # a completion in between starts the count again
    _fill(p, AUTO_START_CAP + 1, 2 * AUTO_START_CAP, 0.0)
    for _ in range(STALL_REFUSALS - 1):
        assert not p.can_emit()
    p.complete(1, 0.0)
    p.add(1, 1, 0.0)
    assert not p.can_emit()
    assert p.cap == 2 * AUTO_START_CAP


def test_auto_cap_gives_way_to_a_fixed_cap_and_to_the_adaptive_one() -> None:
    assert PendingTrees(TIMEOUT, 0.0, max_pending=50, adaptive=False, auto=True).cap == 50
    assert PendingTrees(TIMEOUT, 0.0, adaptive=False).cap is None
    both = PendingTrees(TIMEOUT, 0.0, adaptive=True, auto=True)
    assert both.auto_cap is None and both.cap == MIN_ADAPTIVE_CAP  # the opt-in governs


# -- the completion loop on hostile roots and odd histograms ----------------------------------


def test_an_unhashable_root_raises_after_the_trees_before_it_are_counted() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.latencies = Histogram((0.5, 1.0, 2.0))
    p.add(1, "a", 0.0)
    p.add(2, "b", 0.0)
    done: list[Any] = []
    with pytest.raises(TypeError):
        p.complete_all([1, [2], 2], 1.0, done)
    assert done == ["a"]
    assert p.completed == 1
    assert p.latency_sum == pytest.approx(1.0)
    assert p.latencies.counts == [0, 1, 0, 0]
    assert p.latencies.sum == pytest.approx(1.0)
    assert len(p) == 1  # "b" is still pending


@pytest.mark.parametrize(
    ("latency", "bucket"), [(0.0, 0), (0.5, 0), (0.75, 1), (1.0, 1), (2.0, 2), (9.0, 3)]
)
def test_latencies_land_in_the_bucket_bisect_left_picks(latency: float, bucket: int) -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    p.latencies = Histogram((0.5, 1.0, 2.0))
    p.add(7, "m", 1.0)
    p.complete_all([7], 1.0 + latency, [])
    expected = [0, 0, 0, 0]
    expected[bucket] = 1
    assert p.latencies.counts == expected


def test_roots_may_be_any_iterable_and_unknown_ones_are_skipped() -> None:
    p = PendingTrees(TIMEOUT, 0.0)
    for root in (1, 2, 3):
        p.add(root, f"m{root}", 0.0)
    done: list[Any] = []
    p.complete_all(iter([3, 99, 1]), 0.5, done)
    p.complete_all((2,), 0.5, done)
    assert done == ["m3", "m1", "m2"]
    assert p.completed == 3


def test_room_is_what_the_cap_leaves() -> None:
    p = PendingTrees(TIMEOUT, 0.0, max_pending=5, adaptive=False)
    assert p.room() == 5
    for root in range(1, 8):
        p.add(root, root, 0.0)
    assert p.room() == -2  # a next_tuple may start several trees past the cap
    assert not p.can_emit()
    assert PendingTrees(TIMEOUT, 0.0, adaptive=False).room() is None  # no cap
