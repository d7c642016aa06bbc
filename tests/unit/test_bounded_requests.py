"""No user input on the command line gives a traceback or reaches ZooKeeper unchecked:
hostile topology names, ``-c`` values and ``--config`` files are one-line errors (exit
status 2) naming the fault; worker counts and znode sizes are checked before anything is
written (pure checks here; tests/spark/test_rebalance_refused.py against a real ZooKeeper).
Needs no ZooKeeper: every case is refused while the command line is parsed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.common import UNSECURED_WARNING, warn_if_unsecured
from cli.main import cli
from cli.options import MAX_CONFIG_DEPTH, UsageError, flow_depth, parse_yaml
from topology import TopologyBuilder, TopologyValidationError
from topology import config as cfg
from topology.assignment import assign, to_json
from topology.deploy.cluster.plan import (
    UNLIMITED,
    Capacity,
    FailTopology,
    History,
    TopologyView,
    UpdateRecord,
    plan,
)
from topology.deploy.limits import (
    ZNODE_MAX_BYTES,
    assignment_bytes,
    local_slots,
    node_size_problem,
    rebalance_problem,
)
from topology.names import MAX_NAME_CHARS, InvalidName, check_name, name_problem, safe_name
from topology.testing import FeederSpout

pytestmark = pytest.mark.timeout(120)

FUZZ = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])

#: Every verb that takes a topology name, as argv with ``{}`` where the name goes.
NAME_VERBS = [
    ["kill", "--", "{}"],
    ["activate", "--", "{}"],
    ["deactivate", "--", "{}"],
    ["rebalance", "-n", "2", "--", "{}"],
    ["status", "--", "{}"],
    ["monitor", "--", "{}"],
    ["logs", "--", "{}"],
    ["set-log-level", "--", "{}", "INFO"],
    ["visualize", "--", "{}"],
    ["submit", "examples/wordcount.py:topology", "--name={}"],
    ["local", "examples/wordcount.py:topology", "--name={}"],
]

#: Characters YAML refuses anywhere (not whitespace to ``str.strip``, which would empty
#: the value before it is parsed).
YAML_UNACCEPTABLE = (
    "".join([*map(chr, range(0x00, 0x09)), *map(chr, range(0x0E, 0x1C)), "\x7f", "\x80", "\x9f"])
    + "\ufffe\uffff\ud800"
)

hostile_names = st.one_of(
    st.text(min_size=1, max_size=300).filter(lambda s: name_problem("topology", s) is not None),
    st.text(
        st.characters(categories=["Cc", "Cs", "Co", "Cn", "So", "Zs"]), min_size=1, max_size=40
    ),
    st.integers(MAX_NAME_CHARS + 1, 20_000).map(lambda n: "n" * n),
    st.sampled_from([".", "..", ".hidden", "-rf", "a/b", "a b", "x\uffff", "😀", "a\x00", "é"]),
)


def invoke(argv: list[str]) -> Result:
    result = CliRunner().invoke(cli, argv)
    assert "Traceback" not in result.output, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def one_line_error(result: Result, *words: str) -> str:
    """The single ``Error: ...`` line of ``result`` (exit status 2), holding ``words``."""
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("Error: ") and len(line) < 400, line
    for word in words:
        assert word in line, (word, line)
    return line


# -- names ------------------------------------------------------------------------------------


@FUZZ
@given(name=hostile_names, verb=st.sampled_from(NAME_VERBS))
def test_a_hostile_topology_name_is_one_line_for_every_verb(name: str, verb: list[str]) -> None:
    result = invoke([arg.format(name) if "{}" in arg else arg for arg in verb])
    one_line_error(result, "invalid topology name", "1-128 characters")


@given(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", fullmatch=True))
def test_names_within_the_rule_pass(name: str) -> None:
    assert check_name("topology", name) == name and name_problem("component", name) is None


def test_a_bad_name_is_quoted_escaped_and_cut() -> None:
    with pytest.raises(InvalidName) as raised:
        check_name("topology", "x" * 10_000)
    assert "'xxxx" in str(raised.value) and "... (10,000 characters)" in str(raised.value)
    assert len(str(raised.value)) < 200
    assert "'a\\x01\\uffff\\U0001f600'" in str(name_problem("topology", "a\x01\uffff😀"))


@given(st.text(max_size=300))
def test_a_default_name_from_a_file_stem_is_always_valid(stem: str) -> None:
    assert name_problem("topology", safe_name(stem)) is None


@pytest.mark.parametrize("bad", ["a b", "x" * 129, ".dot", "spout/1", "😀"])
def test_the_builder_refuses_a_bad_component_name(bad: str) -> None:
    builder = TopologyBuilder()
    builder.set_spout(bad, FeederSpout(["x"]))
    with pytest.raises(TopologyValidationError, match="invalid component name"):
        builder.create_topology()


# -- -c and --config --------------------------------------------------------------------------

invalid_yaml = st.one_of(
    st.integers(MAX_CONFIG_DEPTH + 1, 3_000).map(lambda n: "[" * n),
    st.integers(MAX_CONFIG_DEPTH + 1, 3_000).map(lambda n: "{a: " * n + "1" + "}" * n),
    st.integers(MAX_CONFIG_DEPTH + 1, 3_000).map(lambda n: "[" * n + "]" * n),
    st.tuples(st.text(max_size=20), st.sampled_from(YAML_UNACCEPTABLE), st.text(max_size=20)).map(
        "".join
    ),
    st.sampled_from(["[", "{", "a: b: c", "]", "'unterminated", "- a\nb: c", "*undefined"]),
)


@FUZZ
@given(
    key=st.text(st.characters(exclude_characters="="), min_size=1, max_size=80), value=invalid_yaml
)
def test_an_invalid_or_absurdly_nested_c_value_is_one_line(key: str, value: str) -> None:
    result = invoke(["list", "-c", f"{key}={value}"])
    line = one_line_error(result, "-c ")
    assert "invalid YAML" in line or "nested deeper than 64 levels" in line


@FUZZ
@given(value=invalid_yaml)
def test_an_invalid_or_absurdly_nested_config_file_is_one_line(
    value: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("conf") / "bad.yaml"
    path.write_text(f"key: {value}\n", encoding="utf-8", errors="surrogatepass")
    line = one_line_error(invoke(["list", "--config", str(path)]), f"--config {path}")
    assert "invalid YAML" in line or "nested deeper" in line or "cannot read" in line


@FUZZ
@given(st.text(max_size=200))
def test_any_c_value_parses_or_is_a_usage_error(text: str) -> None:
    try:
        parse_yaml(text, "-c 'k'")
    except UsageError as exc:
        assert "\n" not in exc.message and exc.message.startswith("-c 'k': ")


def test_yaml_aliases_cannot_expand_a_value_into_billions() -> None:
    lines = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for previous, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    with pytest.raises(UsageError, match="more than 100,000 items"):
        parse_yaml("\n".join(lines), "--config x")


def test_a_config_file_that_is_not_text_or_a_mapping_is_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    one_line_error(invoke(["list", "--config", str(binary)]), "cannot read it")
    listing = tmp_path / "list.yaml"
    listing.write_text("[1, 2]\n")
    one_line_error(invoke(["list", "--config", str(listing)]), "must hold a mapping")
    one_line_error(invoke(["list", "-c", "novalue"]), "expected KEY=VALUE")


# -- worker counts and znode sizes --------------------------------------------------------------


@pytest.mark.parametrize("workers", ["0", "-3", "10001", "1000000"])
def test_rebalance_refuses_an_absurd_worker_count_before_connecting(workers: str) -> None:
    result = invoke(["rebalance", "wc", "-n", workers, "--zookeeper", "127.0.0.1:1"])
    one_line_error(result, "--workers must be an integer from 1 to 10,000", workers)


def test_topology_workers_is_bounded_in_the_conf() -> None:
    with pytest.raises(cfg.ConfigError, match="from 1 to 10000, got 1000000"):
        cfg.resolve({cfg.TOPOLOGY_WORKERS: 1_000_000})


@given(
    counts=st.dictionaries(
        st.from_regex(r"[a-z_]{1,30}", fullmatch=True), st.integers(1, 300), max_size=6
    ),
    workers=st.integers(1, 2_000),
)
def test_the_assignment_size_bound_is_never_below_the_real_size(
    counts: dict[str, int], workers: int
) -> None:
    real = len(json.dumps(to_json(assign(counts, workers), 12), sort_keys=True).encode())
    assert real <= assignment_bytes(counts, workers) <= 3 * real + 4 * workers + 1_000


def test_rebalance_problem_names_the_limit() -> None:
    counts = {"words": 8, "count": 8, "__acker": 4}
    assert rebalance_problem("wc", 4, counts) is None
    assert "from 1 to 10,000, got 1000000" in str(rebalance_problem("wc", 1_000_000, counts))
    assert "True" in str(rebalance_problem("wc", True, counts))
    huge = {"words": 200_000}
    too_big = str(rebalance_problem("wc", 10, huge))
    assert f"at most {ZNODE_MAX_BYTES:,} (jute.maxbuffer)" in too_big and "'wc'" in too_big
    over = str(rebalance_problem("wc", 5, counts, local_slots("local[4]"), "spark.master=local[4]"))
    assert "5 worker(s) need 5 task slot(s)" in over and "spark.master=local[4] has 4" in over
    assert node_size_problem("x", ZNODE_MAX_BYTES) is None


@pytest.mark.parametrize(
    ("master", "slots"),
    [("local[4]", 4), ("local[2,3]", 2), ("local[*]", None), ("local", None),
     ("spark://h:7077", None), ("yarn", None), ("local[x]", None)],
)  # fmt: skip
def test_local_slots(master: str, slots: int | None) -> None:
    assert local_slots(master) == slots


def test_an_oversized_zookeeper_write_is_refused_before_it_is_sent() -> None:
    from topology.deploy.zk.connection import ZnodeTooLarge, _dump

    assert _dump({"a": "x" * 1_000})
    with pytest.raises(ZnodeTooLarge, match="jute.maxbuffer"):
        _dump({"conf": "x" * ZNODE_MAX_BYTES})


# -- the nimbus's planner ---------------------------------------------------------------------


def view(**changes: Any) -> TopologyView:
    fields: dict[str, Any] = {
        "topology_id": "wc-1-1700000000",
        "status": "ACTIVE",
        "workers": 2,
        "attempt": 1,
        "assigned_workers": 2,
        "driver_alive": True,
    }
    return TopologyView(**(fields | changes))


@pytest.mark.parametrize(
    ("request_", "capacity", "expected"),
    [
        ({"workers": 1_000_000, "wait": 0}, UNLIMITED, "from 1 to 10,000"),
        ({"workers": "3", "wait": 0}, UNLIMITED, "from 1 to 10,000"),
        ({"workers": 3, "wait": float("nan")}, UNLIMITED, "rebalance wait must be"),
        ({"workers": 9, "wait": 30}, Capacity(4, 2, "spark.master=local[4]"), "has 4 free of 4"),
    ],
)
def test_a_rebalance_the_nimbus_cannot_do_is_refused_before_deactivating(
    request_: dict[str, Any], capacity: Capacity, expected: str
) -> None:
    [action] = plan([view(rebalance=request_)], capacity, History(), 1_000.0).actions
    assert isinstance(action, UpdateRecord)
    assert action.changes["rebalance"] is None and "status" not in action.changes
    assert expected in action.changes["error"]


def test_a_topology_with_its_own_local_master_gets_its_slots() -> None:
    own = Capacity(2, 0, "spark.master=local[2], the topology's own application")
    [action] = plan(
        [view(rebalance={"workers": 3, "wait": 0}, own_capacity=own)], UNLIMITED, History(), 1.0
    ).actions
    assert isinstance(action, UpdateRecord) and "has 2 free of 2" in action.changes["error"]
    submitted = view(status="SUBMITTED", attempt=None, workers=3, own_capacity=own)
    [failed] = plan([submitted], UNLIMITED, History(), 1.0).actions
    assert isinstance(failed, FailTopology) and "local[2]" in failed.error


def test_a_record_with_a_bad_name_fails_instead_of_running() -> None:
    problem = str(name_problem("topology", "x" * 10_000))
    [action] = plan([view(problem=problem)], UNLIMITED, History(), 1.0).actions
    assert action == FailTopology("wc-1-1700000000", problem)
    assert plan([view(status="KILLED", problem=problem, kill_at=0.0)], UNLIMITED, History(), 1.0)


# -- the unsecured warning ----------------------------------------------------------------------


def test_without_a_secret_one_warning_line_goes_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    warn_if_unsecured({})
    out, err = capsys.readouterr()
    assert out == "" and err == UNSECURED_WARNING + "\n"
    assert cfg.CLUSTER_SECRET_FILE in err and "unsecured" in err
    warn_if_unsecured({cfg.CLUSTER_SECRET: "s" * 24})
    assert capsys.readouterr() == ("", "")


def test_submit_warns_on_stderr_and_keeps_stdout_clean() -> None:
    result = CliRunner().invoke(
        cli,
        ["submit", "examples/wordcount.py:topology", "--name", "wc", "--zookeeper", "127.0.0.1:1",
         "-c", f"{cfg.ZK_CONNECTION_TIMEOUT_SECS}=0.2"],
    )  # fmt: skip
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[0] == UNSECURED_WARNING
    assert UNSECURED_WARNING not in result.stdout


nested_values = st.recursive(
    st.integers() | st.text(alphabet="ab[]{}'\" ", max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet="ab", min_size=1, max_size=3), children, max_size=3)
    ),
    max_leaves=20,
)


def nesting(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)
    return 0


@FUZZ
@given(nested_values)
def test_flow_depth_counts_the_nesting_of_any_flow_yaml_value(value: object) -> None:
    """The pre-parse bound sees exactly the nesting YAML will build; brackets inside quoted
    strings do not count."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    assert flow_depth(text) == nesting(value), text


def test_a_deep_value_is_refused_before_the_parser_spends_seconds_on_it() -> None:
    started = time.monotonic()
    with pytest.raises(UsageError, match="nested deeper than 64 levels"):
        parse_yaml("[" * 3_000, "-c 'k'")
    assert time.monotonic() - started < 1.0  # the parser alone took 2.8 s to give up
