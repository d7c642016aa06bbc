"""``rebalance --component NAME=COUNT`` (Storm's ``-e``) up to the nimbus, without a cluster:
the checks of a request against the topology's record (unknown components, counts, state
that cannot move, key groups) with messages naming the component and the fix; the CLI's
parsing; ``Cluster.rebalance`` refusing before it writes anything and writing the request
otherwise; the nimbus's own check of a request written by hand; the schema of the record's
``rebalance`` field against hostile input; and a worker's topology taking its task counts
from the assignment (``with_task_counts``).  The nimbus's steps are in test_plan.py; the
whole rescale with state in tests/spark/test_rescale_cluster.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli import operations
from cli.main import cli
from tests.unit.test_ui_server import HeldView, request
from topology import (
    Bolt,
    ReplayableSpout,
    StatefulBolt,
    TopologyBuilder,
    Tuple,
)
from topology import config as cfg
from topology.assignment import assign, from_json, task_counts, to_json, with_task_counts
from topology.deploy.cluster import client as client_module
from topology.deploy.cluster.client import Cluster, ClusterOperationError
from topology.deploy.cluster.nimbus import _rescale_problem
from topology.deploy.rescale import (
    MAX_COMPONENT_TASKS,
    Rebalanced,
    components_problem,
    rebalance_refusal,
    rebalanced,
    rescaled_tasks,
)
from topology.deploy.zk import records
from topology.runtime.checkpoint.state_layout import describe_state
from topology.spec import Topology, describe_components
from topology.ui.auth import UiSettings
from topology.ui.server import UiServer

pytestmark = pytest.mark.timeout(60)

UI_TOKEN = "a-test-admin-token-0123456789"

FUZZ = settings(
    deadline=None, max_examples=200, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


class Numbers(ReplayableSpout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass

    def position(self) -> dict[str, int]:
        return {}

    def seek(self, position: Any) -> None:
        pass


class Count(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup["n"], self.state.get(tup["n"], 0) + 1)


class Tally(StatefulBolt):  # per-task state: shuffled input
    def execute(self, tup: Tuple) -> None:
        self.state.put("seen", self.state.get("seen", 0) + 1)


class Log(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), 2)
    builder.set_bolt("count", Count(), 2).fields_grouping("numbers", ["n"])
    builder.set_bolt("tally", Tally(), 2).shuffle_grouping("numbers")
    builder.set_bolt("log", Log(), 1).shuffle_grouping("numbers")
    return builder.create_topology()


def record_of(built: Topology, **conf: Any) -> dict[str, Any]:
    """The topology's record as ``Cluster.submit_topology`` writes it."""
    components = describe_components(built)
    for component, kinds in describe_state(built).items():
        components[component]["state"] = kinds
    merged = cfg.resolve({"topology.workers": 2, "topology.name": "wc", **conf})
    return {"name": "wc", "status": "ACTIVE", "conf": merged, "components": components}


RECORD = record_of(topology())


# -- the checks against the record --------------------------------------------------------------


def test_keyed_state_spouts_and_stateless_bolts_may_be_rescaled() -> None:
    assert components_problem("wc", RECORD, {"count": 4, "numbers": 3, "log": 5}) is None
    assert components_problem("wc", RECORD, {"count": 1}) is None
    assert components_problem("wc", RECORD, {"tally": 2}) is None  # its count stays


def test_an_unknown_component_is_named_with_the_topology_s_components() -> None:
    problem = str(components_problem("wc", RECORD, {"cuont": 4}))
    assert "topology 'wc' has no component 'cuont'" in problem
    assert "(its components: count, log, numbers, tally)" in problem
    assert "__acker" in str(components_problem("wc", RECORD, {"__acker": 2}))


def test_per_task_state_is_refused_with_the_fix() -> None:
    problem = str(components_problem("wc", RECORD, {"tally": 3}))
    assert "component 'tally' keeps its state per task" in problem
    assert "subscribe it with fields_grouping on the key it keeps state by" in problem


def test_keyed_state_runs_on_at_most_one_task_per_key_group() -> None:
    record = record_of(topology(), **{cfg.STATE_MAX_PARALLELISM: 8})
    assert components_problem("wc", record, {"count": 8}) is None
    problem = str(components_problem("wc", record, {"count": 9}))
    assert "component 'count' has keyed state in 8 key groups" in problem
    assert "topology.state.max.parallelism" in problem and "9 tasks" in problem


