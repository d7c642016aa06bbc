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
