"""Savepoints on a LocalCluster (real worker processes): a stateful word count stopped
with a savepoint mid-run and upgraded to changed bolt code counts every word exactly once;
a savepoint whose state no component takes is refused, naming the uid and the flag, and
accepted with it (the spout's position restored, the counts dropped); a crafted savepoint
reads, renames and deletes nothing outside its components' directories."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgpack
import pytest

from tests.integration.helpers import wait_for
from tests.integration.savepoint_components import upgraded_word_count
from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from topology import FileSpout, LocalCluster, TopologyBuilder
from topology.connectors import FileSink
from topology.deploy.savepoints import state_components
from topology.state.kv import key_bytes
from topology.state.savepoint import SavepointError, SavepointWriter, read_savepoint, read_scope

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

WORDS = word_list(24_000)
RATE = 4000.0  # words a second: the savepoint lands mid-run


def conf(tmp_path: Path) -> dict[str, Any]:
    return state_conf(tmp_path / "state", 2, 300)


def counted(cluster: LocalCluster, name: str, bolt: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for counts in cluster.results(name).get(bolt, {}).values():
        total.update(counts)
    return total


def settled(cluster: LocalCluster, name: str, bolt: str, expected: Counter[str]) -> Counter[str]:
    """The counts once the spout read everything and they reached ``expected`` (or stopped
    changing short of it)."""
    wait_for(lambda: cluster.results(name), finished, 120, interval=0.5)
    last: Counter[str] | None = None

    def steady(counts: Counter[str]) -> bool:
        nonlocal last
        done = counts == expected or counts == last
        last = counts
        return done

    return wait_for(lambda: counted(cluster, name, bolt), steady, 60, interval=0.7)


def position(path: str) -> int:
    info = read_savepoint(path)
    return int(msgpack.unpackb(dict(read_scope(info, "words#0"))[b"position"]))


def run_version_one(cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.submit_topology("v1", conf(tmp_path), stateful_word_count(IndexedWords(WORDS, RATE), 2))
    wait_for(lambda: merged_counts(cluster.results("v1")).total(), lambda n: n > 3000, 60)


@pytest.mark.parametrize("tasks", [2, 3])
def test_an_upgrade_from_a_savepoint_to_changed_code_counts_exactly(
    tmp_path: Path, tasks: int
) -> None:
    """Version 2 renames the bolt (uid= keeps its state), changes its class and output
    fields, and runs it as 2 tasks or, rescaled, 3."""
    with LocalCluster() as cluster:
        run_version_one(cluster, tmp_path)
        said: list[str] = []  # no wait_secs: the message timeout (30 s) bounds the wait
        started = time.monotonic()
        path = cluster.stop_with_savepoint("v1", str(tmp_path / "savepoints"), progress=said.append)
        assert time.monotonic() - started < 30, said  # only what was in flight was waited for
        assert [line for line in said if line.startswith("nothing in flight after ")], said
        assert cluster.topologies() == []
        info = read_savepoint(path)
        assert info.topology == "v1" and info.components["count"]["state"] == ["keyed"]
        assert 0 < position(path) < len(WORDS)  # mid-run: the restore has work to do
        cluster.submit_topology(
            "v2",
            conf(tmp_path),
            upgraded_word_count(IndexedWords(WORDS, RATE), tasks=tasks),
            from_savepoint=path,
        )
        assert settled(cluster, "v2", "counter", Counter(WORDS)) == Counter(WORDS)
        assert not cluster.errors("v2")


def test_a_savepoint_with_orphaned_state_is_refused_unless_allowed(tmp_path: Path) -> None:
    with LocalCluster() as cluster:
        run_version_one(cluster, tmp_path)
        path = cluster.savepoint("v1", str(tmp_path / "savepoints"))
        cluster.kill_topology("v1")
        orphaned = upgraded_word_count(IndexedWords(WORDS, RATE), bolt_id="counter", uid=None)
        with pytest.raises(SavepointError) as refused:
            cluster.submit_topology("v3", conf(tmp_path), orphaned, from_savepoint=path)
        assert "uid 'count'" in str(refused.value)
        assert "--allow-non-restored-state" in str(refused.value)
        assert cluster.topologies() == []  # nothing started
        cluster.submit_topology(
            "v3", conf(tmp_path), orphaned, from_savepoint=path, allow_non_restored_state=True
        )
        rest = Counter(WORDS[position(path) :])  # the counts dropped, the position kept
        assert settled(cluster, "v3", "counter", rest) == rest


def test_a_savepoint_on_simulated_time_moves_the_clock_to_its_checkpoint(tmp_path: Path) -> None:
    """Checkpoints come only as simulated time moves: the savepoint moves it itself."""
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology(
            "sim", conf(tmp_path), stateful_word_count(IndexedWords(WORDS[:2000]), 2)
        )
        wait_for(lambda: cluster.results("sim"), finished, 60, interval=0.2)
        before = cluster.simulated_time or 0.0
        path = cluster.savepoint("sim", str(tmp_path / "savepoints"))
        assert (cluster.simulated_time or 0.0) > before
        assert position(path) == 2000
        keys = dict(read_scope(read_savepoint(path), "count"))
        assert len(keys) == len(set(WORDS[:2000]))  # every word's count, keyed by word


def test_a_crafted_savepoint_reads_moves_and_deletes_nothing_outside(tmp_path: Path) -> None:
    """Issue 40's savepoints on real worker processes: a FileSpout's positions naming
    files outside its directory, a FileSink's handles renaming and deleting files outside
    its own (also through a symbolic link in it), restored with ``from_savepoint``."""
    src, out, victims = tmp_path / "src", tmp_path / "out", tmp_path / "canary"
    for folder in (src, out, victims):
        folder.mkdir()
    for name in ("a.txt", "b.txt", "secret.txt", ".inprogress-store-0-9-0.jsonl"):
        (victims / name).write_bytes(b"CANARY-SECRET\n")
    (out / "link").symlink_to(victims)
    (src / "words.txt").write_text("".join(f"w{i}\n" for i in range(200)))
    before = {p.name: p.read_bytes() for p in victims.iterdir()}
    builder = TopologyBuilder()
    builder.set_spout("lines", FileSpout(str(src), pattern="*.txt", scan_secs=0.1))
    builder.set_bolt("store", FileSink(str(out), fields=["line"])).shuffle_grouping("lines")
    topology = builder.create_topology()
    outside = {"../canary/secret.txt": [0, 0], "../../../../../../etc/passwd": [0, 0]}
    handle = [
        [str(victims / "a.txt"), str(victims / "renamed.txt")],
        [f"{out}/../canary/b.txt", f"{out}/../canary/secret.txt"],  # the target exists
        [f"{out}/link/.inprogress-store-0-9-0.jsonl", f"{out}/link/part-store-0-9-x-0.jsonl"],
    ]
    writer = SavepointWriter(str(tmp_path / "savepoints"), "files")
    position = [(b"position", msgpack.packb(outside)), (b"tasks", msgpack.packb(1))]
    writer.add_scope("lines#0", "lines", position)
    pending = key_bytes(("pending", 1, 0), 128, False)
    writer.add_scope("store#0", "store", [(pending, msgpack.packb(handle))])
    path = writer.finish(
        topology_id="files-1-1",
        checkpoint=1,
        key_groups=128,
        backend="sqlite",
        components=state_components(topology),
    ).path
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(tmp_path), topology, from_savepoint=path)
        lines = lambda: [  # noqa: E731
            json.loads(line)["line"] for p in out.glob("part-*") for line in p.read_text().split()
        ]
        assert sorted(wait_for(lines, lambda found: len(found) >= 200, 60)) == sorted(
            f"w{i}" for i in range(200)
        )
        errors = cluster.errors("files")
    assert {p.name: p.read_bytes() for p in victims.iterdir()} == before
    [spout_error] = [e["text"] for e in errors["lines"]]
    assert "partition '../canary/secret.txt' is refused: '..' in the path" in spout_error
    assert "(and 1 more refused" in spout_error
    [sink_error] = [e["text"] for e in errors["store"]]
    assert f"handle path {str([str(victims / 'a.txt'), str(victims / 'renamed.txt')])!r}" in (
        sink_error
    )
    assert "(and 2 more refused" in sink_error