def test_without_checkpoints_no_state_stands_in_the_way() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), 1)
    builder.set_bolt("log", Log(), 2).shuffle_grouping("numbers")
    assert components_problem("wc", record_of(builder.create_topology()), {"log": 7}) is None


@pytest.mark.parametrize("count", [0, -1, MAX_COMPONENT_TASKS + 1, True, 2.0, "4", None])
def test_a_task_count_out_of_range_is_refused(count: Any) -> None:
    problem = str(components_problem("wc", RECORD, {"log": count}))
    assert f"component 'log': the task count must be an integer from 1 to {100_000:,}" in problem


def test_a_components_map_that_is_no_map_or_too_big_is_refused() -> None:
    assert "expected NAME=COUNT pairs, got list" in str(components_problem("wc", RECORD, ["x"]))
    many = {f"c{i}": 1 for i in range(1_001)}
    assert "1,001 components, more than 1,000" in str(components_problem("wc", RECORD, many))


def test_the_assignment_size_and_local_slots_count_the_new_tasks() -> None:
    counts = rescaled_tasks(RECORD, {"count": 4})
    assert counts == {"numbers": 2, "count": 4, "tally": 2, "log": 1, "__checkpoint": 1}
    assert rebalance_refusal("wc", RECORD, 2, {"log": 20_000}, {}) is None
    too_big = str(rebalance_refusal("wc", RECORD, 2, {"log": MAX_COMPONENT_TASKS}, {}))
    assert "the assignment of 'wc' to 2 workers would be" in too_big
    local = {**RECORD, "conf": {**RECORD["conf"], "spark.master": "local[2]"}}
    over = str(rebalance_refusal("wc", local, 3, {"log": 2}, {}))
    assert "3 worker(s) need 3 task slot(s)" in over and "spark.master=local[2] has 2" in over


def test_the_outcome_says_what_changed() -> None:
    done = rebalanced(RECORD, 3, {"count": 4, "log": 1})
    assert done == Rebalanced(3, {"count": (2, 4)})
    assert done.describe() == "on 3 worker(s); count: 2 -> 4 tasks"
    assert Rebalanced(2).describe() == "on 2 worker(s)"


def test_the_nimbus_checks_a_request_written_by_hand() -> None:
    assert _rescale_problem(RECORD) is None
    assert _rescale_problem({**RECORD, "rebalance": {"workers": 2}}) is None
    asked = {**RECORD, "rebalance": {"workers": 2, "components": {"tally": 5}}}
    assert "keeps its state per task" in str(_rescale_problem(asked))


# -- the record's rebalance field: hostile input ------------------------------------------------

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def _with_rebalance(request: Any) -> dict[str, Any]:
    return {**RECORD, "rebalance": request}


def test_a_rebalance_with_components_passes_the_record_check() -> None:
    request = {"workers": 3, "wait": 0, "components": {"count": 4, "numbers": 3}}
    assert records.check_record(_with_rebalance(request)) is None


@pytest.mark.parametrize(
    ("components", "words"),
    [
        ({"count": 0}, "outside 1..100000"),
        ({"count": 10**6}, "outside 1..100000"),
        ({"count": "4"}, "expected an integer"),
        ({"count": True}, "expected an integer"),
        ({"": 4}, "rebalance.components"),
        ({"x" * 1001: 4}, "rebalance.components"),
        ([["count", 4]], "expected an object"),
        ({f"c{i}": 1 for i in range(1001)}, "1001 components, more than 1000"),
    ],
)
def test_bad_rescale_requests_are_refused_at_the_door(components: Any, words: str) -> None:
    reason = records.check_record(_with_rebalance({"workers": 2, "components": components}))
    assert reason is not None and words in reason and "\n" not in reason, reason


@FUZZ
@given(components=junk, workers=junk)
def test_any_rebalance_field_is_checked_without_raising(components: Any, workers: Any) -> None:
    request = {"workers": workers, "components": components}
    reason = records.check_record(_with_rebalance(request))
    assert reason is None or (isinstance(reason, str) and "\n" not in reason)
    if reason is None:  # what passes the door, the nimbus can judge without raising
        problem = _rescale_problem(_with_rebalance(request))
        assert problem is None or isinstance(problem, str)


