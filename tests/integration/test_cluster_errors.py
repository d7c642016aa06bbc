"""Errors inside components: reported with context, and the worker keeps running."""

from __future__ import annotations

import pytest

from tests.integration.components import Bloater, Raiser, SetEmitter
from tests.integration.helpers import CONF, FAIL_AT_ONCE, WORKERS, tasks_by_component
from topology import TopologyBuilder
from topology.testing import FeederSpout, complete_topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

N = 200


def _numbers() -> FeederSpout:
    return FeederSpout(["n"], [[i] for i in range(N)])


def _errors_per_task(status: list[dict], component: str) -> dict[int, int]:
    return {
        int(task): info["errors"]
        for reply in status
        for task, info in reply["tasks"].items()
        if info["component"] == component
    }


def test_unencodable_value_is_reported_and_later_tuples_still_flow() -> None:
    bad = [3, 50, 120]
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(), 2)
    builder.set_bolt("setter", SetEmitter(bad), 2).shuffle_grouping("spout")

    result = complete_topology(builder.create_topology(), {**CONF, **FAIL_AT_ONCE})

    assert set(result.errors) == {"setter"}
    reports = result.errors["setter"]
    assert len(reports) == len(bad)
    setter_tasks = tasks_by_component(result.status)["setter"]
    for report in reports:
        text = report["text"]
        assert report["component"] == "setter"
        assert report["task"] in setter_tasks
        assert f"component 'setter' (task {report['task']})" in text
        assert "stream 'numbers'" in text
        assert "type set" in text
        assert "field 'value'" in text
    assert sum(_errors_per_task(result.status, "setter").values()) == len(bad)
    # every other tuple, including all those after the failures, got through
    assert sorted(v for [v] in result.tuples("setter", "numbers")) == [
        i for i in range(N) if i not in bad
    ]
    assert len(result.status) == WORKERS


def test_exception_in_bolt_is_reported_and_other_tuples_are_processed() -> None:
    bad = [7, 70, 140, 150]
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(), 2)
    builder.set_bolt("raiser", Raiser(bad), 2).shuffle_grouping("spout")

    result = complete_topology(builder.create_topology(), {**CONF, **FAIL_AT_ONCE})

    assert set(result.errors) == {"raiser"}
    reports = result.errors["raiser"]
    assert len(reports) == len(bad)
    for report in reports:
        assert "Traceback" in report["text"]
        assert report["text"].splitlines()[-1].startswith("ValueError: cannot handle ")
    assert sorted(r["text"].splitlines()[-1] for r in reports) == sorted(
        f"ValueError: cannot handle {n}" for n in bad
    )
    per_task = _errors_per_task(result.status, "raiser")
    assert sum(per_task.values()) == len(bad)
    passed = sorted(v for [v] in result.tuples("raiser"))
    assert passed == [i for i in range(N) if i not in bad]
    assert len(passed) == N - len(bad)
    # each spout tuple completed once; the good ones were acked (the bad ones fail when
    # ackers track the trees, and are acked at emit when they do not)
    acked, failed = result.acked("spout"), result.failed("spout")
    assert sorted(acked + failed) == list(range(N))
    assert set(failed) <= set(bad)


def test_a_tuple_too_big_for_any_frame_is_reported_and_the_rest_still_flows() -> None:
    """Every bloater task sees every number (all grouping); the capture bolt runs on one
    worker, so each big tuple of the other worker's bloater task cannot be sent: it is
    reported once, naming the component, and everything else arrives."""
    bad, limit = [5, 60, 150], 64 * 1024
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(), 1)
    builder.set_bolt("bloater", Bloater(bad, 4 * limit), 2).all_grouping("spout")
    conf = {**CONF, "topology.transfer.max.frame.bytes": limit, "topology.message.timeout.secs": 3}

    result = complete_topology(builder.create_topology(), conf)

    placement = tasks_by_component(result.status)
    assert len(set(placement["bloater"].values())) == WORKERS  # one bloater task per worker
    values = result.tuples("bloater")
    small = sorted(v for [v] in values if isinstance(v, int))
    assert small == sorted([i for i in range(N) if i not in bad] * 2)
    big = [v for [v] in values if isinstance(v, str)]
    reports = result.errors.get("bloater", [])
    assert len(big) == len(reports) == len(bad)  # the local task's arrive, the other's not
    for report in reports:
        assert report["component"] == "bloater" and report["task"] in placement["bloater"]
        assert "not sent" in report["text"] and "emit smaller or flatter values" in report["text"]
