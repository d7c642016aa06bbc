"""Issue 43's CLI papercuts (item 6), each as a newcomer meets it: the examples' names,
the README's and the docs' recipes, what a local run prints once."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.loader import load_topology

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture
def fresh_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loading an example imports it (and its siblings): forget them afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_the_streams_single_join_shows_its_join_as_join(fresh_modules: None) -> None:
    """The sink is named ``joined``, so the windowed join itself is the component ``join``
    (it was ``join-2-map``, beside a sink ``join`` that emits nothing)."""
    topology, module = load_topology(f"{EXAMPLES / 'single_join_streams.py'}:topology")
    assert set(topology.components) == {"gender", "age", "join", "joined"}
    assert [i.component for i in topology.components["joined"].inputs] == ["join"]
    ids = module.IDS
    results = {
        "joined": {1: {"joined": ids, "waiting": 0}},
        "gender": {0: {"acked": ids}},
        "age": {0: {"acked": ids}},
    }
    assert module.verify(results).startswith(f"all {ids:,} ids joined")


def test_the_redis_to_postgres_check_explains_executed_against_acked(
    fresh_modules: None,
) -> None:
    """The final table's ``windows`` row acks fewer tuples than it executed; what the run
    says at the end explains it, and so does docs/CONNECTORS.md."""
    sys.path.insert(0, str(EXAMPLES))
    import redis_to_postgres

    said = redis_to_postgres.verified({("sensor-0", 0.0): (3, 6.0, 1.0, 3.0)})
    assert said.startswith("1 windows of 3 readings, each counted exactly once (")
    assert "acked when it leaves its last window" in said
    assert "until later readings move the watermark past them" in said
    doc = " ".join((ROOT / "docs" / "CONNECTORS.md").read_text().split())
    assert "a windowed bolt acks a tuple when it leaves its last window" in doc


def _bash_block(doc: str, after: str) -> list[str]:
    """The commands of the first ``bash`` block after ``after`` in ``doc`` (continuation
    lines joined, comments dropped)."""
    text = (ROOT / "docs" / doc).read_text().split(after, 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    lines = (line.split("#", 1)[0].strip().removesuffix("&").strip() for line in block.splitlines())
    return [line for line in lines if line]


def test_the_state_operator_block_starts_zookeeper_and_nimbus_and_parses() -> None:
    """docs/STATE.md's operator block starts what it needs (``dev-zookeeper``, ``nimbus``)
    before ``submit``, and every line is a sparkstorm command with arguments it takes."""
    import shlex

    from cli.main import cli

    commands = _bash_block("STATE.md", "## Operating stateful topologies")
    verbs = [shlex.split(c)[1] for c in commands]
    assert verbs[:3] == ["dev-zookeeper", "nimbus", "submit"]
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "sparkstorm", command
        group = cli.make_context("sparkstorm", words[1:2], resilient_parsing=True)
        sub = cli.get_command(group, words[1])
        assert sub is not None, command
        sub.make_context(words[1], words[2:])  # raises on an option it does not take


def test_connectors_rescale_sentence_matches_state_and_the_code() -> None:
    """docs/CONNECTORS.md says what STATE.md says and ``rescale_position`` does: an
    exactly-once source's positions are merged, then each new task seeks its partitions
    (not "by task index")."""
    from topology.stateful import ReplayableSpout

    connectors = " ".join((ROOT / "docs" / "CONNECTORS.md").read_text().split())
    sentence = connectors.split("Changing a source's parallelism", 1)[1].split("- ", 1)[0]
    assert "by task index" not in sentence
    assert "merge every old task's checkpointed `{partition: position}`" in sentence
    state = " ".join((ROOT / "docs" / "STATE.md").read_text().split())
    assert "gets every old task's positions merged" in state
    merged = ReplayableSpout.rescale_position(None, [{"a": 1}, {"b": 2}], 0, 1)  # type: ignore[arg-type]
    assert merged == {"a": 1, "b": 2}


# -- what a local run says at start: once, and nothing with --quiet ---------------------------


class _Stopped(Exception):
    pass


@pytest.mark.parametrize("quiet", [False, True], ids=["default", "quiet"])
def test_local_says_the_unsecured_note_once_and_quiet_silences_it(
    quiet: bool, monkeypatch: pytest.MonkeyPatch, fresh_modules: None
) -> None:
    """Without a secret, ``local`` says a one-line note once (stderr), and hands the stack
    its progress printer — which also carries the nimbus's election, once; ``--quiet``
    silences both."""
    from click.testing import CliRunner

    import cli.local
    from cli.common import LOCAL_UNSECURED_NOTE, UNSECURED_WARNING
    from cli.main import cli as sparkstorm

    given: list[object] = []

    class Stack:  # stands in for LocalStack: records its progress printer, then stops
        def __init__(self, conf: object, progress: object) -> None:
            given.append(progress)

        def __enter__(self) -> None:
            raise _Stopped

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(cli.local, "LocalStack", Stack)
    args = ["local", f"{EXAMPLES / 'wordcount.py'}:topology", *(["--quiet"] if quiet else [])]
    result = CliRunner().invoke(sparkstorm, args)
    assert isinstance(result.exception, _Stopped)
    assert UNSECURED_WARNING not in result.stderr
    assert result.stderr.count(LOCAL_UNSECURED_NOTE) == (0 if quiet else 1)
    if quiet:
        assert result.stderr == "" and given == [cli.local._silent]
    else:
        assert result.stderr == LOCAL_UNSECURED_NOTE + "\n"
        assert len(LOCAL_UNSECURED_NOTE) < 160 and "--quiet" in LOCAL_UNSECURED_NOTE
        assert given != [cli.local._silent]