@FUZZ
@given(
    components=st.dictionaries(
        st.sampled_from(["count", "numbers", "tally", "log", "nope", "__acker"]),
        st.integers(-2, 200_000),
        max_size=4,
    )
)
def test_the_nimbus_check_accepts_exactly_what_can_run(components: dict[str, int]) -> None:
    problem = components_problem("wc", RECORD, components)
    runnable = all(
        c in RECORD["components"]
        and 1 <= n <= MAX_COMPONENT_TASKS
        and (c != "tally" or n == 2)
        and (c != "count" or n <= 128)
        for c, n in components.items()
    )
    assert (problem is None) == runnable, problem


# -- the client: refused before anything is written ---------------------------------------------


class _Zk:
    """The ZooKeeper a Cluster client sees: one topology ``wc``, writes recorded."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.writes: list[dict[str, Any]] = []

    def find_by_name(self, name: str) -> str | None:
        return "wc-1" if name == "wc" else None

    def topology_ids(self) -> list[str]:
        return ["wc-1"]

    def read_record(self, topology_id: str) -> dict[str, Any]:
        return json.loads(json.dumps(self.record))

    def read_assignment(self, topology_id: str) -> dict[str, Any]:
        return {"attempt": 1}

    def heartbeats(self, topology_id: str, attempt: int | None = None) -> dict[int, Any]:
        return {}

    def update_record(self, topology_id: str, **changes: Any) -> None:
        self.writes.append(changes)


@pytest.fixture
def fake_zk(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Cluster, _Zk]]:
    waited: list[tuple[Any, ...]] = []
    monkeypatch.setattr(client_module, "wait_rebalanced", lambda *args: waited.append(args))
    cluster = Cluster({})
    zk = _Zk(RECORD)
    cluster.zk = zk  # type: ignore[assignment]
    yield cluster, zk


@pytest.mark.parametrize(
    ("workers", "components", "words"),
    [
        (None, {"tally": 4}, "component 'tally' keeps its state per task"),
        (None, {"cuont": 4}, "no component 'cuont' (its components: count, log, numbers, tally)"),
        (None, {"count": 129}, "keyed state in 128 key groups"),
        (None, None, "nothing to change: give --workers N and/or --component NAME=COUNT"),
        (0, {"count": 4}, "--workers must be an integer from 1 to 10,000"),
    ],
)
def test_the_client_refuses_before_writing_anything(
    fake_zk: tuple[Cluster, _Zk], workers: Any, components: Any, words: str
) -> None:
    cluster, zk = fake_zk
    with pytest.raises(ClusterOperationError, match="^rebalance of 'wc': ") as raised:
        cluster.rebalance("wc", workers, components=components)
    assert words in str(raised.value)
    assert zk.writes == []


def test_the_client_asks_for_the_new_counts_and_keeps_the_workers(
    fake_zk: tuple[Cluster, _Zk],
) -> None:
    cluster, zk = fake_zk
    said: list[str] = []
    done = cluster.rebalance("wc", wait_secs=0, progress=said.append, components={"count": 4})
    assert zk.writes == [{"rebalance": {"workers": 2, "wait": 0, "components": {"count": 4}}}]
    assert done == Rebalanced(2, {"count": (2, 4)})
    assert said == ["rebalance of 'wc' on 2 worker(s); count: 2 -> 4 tasks asked of the nimbus"]
    cluster.rebalance("wc", 3, wait_secs=1)  # workers only: no components in the request
    assert zk.writes[-1] == {"rebalance": {"workers": 3, "wait": 1}}


# -- the command line ---------------------------------------------------------------------------


class _CliCluster:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def rebalance(
        self, name: str, workers: Any, wait: Any, progress: Any = None, components: Any = None
    ) -> Rebalanced:
        self.calls.append((name, workers, wait, components))
        return Rebalanced(workers or 2, {c: (2, n) for c, n in (components or {}).items()})


@pytest.fixture
def cli_cluster(monkeypatch: pytest.MonkeyPatch) -> _CliCluster:
    fake = _CliCluster()

    @contextmanager
    def session(config: Any) -> Iterator[_CliCluster]:
        yield fake

    monkeypatch.setattr(operations, "cluster_session", session)
    return fake


def test_the_cli_rescales_with_or_without_workers(cli_cluster: _CliCluster) -> None:
    result = CliRunner().invoke(cli, ["rebalance", "wc", "-e", "count=4"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "Rebalanced topology: wc now runs on 2 worker(s); count: 2 -> 4 tasks\n"
    result = CliRunner().invoke(
        cli, ["rebalance", "wc", "-n", "3", "--component", "count=4", "-e", "log=2"]
    )
    assert result.exit_code == 0, result.output
    assert cli_cluster.calls[-1] == ("wc", 3, None, {"count": 4, "log": 2})
    result = CliRunner().invoke(cli, ["rebalance", "wc", "-n", "3"])
    assert result.stdout == "Rebalanced topology: wc now runs on 3 worker(s)\n"
    assert cli_cluster.calls[-1] == ("wc", 3, None, None)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "nothing to change: give --workers N and/or --component NAME=COUNT"),
        (["-e", "count"], "expected NAME=COUNT (e.g. count=4), got 'count'"),
        (["-e", "=4"], "invalid component name"),
        (["-e", "count=0"], "--component count: the task count must be an integer from 1 to"),
        (["-e", "count=four"], "got 'four'"),
        (["-e", "count=²"], "the task count must be"),
        (["-e", "count=" + "9" * 5000], "the task count must be"),
        (["-e", "count=2", "-e", "count=3"], "'count' given twice"),
    ],
)
def test_the_cli_refuses_bad_component_counts_in_one_line(
    cli_cluster: _CliCluster, argv: list[str], words: str
) -> None:
    result = CliRunner().invoke(cli, ["rebalance", "wc", *argv])
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("Error: ") and words in line, line
    assert cli_cluster.calls == []


# -- the worker's topology ----------------------------------------------------------------------


def test_a_worker_s_topology_takes_its_task_counts_from_the_assignment() -> None:
    built = topology()
    counts = task_counts(built, cfg.resolve({}))
    assert with_task_counts(built, assign(counts, 2)) is built  # nothing rescaled
    rescaled = assign({**counts, "count": 4, "numbers": 3}, 3)
    stored = from_json(json.loads(json.dumps(to_json(rescaled, 2))))
    worker_view = with_task_counts(built, stored)
    assert worker_view.components["count"].num_tasks == 4
    assert worker_view.components["count"].parallelism == 4
    assert worker_view.components["numbers"].num_tasks == 3
    assert worker_view.components["log"] is built.components["log"]
    assert built.components["count"].num_tasks == 2  # the original is left alone
    assert worker_view.components["count"].instance is built.components["count"].instance


# -- the web UI's rebalance action --------------------------------------------------------------


class _RebalancingView(HeldView):
    """A fake cluster view of topology ``t`` that records the rebalances asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.rebalances: list[tuple[Any, ...]] = []

    def rebalance(self, name: str, workers: Any, wait_secs: Any, components: Any = None) -> None:
        self.rebalances.append((name, workers, wait_secs, components))


