"""Unit tests for cli.rates: monitor's rates from stamped worker samples (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.rates import RateTracker

pytestmark = pytest.mark.timeout(10)


def reply(worker: int, taken: float, acked: float, pid: int = 100) -> dict[str, Any]:
    spout = {"kind": "spout", "emitted": {"default": acked}, "acked": acked, "failed": 0}
    bolt = {"kind": "bolt", "emitted": {"default": 5 * acked}, "acked": 9, "failed": 1}
    return {"worker": worker, "pid": pid + worker, "time": taken, "tasks": {"1": spout, "2": bolt}}


def test_a_steady_topology_reads_its_true_rate_at_every_refresh() -> None:
    """Workers publish every 5 s, the view refreshes every second: every refresh after the
    second sample shows 1,000/s per worker (not 0, 0, 0, 0 and then 5,000)."""
    tracker = RateTracker()
    shown = []
    for second in range(0, 31):
        published = second - second % 5  # the newest sample each worker has published
        replies = [reply(w, 1000.0 + published, 1000.0 * published) for w in (0, 1)]
        shown.append(tracker.update(replies))
    assert shown[:5] == [None] * 5  # one sample so far: no rate yet, nothing made up
    for rates in shown[5:]:
        assert rates is not None
        assert rates["acked"] == pytest.approx(2000.0) and rates["emitted"] == pytest.approx(2000.0)
        assert rates["failed"] == 0.0  # spout failures only: bolts do not count
    assert tracker.sample_interval == pytest.approx(5.0)


def test_a_relaunched_worker_starts_a_new_baseline_instead_of_a_negative_rate() -> None:
    tracker = RateTracker()
    tracker.update([reply(0, 10.0, 5000.0), reply(1, 10.0, 5000.0)])
    tracker.update([reply(0, 11.0, 6000.0), reply(1, 11.0, 6000.0)])
    # worker 1 restarted (new pid, counts from zero): only worker 0 has a rate until the
    # new incarnation has two samples
    rates = tracker.update([reply(0, 12.0, 7000.0), reply(1, 12.0, 10.0, pid=500)])
    assert rates == {"emitted": 1000.0, "acked": 1000.0, "failed": 0.0}
    rates = tracker.update([reply(0, 13.0, 8000.0), reply(1, 13.0, 510.0, pid=500)])
    assert rates is not None and rates["acked"] == pytest.approx(1500.0)
