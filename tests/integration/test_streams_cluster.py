"""The Streams API on a LocalCluster: ``update_state_by_key`` exactly once through two
worker processes killed with SIGKILL mid-run (the counts at the end equal the input)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import kill_worker, wait_for
from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    settled_counts,
    state_conf,
    word_list,
)
from topology import LocalCluster
from topology.streams import StreamBuilder

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WORDS = word_list(30_000)


def add_one(count: int | None, word: str) -> int:
    return (count or 0) + 1


def test_update_state_by_key_counts_exactly_once_through_two_sigkills(tmp_path: Path) -> None:
    sb = StreamBuilder()
    (
        sb.new_stream(IndexedWords(WORDS), name="words")
        .filter(bool)
        .key_by(lambda word: word)
        .update_state_by_key(add_one)
        .named("count")
    )
    conf: dict[str, Any] = state_conf(tmp_path, 2, 300)
    with LocalCluster() as cluster:
        cluster.submit_topology("streams", conf, sb.build())
        results = lambda: cluster.results("streams")  # noqa: E731
        wait_for(lambda: merged_counts(results()).total(), lambda n: n > 3000, 30)
        kill_worker(cluster, "streams", 0)
        wait_for(lambda: merged_counts(results()).total(), lambda n: n > 6000, 30)
        kill_worker(cluster, "streams", 1)
        assert not finished(results())  # the kills landed mid-run
        assert settled_counts(results, 120, pause=0.7) == Counter(WORDS)
        assert not cluster.errors("streams").get("count")
