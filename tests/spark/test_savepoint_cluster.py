"""Savepoints on the Spark-hosted cluster (what ``sparkstorm local`` runs), through the CLI:
``sparkstorm savepoint`` of a running stateful count, ``--inspect``, ``kill --savepoint``
(well within the message timeout; the killed topology's checkpoints deleted by the nimbus,
the savepoint kept), a submit of
changed code ``--from-savepoint`` refused for orphaned state and then accepted with a uid,
ending with exact counts."""

from __future__ import annotations

import json
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from tests.spark.helpers import wait_for
from tests.spark.test_cli import _run
from topology.deploy.cluster.client import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

WORDS = word_list(40_000)

VERSION_TWO = """\
from tests.integration.savepoint_components import upgraded_word_count
from tests.integration.state_components import IndexedWords, word_list

topology = upgraded_word_count(IndexedWords(word_list(40_000), rate=2500))
orphaned = upgraded_word_count(IndexedWords(word_list(40_000), rate=2500), uid=None)
"""


def _counter_counts(cluster: Cluster, name: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for counts in cluster.results(name).get("counter", {}).values():
        total.update(counts)
    return total


def test_savepoint_kill_and_upgrade_through_the_cli(
    cluster: Cluster, zk_conf: dict[str, Any], tmp_path: Path
) -> None:
    conf = state_conf(tmp_path / "state", 2, 500)
    topology = stateful_word_count(IndexedWords(WORDS, rate=2500), counters=2)
    topology_id = cluster.submit_topology("sp1", conf, topology)
    wait_for(lambda: merged_counts(cluster.results("sp1")).total() > 3000, 60, "counting")
    saved = tmp_path / "savepoints"

    taken = _run(zk_conf, "savepoint", "sp1", "--dir", str(saved))
    assert taken.exit_code == 0, taken.output
    first = taken.stdout.strip().splitlines()[-1]
    assert first.startswith(str(saved / "savepoint-sp1-"))
    inspected = _run(zk_conf, "savepoint", "--inspect", first, "--json")
    assert inspected.exit_code == 0, inspected.output
    assert json.loads(inspected.stdout)["components"]["count"]["entries"] > 0

    started = time.monotonic()  # no --wait: nothing is in flight once the savepoint is taken
    killed = _run(zk_conf, "kill", "sp1", "--savepoint", "--dir", str(saved))
    assert killed.exit_code == 0, killed.output
    assert time.monotonic() - started < 30  # the message timeout the kill waited before
    steps = killed.stderr.splitlines()
    assert len(steps) == len(set(steps)) and "nothing in flight after" in killed.stderr, steps
    [line] = [x for x in killed.stdout.splitlines() if x.startswith("Savepoint: ")]
    path = line.removeprefix("Savepoint: ")
    assert killed.stdout.splitlines()[-1] == "Killed topology: sp1"
    state_file = tmp_path / "state" / f"{topology_id}.sqlite"
    wait_for(lambda: not state_file.exists(), 30, "the nimbus to remove the checkpoints")
    assert Path(first).exists() and Path(path).exists()  # savepoints stay

    version_two = tmp_path / "wordcount_v2.py"
    version_two.write_text(textwrap.dedent(VERSION_TWO))
    options = [f"-c{k}={v}" for k, v in conf.items()]
    refused = _run(
        zk_conf,
        "submit",
        f"{version_two}:orphaned",
        "--name",
        "sp2",
        "--from-savepoint",
        path,
        *options,
    )
    assert refused.exit_code == 1, refused.output
    assert "uid 'count'" in refused.output and "--allow-non-restored-state" in refused.output
    assert "Traceback" not in refused.output

    submitted = _run(
        zk_conf,
        "submit",
        f"{version_two}:topology",
        "--name",
        "sp2",
        "--from-savepoint",
        path,
        *options,
    )
    assert submitted.exit_code == 0, submitted.output
    wait_for(lambda: finished(cluster.results("sp2")), 120, "the spout to read everything")
    wait_for(lambda: _counter_counts(cluster, "sp2") == Counter(WORDS), 60, "exact counts")
    cluster.kill_topology("sp2", wait_secs=0)
