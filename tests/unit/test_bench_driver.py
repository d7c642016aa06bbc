"""bench/run.py's driver logic: which run of a repeated case is reported, how targets pair
the runs they compare; and the configuration bench/cases.py gives a case (pure)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.timeout(30)


def _bench_module(name: str) -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bench_run() -> ModuleType:
    return _bench_module("run")


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


def test_acked_word_counts_run_with_the_recommended_cap_and_without_one() -> None:
    bench = _bench_run()
    cases = {name: params for name, case, params in bench.plan(False, [1], None)}
    assert cases["wc-local-1-acked"]["max_pending"] == bench.ACKED_MAX_PENDING
    assert "max_pending" not in cases["wc-local-1-acked-unbounded"]
    assert "max_pending" not in cases["wc-local-1-unacked"]
    assert _bench_module("cases")._conf(1, True, 500)["topology.max.spout.pending"] == 500


def test_config_overrides_reach_every_sparkstorm_case_including_the_stateful_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _bench_module("cases")
    monkeypatch.setenv(bench.CONF_ENV, '{"topology.transfer.batch.size": 100}')
    assert bench._conf(2, True, 500)["topology.transfer.batch.size"] == 100
    stateful = bench._stateful_conf(2, "/tmp/state")
    assert stateful["topology.transfer.batch.size"] == 100
    assert stateful["topology.state.checkpoint.interval.ms"] == 1000


def test_the_targets_table_judges_the_capped_run_and_shows_the_uncapped_for_reference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench_run()
    results = {
        "wc-local-1-unacked": {"words_per_sec": 100.0},
        "wc-local-1-acked": {"words_per_sec": 80.0},
        "wc-local-1-acked-unbounded": {"words_per_sec": 60.0},
    }
    bench.targets(results, [1])
    lines = capsys.readouterr().out.splitlines()
    capped = next(line for line in lines if "≥ 75% of unacked" in line)
    uncapped = next(line for line in lines if "without a pending cap" in line)
    assert capped.endswith("| 80.0% | pass |")
    assert uncapped.endswith("| 60.0% | - |")


def test_a_ratio_just_under_its_target_does_not_print_as_the_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench_run()
    results = {"wc-local-1-unacked": {"words_per_sec": 1000.0}}
    results["wc-local-1-acked"] = {"words_per_sec": 748.0}
    bench.targets(results, [1])
    capped = next(line for line in capsys.readouterr().out.splitlines() if "≥ 75%" in line)
    assert capped.endswith("| 74.8% | FAIL |")


def test_a_target_is_the_median_of_the_ratios_of_runs_made_in_the_same_round(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench_run()
    # round 2 was slow for both cases alike: its ratio is as good as the others'
    unacked = bench.median_run([{"words_per_sec": w} for w in (1000.0, 600.0, 1100.0)])
    acked = bench.median_run([{"words_per_sec": w} for w in (790.0, 470.0, 860.0)])
    assert bench.paired_ratios(acked, unacked) == pytest.approx([0.79, 470 / 600, 860 / 1100])
    # the median runs alone (790 of 1000) would say 79.0 %; paired, the median is 78.3 %
    bench.targets({"wc-local-1-unacked": unacked, "wc-local-1-acked": acked}, [1])
    capped = next(line for line in capsys.readouterr().out.splitlines() if "≥ 75%" in line)
    assert capped.endswith("| 78.3% (median of 79.0%, 78.3%, 78.2%) | pass |")


def test_a_round_that_failed_drops_out_of_the_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench_run()
    a = bench.median_run([{"words_per_sec": 80.0}, {"error": "x"}, {"words_per_sec": 90.0}])
    b = bench.median_run([{"words_per_sec": 100.0}, {"words_per_sec": 100.0}, {"error": "y"}])
    assert bench.paired_ratios(a, b) == [0.8]
    bench.targets({"wc-local-1-acked": a, "wc-local-1-unacked": b}, [1])
    capped = next(line for line in capsys.readouterr().out.splitlines() if "≥ 75%" in line)
    assert capped.endswith("| 80.0% (1 of 3 rounds) | pass |")  # not shown as a whole run


def test_quick_mode_repeats_the_cases_a_target_compares_and_runs_the_rest_once() -> None:
    bench = _bench_run()
    names = [name for name, _, _ in bench.plan(False, [1, 2], None)]
    repeated = {n for n in names if n.startswith(bench.REPEATABLE) and bench.compared(n)}
    assert repeated == {
        "loop",
        "zmq-batch",
        "wc-local-1-unacked",
        "wc-local-1-acked",
        "wc-local-2-unacked",
        "wc-local-2-acked",
        "wc-readme-1-unacked",
        "wc-readme-1-acked",
        "wc-readme-2-unacked",
        "wc-readme-2-acked",
        "wc-spark-1-unacked",
        "wc-spark-2-unacked",
        "stateful",
        "redis-pg",
        "redis-pg-memory",
        "parquet-sink",
        "parquet-memory",
        "pipeline-handwritten",
        "pipeline-fused",
        "pipeline-unfused",
        "wc-examples-handwritten",
        "wc-examples-streams",
    }


def test_peers_run_in_the_same_rounds_only_when_asked_for() -> None:
    bench = _bench_run()
    names = [name for name, _, _ in bench.plan(False, [1, 2], None)]
    assert not [n for n in names if n.startswith("peer-")]
    asked = [name for name, _, _ in bench.plan(False, [1, 2], None, peers=True)]
    peers = [n for n in asked if n.startswith("peer-")]
    assert peers == ["peer-bytewax-1", "peer-bytewax-2"]
    assert all(n.startswith(bench.REPEATABLE) and bench.compared(n) for n in peers)


def test_unacked_cases_compared_with_the_pipeline_run_right_after_one() -> None:
    report = _bench_module("readme_report")
    assert report.needs_baseline("wc-readme-1-unacked", [1, 2])
    assert report.needs_baseline("wc-local-2-unacked", [1, 2])
    assert not report.needs_baseline("wc-local-1-unacked", [1, 2])  # no target compares it
    assert not report.needs_baseline("wc-readme-2-acked", [1, 2])


def test_a_back_to_back_ratio_divides_each_run_by_the_pipeline_run_before_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench_run()
    report = _bench_module("readme_report")
    runs = [{"words_per_sec": w, "baseline": b} for w, b in ((500.0, 1000.0), (300.0, 500.0))]
    runs.append({"words_per_sec": 450.0, "baseline": 1100.0})
    unacked = bench.median_run(runs)
    assert unacked["baselines"] == [1000.0, 500.0, 1100.0]
    assert report.baseline_ratios(unacked) == pytest.approx([0.5, 0.6, 450 / 1100])
    rows = report.readme_targets({"wc-readme-2-unacked": unacked}, [2], bench.paired_ratios)
    [(what, shown, ok)] = rows
    assert "45 %" in what and ok is True and shown.startswith("50.0% (median of")
    assert "spread (max - min) / median 60%" in report.spread_line([1000.0, 500.0, 1100.0])


def test_the_poison_case_runs_in_the_rounds_of_its_clean_run_only_when_asked_for() -> None:
    bench = _bench_run()
    report = _bench_module("readme_report")
    assert not [n for n, _, _ in bench.plan(False, [1, 2], None) if n.endswith("-poison")]
    asked = [n for n, _, _ in bench.plan(False, [1, 2], None, poison=True)]
    poison = [n for n in asked if n.endswith("-poison")]
    assert poison == ["wc-readme-1-acked-poison", "wc-readme-2-acked-poison"]
    assert all(n.startswith(bench.REPEATABLE) and bench.compared(n) for n in poison)
    clean = bench.median_run([{"words_per_sec": w} for w in (100.0, 100.0, 100.0)])
    poisoned = bench.median_run([{"words_per_sec": w, "exact": True} for w in (95.0, 80.0, 99.0)])
    results = {"wc-readme-1-acked": clean, "wc-readme-1-acked-poison": poisoned}
    [(what, shown, ok)] = report.readme_targets(results, [1], bench.paired_ratios)
    assert "poison" in what and "90 %" in what and ok is True and shown.startswith("95.0%")
