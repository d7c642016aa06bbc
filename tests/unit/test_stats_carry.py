"""Unit tests for statistics carried over a worker's relaunch (pure data)."""

from __future__ import annotations

from typing import Any

import pytest

from topology.stats.carry import MAX_LUMPS, newest, pruned, save_reply, stand_ins, with_carry
from topology.stats.rolling import ALL_TIME, StatsRecorder

pytestmark = pytest.mark.timeout(10)


def windows(acked: int, executed: int = 0) -> dict[str, dict[str, Any]]:
    """Every window of a recorder that saw ``acked`` acks at t=10 (read at t=10)."""
    recorder = StatsRecorder(0.0)
    recorder.record({"acked": acked, "executed": executed, "execute_secs": 1.0}, 10.0)
    return recorder.all_windows(10.0)


def test_a_lump_counts_in_every_window_until_it_is_older_than_the_window() -> None:
    own = windows(5)
    lumps = [[1000.0, windows(100)]]
    now = with_carry(own, lumps, 1000.0 + 599.0)
    assert now["600"]["acked"] == 105 and now[ALL_TIME]["acked"] == 105
    later = with_carry(own, lumps, 1000.0 + 600.0)
    assert later["600"]["acked"] == 5  # left the 10-minute window
    assert later["10800"]["acked"] == 105 and later[ALL_TIME]["acked"] == 105
    years = with_carry(own, lumps, 1000.0 + 10**8)
    assert years[ALL_TIME]["acked"] == 105 and years["86400"]["acked"] == 5


def test_capacity_and_latencies_are_this_incarnations_and_weighted() -> None:
    own = windows(0, executed=10)  # 1 s over 10 tuples: 100 ms each
    lumps = [[0.0, windows(0, executed=30)]]  # 1 s over 30
    merged = with_carry(own, lumps, 1.0)["600"]
    assert merged["executed"] == 40
    assert merged["execute_latency_ms"] == pytest.approx(2000.0 / 40)
    assert merged["capacity"] == own["600"]["capacity"]


def test_no_lumps_is_the_own_windows_unchanged() -> None:
    own = windows(3)
    assert with_carry(own, [], 5.0) is own


def test_save_reply_chains_the_carry_and_the_own_windows() -> None:
    task = {"component": "split", "index": 1}
    first = {"time": 50.0, "tasks": {"3": {**task, "windows": windows(7)}}}
    saved = save_reply(first)
    assert list(saved) == ["split#1"] and saved["split#1"][0][0] == 50.0
    # the relaunched worker reports its own windows apart from what it carries
    second = {
        "time": 90.0,
        "tasks": {
            "3": {**task, "windows": {}, "own_windows": windows(2), "carried": saved["split#1"]}
        },
    }
    chained = save_reply(second)["split#1"]
    assert [lump[0] for lump in chained] == [50.0, 90.0]
    assert sum(lump[1][ALL_TIME]["acked"] for lump in chained) == 9


def test_newest_picks_the_latest_save_of_each_task_and_skips_garbage() -> None:
    old = {"split#0": [[10.0, windows(1)]], "split#1": [[10.0, windows(1)]]}
    new = {"split#0": [[20.0, windows(2)]]}
    garbage: list[Any] = [None, "x", {"a#5": "nope"}, {"a#6": []}, {"7": [[1.0, {}]]}]
    best = newest([new, old, *garbage])
    assert sorted(best) == ["split#0", "split#1"]
    assert best["split#0"][0][0] == 20.0 and best["split#1"][0][0] == 10.0


def test_pruned_keeps_recent_lumps_and_folds_old_ones_into_all_time() -> None:
    lumps = [[float(i), windows(1)] for i in range(MAX_LUMPS + 5)]
    kept = pruned([*lumps, "junk", [1.0], ["t", {}]])
    assert len(kept) == MAX_LUMPS
    folded = kept[0][1]
    assert list(folded) == [ALL_TIME] and folded[ALL_TIME]["acked"] == 6
    total = with_carry(windows(0), kept, 10**9)[ALL_TIME]["acked"]
    assert total == MAX_LUMPS + 5  # nothing lost from the all-time count


def test_a_malformed_lump_never_breaks_status() -> None:
    own = windows(4)
    bad = [[0.0, {"600": {"acked": "many"}, ALL_TIME: {"emitted": 3}}]]
    merged = with_carry(own, bad, 1.0)
    assert merged["600"]["acked"] == 4  # the bad part is ignored


ASSIGNMENT = {
    "worker_tasks": [[1, 3], [2, 4]],
    "component_tasks": {"count": [2, 3], "words": [1], "__acker": [4]},
}
COMPONENTS = {"count": {"kind": "bolt"}, "words": {"kind": "spout"}}


def test_a_worker_without_a_reply_stands_in_as_what_its_tasks_carried() -> None:
    """Worker 1 holds count's first task (index 0) and an acker: each stands in with its
    own component's carry, at the wall clock of the call, and nothing live."""
    carried = {"count#0": [[50.0, windows(7, executed=9)]], "count#1": [[60.0, windows(1)]]}
    [(worker, reply)] = stand_ins(ASSIGNMENT, COMPONENTS, carried, {1}, 100.0).items()
    assert worker == 1 and reply["stand_in"] and reply["time"] == 50.0
    count, acker = reply["tasks"][2], reply["tasks"][4]
    assert (count["component"], count["index"], count["kind"]) == ("count", 0, "bolt")
    assert count["windows"][ALL_TIME]["executed"] == 9 and count["windows"]["600"]["acked"] == 7
    assert acker["windows"][ALL_TIME]["acked"] == 0  # nothing carried: zeros, not absent
    assert set(count["windows"]) == set(windows(0))  # every window a report may ask for
    assert not {"pending", "latency_histogram", "metrics", "emitted"} & set(count)


def test_a_stand_in_is_never_more_than_the_relaunch_that_carries_the_same_lumps() -> None:
    lumps = [[50.0, windows(7, executed=9)]]
    standing = stand_ins(ASSIGNMENT, COMPONENTS, {"count#0": lumps}, {1}, 100.0)[1]
    back = with_carry(windows(2, executed=3), lumps, 100.0)  # its own counts, plus the carry
    for wid, window in standing["tasks"][2]["windows"].items():
        assert window["acked"] <= back[wid]["acked"] and window["executed"] <= back[wid]["executed"]


def test_stand_ins_of_a_hostile_assignment_or_carry_are_empty_not_errors() -> None:
    bad_carry = {"count#0": [["t", {}], "junk"]}
    assert stand_ins({}, {}, bad_carry, {0, 7}, 1.0) == {
        0: {"worker": 0, "tasks": {}, "time": 0.0, "stand_in": True},
        7: {"worker": 7, "tasks": {}, "time": 0.0, "stand_in": True},
    }
    odd = {"worker_tasks": [[1, 99]], "component_tasks": {"count": [1]}}
    [task] = stand_ins(odd, COMPONENTS, bad_carry, {0}, 1.0)[0]["tasks"].values()
    assert task["windows"][ALL_TIME]["executed"] == 0
