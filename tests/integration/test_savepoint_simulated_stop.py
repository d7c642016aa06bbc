"""Stop-with-savepoint on a LocalCluster on simulated time: the savepoint moves the clock
to a checkpoint begun after the deactivation, the topology stops, and a new one restored
from it counts every word exactly once."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.helpers import wait_for
from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from tests.integration.test_cluster_savepoints import counted, position
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

WORDS = word_list(6_000)


def test_stop_with_savepoint_on_simulated_time(tmp_path: Path) -> None:
    conf = state_conf(tmp_path / "state", 2, 300)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("sim", conf, stateful_word_count(IndexedWords(WORDS, 2000.0), 2))
        wait_for(lambda: merged_counts(cluster.results("sim")).total(), lambda n: n > 500, 60)
        said: list[str] = []
        began = time.monotonic()
        path = cluster.stop_with_savepoint("sim", str(tmp_path / "sp"), progress=said.append)
        assert time.monotonic() - began < 60, said
        assert cluster.topologies() == []
        at = position(path)
        assert 0 < at <= len(WORDS)
        cluster.submit_topology(
            "again", conf, stateful_word_count(IndexedWords(WORDS, 2000.0), 2), from_savepoint=path
        )
        wait_for(lambda: cluster.results("again"), finished, 120, interval=0.3)
        expected = Counter(WORDS)
        got = wait_for(lambda: counted(cluster, "again", "count"), lambda c: c == expected, 60)
        assert got == expected
