"""bench/run.py's driver logic: which run of a repeated case is reported (pure)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.timeout(30)


def _bench_run() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "run.py"
    spec = importlib.util.spec_from_file_location("bench_run", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_median_run_is_reported_with_every_run_and_exact_only_if_all_were() -> None:
    median_run = _bench_run().median_run
    runs = [
        {"words_per_sec": 300.0, "exact": True},
        {"error": "exit 1: boom"},
        {"words_per_sec": 500.0, "exact": False},
        {"words_per_sec": 400.0, "exact": True},
    ]
    chosen = median_run(runs)
    assert chosen["words_per_sec"] == 400.0
    assert chosen["runs"] == [300, None, 500, 400]
    assert chosen["exact"] is False  # one run counted wrong: the figure says so


def test_an_even_count_reports_the_lower_median_and_a_single_run_is_unchanged() -> None:
    median_run = _bench_run().median_run
    assert median_run([{"words_per_sec": 2.0}, {"words_per_sec": 1.0}])["words_per_sec"] == 1.0
    assert median_run([{"words_per_sec": 7.0, "exact": True}]) == {
        "words_per_sec": 7.0,
        "exact": True,
    }
    assert median_run([{"error": "x"}, {"error": "y"}]) == {"error": "x"}
