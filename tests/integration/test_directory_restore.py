"""Exactly-once state on the ``directory`` provider, whose restores stream a scope: two
workers killed with SIGKILL mid-run, the counts at the end equal the input."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.integration.helpers import kill_worker, wait_for
from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    settled_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WORDS = word_list(40_000)


def test_counts_on_the_directory_provider_are_exact_after_two_kills(tmp_path: Path) -> None:
    conf = {**state_conf(tmp_path, 2, 300), "topology.state.provider": "directory"}
    with LocalCluster() as cluster:
        cluster.submit_topology("dir", conf, stateful_word_count(IndexedWords(WORDS)))
        wait_for(lambda: merged_counts(cluster.results("dir")).total(), lambda n: n > 3000, 30)
        kill_worker(cluster, "dir", 0)  # the coordinator's and the spout's worker
        wait_for(lambda: merged_counts(cluster.results("dir")).total(), lambda n: n > 3000, 30)
        kill_worker(cluster, "dir", 1)
        assert not finished(cluster.results("dir"))  # the kills landed mid-run
        counts = settled_counts(lambda: cluster.results("dir"), 120, pause=0.7)
        assert counts == Counter(WORDS)
        errors = cluster.errors("dir")
        assert set(errors) <= {"__worker"}, errors  # only the two kills are reported
        # (a write in progress, or cut short by a kill, has a temporary name the
        # provider never lists)
        files = [
            p.name
            for p in tmp_path.rglob("*")
            if p.is_file() and "scopes" in p.parts and ".tmp-" not in p.name
        ]
        assert files and all(name.endswith("-sorted") for name in files), files