def _post(server: UiServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    _, _, raw = request(server.url, "GET", "/api/v1/csrf")
    csrf = json.loads(raw)["csrf_token"]
    headers = {
        "Authorization": f"Bearer {UI_TOKEN}",
        "X-CSRF-Token": csrf,
        "Cookie": f"sparkstorm_csrf={csrf}",
        "Content-Type": "application/json",
    }
    path = "/api/v1/topology/t/rebalance"
    status, _, raw = request(server.url, "POST", path, headers, json.dumps(body).encode())
    return status, json.loads(raw)


def test_the_ui_rebalance_action_takes_task_counts() -> None:
    view = _RebalancingView()
    settings = UiSettings(admin_token=UI_TOKEN, publish_interval=0.2)
    with UiServer(view, settings, port=0) as server:  # type: ignore[arg-type]
        status, body = _post(server, {"components": {"count": 4}, "wait_secs": 0})
        assert status == 200 and body["components"] == {"count": 4}, body
        assert view.rebalances[-1] == ("t", None, 0.0, {"count": 4})
        status, body = _post(server, {"workers": 3, "components": "count=2, log=5"})
        assert status == 200, body
        assert view.rebalances[-1] == ("t", 3, None, {"count": 2, "log": 5})
        assert _post(server, {"workers": 2})[0] == 200
        assert view.rebalances[-1] == ("t", 2, None, None)
        cases: list[tuple[dict[str, Any], str]] = [
            ({}, "workers: required (the new number of workers) unless components are given"),
            ({"components": "count"}, "components: expected component=count"),
            ({"components": {"count": 0}}, "components.count: expected an integer from 1"),
            ({"components": {"a b": 2}}, "components: invalid component name 'a b'"),
            ({"components": [1]}, 'components: expected {"component": count, ...}'),
        ]
        for bad, words in cases:
            status, body = _post(server, bad)
            assert status == 400 and words in body["message"], body
            assert body["parameter"] in ("workers", "components")
        assert len(view.rebalances) == 3
