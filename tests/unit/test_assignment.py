"""Unit tests for topology.assignment.assign: task ids and the spread over workers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from topology.assignment import Assignment, assign

pytestmark = pytest.mark.timeout(30)


def check_invariants(counts: dict[str, int], num_workers: int, a: Assignment) -> None:
    total = sum(counts.values())
    # ids 1..N, in sorted component order, each component's ids contiguous and ascending
    expected_ids: dict[str, list[int]] = {}
    next_id = 1
    for component in sorted(counts):
        expected_ids[component] = list(range(next_id, next_id + counts[component]))
        next_id += counts[component]
    assert a.component_tasks == expected_ids
    assert list(a.component_tasks) == sorted(counts)
    assert a.task_component == {t: c for c, ts in expected_ids.items() for t in ts}
    # every task on exactly one worker; each worker's list ascending
    assert a.num_workers == num_workers == len(a.worker_tasks)
    hosted = [t for tasks in a.worker_tasks for t in tasks]
    assert sorted(hosted) == list(range(1, total + 1))
    for tasks in a.worker_tasks:
        assert tasks == sorted(tasks)
    worker_of = a.worker_of()
    assert set(worker_of) == set(range(1, total + 1))
    for w, tasks in enumerate(a.worker_tasks):
        assert all(worker_of[t] == w for t in tasks)
    # every component spread evenly; the total balanced
    for component, ids in a.component_tasks.items():
        per_worker = Counter(worker_of[t] for t in ids)
        spread = [per_worker.get(w, 0) for w in range(num_workers)]
        assert max(spread) - min(spread) <= 1, (component, spread)
    sizes = [len(tasks) for tasks in a.worker_tasks]
    assert max(sizes) - min(sizes) <= 1, sizes


def test_ids_follow_sorted_component_order() -> None:
    a = assign({"split": 3, "count": 2, "__acker": 1, "words": 1}, 1)
    assert a.component_tasks == {
        "__acker": [1],
        "count": [2, 3],
        "split": [4, 5, 6],
        "words": [7],
    }
    assert a.task_component[5] == "split"
    assert a.worker_tasks == [[1, 2, 3, 4, 5, 6, 7]]


def test_exact_round_robin_deal() -> None:
    a = assign({"a": 3, "b": 3}, 2)
    # a: 1->w0, 2->w1, 3->w0; b: 4->w1, 5->w0, 6->w1
    assert a.worker_tasks == [[1, 3, 5], [2, 4, 6]]
    assert a.worker_of() == {1: 0, 2: 1, 3: 0, 4: 1, 5: 0, 6: 1}


@pytest.mark.parametrize(
    ("counts", "num_workers"),
    [
        ({"a": 1}, 1),
        ({"a": 1}, 3),
        ({"a": 4, "b": 4}, 4),
        ({"a": 3, "b": 3, "c": 3}, 2),
        ({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, 2),
        ({"spout": 2, "split": 5, "count": 7, "__acker": 3}, 3),
        ({"x": 10}, 4),
        ({"x": 2, "y": 9}, 5),
    ],
)
def test_invariants(counts: dict[str, int], num_workers: int) -> None:
    check_invariants(counts, num_workers, assign(counts, num_workers))


def test_invariants_random() -> None:
    rng = random.Random(1234)
    for _ in range(300):
        n = rng.randint(1, 6)
        counts = {f"c{rng.randint(0, 99):02d}_{i}": rng.randint(1, 9) for i in range(n)}
        num_workers = rng.randint(1, 8)
        check_invariants(counts, num_workers, assign(counts, num_workers))


def test_more_workers_than_tasks_leaves_workers_empty() -> None:
    a = assign({"a": 1, "b": 1}, 4)
    assert a.worker_tasks == [[1], [2], [], []]
    assert a.num_workers == 4


def test_same_result_whatever_the_dict_order() -> None:
    counts = {"z": 2, "a": 3, "m": 4}
    reordered = dict(reversed(list(counts.items())))
    assert assign(counts, 3) == assign(reordered, 3)


def test_components_with_zero_tasks_get_no_ids() -> None:
    a = assign({"a": 0, "b": 2}, 2)
    assert a.component_tasks == {"a": [], "b": [1, 2]}
    assert a.worker_tasks == [[1], [2]]


@pytest.mark.parametrize("num_workers", [0, -1])
def test_num_workers_below_one_is_an_error(num_workers: int) -> None:
    with pytest.raises(ValueError, match=f"num_workers must be >= 1, got {num_workers}"):
        assign({"a": 1}, num_workers)
