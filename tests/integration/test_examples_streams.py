"""The Streams API examples run on LocalCluster as ``sparkstorm local`` loads them and pass
their own ``verify``: the word count exact, fused and unfused (the config key), and
storm-starter's single join with every id joined once, with the Streams API and with
``JoinBolt``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, conf: dict[str, Any], done: Any) -> tuple[str, Any]:
    topology, module = load_topology(f"{EXAMPLES / name}.py:topology", conf)
    with LocalCluster() as cluster:
        cluster.submit_topology(name.replace("_", "-"), conf, topology)
        wait_for(lambda: cluster.results(name.replace("_", "-")), done, 60, 0.5)
        cluster.deactivate(name.replace("_", "-"))
        cluster.wait_until_drained(name.replace("_", "-"), timeout=60)
        return module.verify(cluster.results(name.replace("_", "-"))), topology


def words(results: dict[str, dict[int, Any]]) -> int:
    return sum(sum(c.values()) for c in results.get("count", {}).values())


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_streams_wordcount_counts_exactly(fusion: bool) -> None:
    conf = {"topology.workers": 2, "topology.streams.fusion": fusion}
    message, topology = run_example("streams_wordcount", conf, lambda r: words(r) > 20_000)
    assert "every count exact" in message
    assert len(topology.components) == (2 if fusion else 4)  # fused: into the spout


def test_single_join_with_the_streams_api_joins_every_id_once() -> None:
    def all_joined(results: dict[str, dict[int, Any]]) -> bool:
        return sum(r["joined"] for r in results.get("joined", {}).values()) >= 1000

    message, topology = run_example("single_join_streams", {"topology.workers": 2}, all_joined)
    assert message.startswith("all 1,000 ids joined")
    assert set(topology.components) == {"gender", "age", "join", "joined"}


def test_single_join_with_joinbolt_joins_every_id_into_the_right_row() -> None:
    def all_joined(results: dict[str, dict[int, Any]]) -> bool:
        return sum(len(r["rows"]) for r in results.get("report", {}).values()) >= 1000

    message, _ = run_example("single_join_joinbolt", {"topology.workers": 2}, all_joined)
    assert message.startswith("all 1,000 ids joined")
