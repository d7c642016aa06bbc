"""bench/state_scale.py's pure parts: the key streams (their shape, and the same keys again
after a replay), the exactness sums, the plan of a round and the ratios it reports."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(60)

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_state_scale", BENCH / "state_scale.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def _stream(scale: ModuleType, stream: str, keys: int, task: int, tasks: int, n: int) -> list:
    blocks = (n + scale.BLOCK - 1) // scale.BLOCK
    drawn = [scale.block_keys(stream, keys, task, tasks, b).tolist() for b in range(blocks)]
    return [k for block in drawn for k in block][:n]


def test_the_uniform_sweep_shows_every_key_once_across_the_tasks(scale: ModuleType) -> None:
    keys, tasks = 10_000, 2
    seen = Counter()
    for task in range(tasks):
        seen.update(_stream(scale, "uniform", keys, task, tasks, keys // tasks))
    assert sorted(seen) == list(range(keys))
    assert set(seen.values()) == {1}


def test_the_hot_stream_puts_about_40_percent_of_tuples_on_1_percent_of_keys(
    scale: ModuleType,
) -> None:
    keys, n = 1_000_000, 40_000
    drawn = _stream(scale, "hot", keys, 0, 2, n)
    hot = {(rank * scale.SCRAMBLE) % keys for rank in range(keys // 100)}
    share = sum(k in hot for k in drawn) / n
    assert 0.38 < share < 0.43  # 40 % drawn hot, plus ~1 % of the cold draws
    assert all(0 <= k < keys for k in drawn)


def test_the_zipf_stream_is_skewed_and_stays_within_the_keys(scale: ModuleType) -> None:
    keys, n = 1_000_000, 40_000
    drawn = _stream(scale, "zipf", keys, 1, 2, n)
    assert all(0 <= k < keys for k in drawn)
    counts = Counter(drawn)
    top = counts.most_common(1)[0]
    assert top[0] == 0  # rank 0 scrambles to key 0, the most frequent
    # Zipf(1.1) truncated at 10^6 keys: rank 1 has 1 / H(10^6, 1.1) ≈ 12 % of the mass
    assert 0.09 < top[1] / n < 0.15
    assert len(counts) < n / 2


def test_streams_are_the_same_on_replay_and_differ_between_tasks(scale: ModuleType) -> None:
    for stream in scale.STREAMS:
        first = scale.block_keys(stream, 1_000_000, 0, 2, 3)
        assert (first == scale.block_keys(stream, 1_000_000, 0, 2, 3)).all()
        assert not (first == scale.block_keys(stream, 1_000_000, 1, 2, 3)).all()
    with pytest.raises(ValueError, match="unknown stream 'gauss'"):
        scale.block_keys("gauss", 10, 0, 1, 0)


class _Context:
    def __init__(self, task: int, tasks: int) -> None:
        self.task_index, self.tasks = task, tasks

    def component_tasks(self) -> list[int]:
        return list(range(self.tasks))


def test_the_spout_emits_its_quota_replays_after_a_seek_and_sums_what_it_emitted(
    scale: ModuleType,
) -> None:
    spout = scale.KeyStream("hot", 100_000, 10_001)
    emitted: list[Any] = []
    spout.emit = lambda values: emitted.append(values[0])  # type: ignore[method-assign]
    spout.open({}, _Context(0, 2))
    assert spout.quota == 5_001  # the odd tuple goes to task 0
    while len(emitted) < 6_000 and spout.position() < spout.quota:
        spout.next_tuple()
    assert len(emitted) == 5_001 and spout.position() == 5_001
    spout.next_tuple()
    assert len(emitted) == 5_001  # nothing past the quota
    spout.seek(4_090)  # a replay across a block boundary
    for _ in range(2):
        spout.next_tuple()
    assert emitted[5_001:] == emitted[4_090:4_110]
    spout.seek(5_001)
    assert spout.collect_results() == {"emitted": 5_001, "key_sum": sum(emitted[:5_001])}


def test_a_round_runs_the_baseline_first_and_merge_cases_only_when_asked(
    scale: ModuleType,
) -> None:
    names = [name for name, _ in scale.plan(10_000_000, merge=False)]
    assert names[0] == "baseline" and len(names) == 7
    assert not any(name.endswith("-merge") for name in names)
    plan = dict(scale.plan(10_000_000, merge=True))
    assert plan["baseline"] == {"stream": "uniform", "backend": "memory", "keys": 10_000}
    assert plan["zipf-lmdb-merge"]["merge"] is True
    assert plan["zipf-lmdb"]["merge"] is False and plan["zipf-lmdb"]["keys"] == 10_000_000


def _run(rate: float, rss: float = 50.0) -> dict[str, Any]:
    return {
        "stream": "uniform",
        "backend": "memory",
        "keys": 10,
        "update": "get+put",
        "tuples_per_sec": rate,
        "exact": True,
        "rss_max_mb": [rss, rss / 2],
        "rss_anon_max_mb": [rss / 2, 1.0],
        "state_keys": 10,
    }


def test_the_ratio_is_the_median_of_per_round_ratios_and_exact_needs_every_round(
    scale: ModuleType,
) -> None:
    rounds = [
        {"baseline": _run(100.0), "x": _run(50.0)},
        {"baseline": _run(200.0), "x": _run(80.0, rss=90.0)},  # a slow machine: 0.4
        {"baseline": _run(100.0), "x": {**_run(60.0), "exact": False}},
    ]
    table = scale.summary(rounds)
    assert table["x"]["ratios"] == [0.5, 0.4, 0.6]
    assert table["x"]["ratio"] == 0.5
    assert table["x"]["tuples_per_sec"] == 60.0
    assert table["x"]["exact"] is False and table["baseline"]["exact"] is True
    assert table["x"]["rss_max_mb"] == 90.0


def test_the_rss_plot_draws_a_line_per_case(scale: ModuleType, tmp_path: Path) -> None:
    cases = {
        "baseline": {
            **_run(1.0),
            "rss_series": [[0.0, [[40.0, 20.0, 20.0]]], [1.0, [[41, 21, 20]]]],
        },
        "hot-lmdb": {
            **_run(1.0),
            "stream": "hot",
            "backend": "lmdb",
            "rss_series": [[0.0, [[40.0, 20.0, 20.0]]], [2.0, [[90, 50, 40]]]],
        },
    }
    path = tmp_path / "rss.svg"
    scale.write_svg(str(path), cases)
    svg = path.read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 4  # a line and a legend each
    assert "hot-lmdb" in svg and "baseline" in svg


def test_a_failed_case_is_reported_and_left_out_of_the_ratios(scale: ModuleType) -> None:
    rounds = [
        {"baseline": _run(100.0), "x": {"error": "TimeoutError: slow"}, "y": _run(30.0)},
        {"baseline": _run(100.0), "x": _run(70.0), "y": {"error": "boom"}},
        {"baseline": {"error": "boom"}, "x": _run(10.0), "y": {"error": "boom"}},
    ]
    table = scale.summary(rounds)
    assert table["x"]["ratios"] == [0.7]  # round 3 had no baseline to compare with
    assert table["y"]["ratios"] == [0.3]
    only_errors = scale.summary([{"baseline": _run(1.0), "z": {"error": "TimeoutError: z"}}])
    assert only_errors["z"] == {"error": "TimeoutError: z"}


class _DictState(dict):
    def put(self, key: Any, value: Any) -> None:
        self[key] = value

    def merge(self, key: Any, value: Any) -> None:
        self[key] = self.get(key, 0) + value


class _Tuple:
    def __init__(self, key: int) -> None:
        self.values = [key]


def test_both_counts_give_the_sums_exactness_is_checked_against(scale: ModuleType) -> None:
    keys = [3, 5, 3, 0, 3]
    for bolt in (scale.CountKeys(), scale.MergeKeys()):
        bolt.state = _DictState()
        for key in keys:
            bolt.execute(_Tuple(key))
        assert dict(bolt.state) == {3: 3, 5: 1, 0: 1}
        results = bolt.collect_results()
        assert results == {"keys": 3, "total": 5, "key_sum": sum(keys), "state": "_DictState"}
