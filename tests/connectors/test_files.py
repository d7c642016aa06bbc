"""The files connectors (fsspec): FileSource over memory:// and local directories (gzip,
new files, positions, bad JSON lines to ``errors``); FileSink's two-phase commit by hand,
its at-least-once mode, and exactly-once Parquet end to end — in process with a restart,
and on a LocalCluster with two workers killed by SIGKILL while a reader checks that no
visible file is ever partial; at-least-once JSON on a LocalCluster through a SIGKILLed
worker, and through an output directory read-only for a few seconds (nothing lost)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.connectors.files_components import ReadOnlyOutageSink
from tests.integration.helpers import wait_for
from tests.recording_collector import Recorder
from topology import LocalCluster, TopologyBuilder
from topology.assignment import Assignment
from topology.components import Component
from topology.connectors import Backoff, FileSink, FileSource
from topology.constants import COORDINATOR_COMPONENT, SYSTEM_COMPONENT, TICK_STREAM
from topology.context import TopologyContext
from topology.runtime.inprocess import InProcessRunner
from topology.state.kv import KeyValueState
from topology.tuple import Tuple, TupleSource

pytestmark = [pytest.mark.connectors, pytest.mark.timeout(60)]


# -- a recording collector and a context, to drive components by hand ------------------------


def context(tasks: int = 1, index: int = 0) -> Any:
    ids = {"c": list(range(1, tasks + 1)), COORDINATOR_COMPONENT: [tasks + 1]}
    owners = {t: c for c, ts in ids.items() for t in ts}
    assignment = Assignment(ids, owners, [sorted(owners)])
    task = ids["c"][index]
    return TopologyContext("t", "c", task, index, 0, (task,), None, assignment)  # type: ignore[arg-type]


def bound(component: Component, tasks: int = 1, index: int = 0) -> Recorder:
    recorder = Recorder()
    component._collector = recorder
    if isinstance(component, FileSource):
        component.open({}, context(tasks, index))
    else:
        component.prepare({}, context(tasks, index))  # type: ignore[attr-defined]
    return recorder


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def clocked(source: FileSource) -> FakeClock:
    from dataclasses import replace

    clock = FakeClock()
    source.backoff = replace(source.backoff, clock=clock)
    return clock


SOURCE = TupleSource("src", 1, "default", ("id", "day"))
TICK = TupleSource(SYSTEM_COMPONENT, -1, TICK_STREAM, ("tick",))


def rows(*ids: int) -> list[Tuple]:
    return [Tuple([i, f"2026-11-2{i % 3}"], SOURCE) for i in ids]


def memory_url() -> str:
    return f"memory://files-{uuid.uuid4().hex[:10]}"


def visible(fs: Any, root: str) -> list[str]:
    """Data files a reader (Spark) sees: no path part starts with ``.`` or ``_``."""
    found = fs.find(root) if fs.exists(root) else []
    return sorted(
        p
        for p in found
        if not any(part.startswith((".", "_")) for part in p[len(root) :].split("/"))
    )


# -- FileSource ---------------------------------------------------------------------------


def test_lines_of_memory_files_with_positions_and_seek() -> None:
    url = memory_url()
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{url}/a.log", b"one\ntwo\nthr")  # the last line is still being written
    source = FileSource(url, include_source=True, max_batch=10)
    out = bound(source)
    source.next_tuple()
    assert out.on() == [["a.log", 1, "one"], ["a.log", 2, "two"]]
    assert out.emitted[1][2] == ("a.log", [8, 2])  # msg id: (file, position after the line)
    assert source.position() == {"a.log": [8, 2]}
    source.seek({"a.log": [4, 1]})
    source.next_tuple()
    assert out.on()[-1] == ["a.log", 2, "two"]


def test_gzip_files_are_read_whole_and_bad_json_goes_to_errors(tmp_path: Path) -> None:
    lines = [json.dumps({"id": i, "v": i * 2}) for i in range(5)]
    lines[2] = '{"id": 2, "v":'  # malformed
    with gzip.open(tmp_path / "in.json.gz", "wt") as f:
        f.write("\n".join(lines))  # no newline at the end: the archive is whole
    (tmp_path / "_SUCCESS").write_text("")  # hidden: skipped
    source = FileSource(str(tmp_path), format="json", fields=["id", "v"], max_batch=100)
    out = bound(source)
    source.next_tuple()
    assert out.on() == [[0, 0], [1, 2], [3, 6], [4, 8]]
    [(partition, position, error, raw)] = out.on("errors")
    offset = len("\n".join(lines[:3])) + 1
    assert (partition, position, raw) == ("in.json.gz", [offset, 3], lines[2])
    assert error.startswith("JSONDecodeError")
    assert source.bad_records.value == 1


def test_a_watched_directory_yields_new_files_and_appended_lines(tmp_path: Path) -> None:
    (tmp_path / "1.txt").write_text("a\n")
    source = FileSource(str(tmp_path), pattern="*.txt", poll_interval_secs=5.0)
    clock = clocked(source)
    out = bound(source)
    source.next_tuple()
    (tmp_path / "2.txt").write_text("b\n")
    (tmp_path / "skip.csv").write_text("x\n")
    with open(tmp_path / "1.txt", "a") as f:
        f.write("c\n")
    source.next_tuple()
    assert out.on() == [["a"]]  # not listed again yet
    clock.now = 5.0
    source.next_tuple()
    assert sorted(v[0] for v in out.on()) == ["a", "b", "c"]
    assert source.owned == ["1.txt", "2.txt"]


def test_files_are_dealt_to_tasks_by_a_stable_hash(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"{i}.log").write_text(f"{i}\n")
    owned = []
    for index in range(3):
        source = FileSource(str(tmp_path))
        bound(source, tasks=3, index=index)
        owned.append(source.owned)
    assert sorted(n for names in owned for n in names) == [f"{i}.log" for i in range(8)]
    assert all(owned)


NO_NEWLINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lines=st.lists(NO_NEWLINE, max_size=12), partial=NO_NEWLINE, limit=st.integers(1, 24))
def test_any_bytes_give_lines_or_errors_and_long_lines_are_not_held(
    lines: list[bytes], partial: bytes, limit: int
) -> None:
    """Whatever the bytes: each ended line up to ``max_line_bytes`` is a tuple, each longer
    one an ``errors`` tuple with its first bytes, the unended tail waits; never a crash."""
    url = memory_url()
    fsspec.filesystem("memory").pipe(f"{url}/f.log", b"".join(x + b"\n" for x in lines) + partial)
    source = FileSource(url, max_line_bytes=limit, max_batch=100)
    out = bound(source)
    source.next_tuple()
    text = [x.rstrip(b"\r").decode("utf-8", "replace") for x in lines]
    assert out.on() == [[t] for x, t in zip(lines, text, strict=True) if len(x) <= limit]
    errors = out.on("errors")
    long = [(n, x) for n, x in enumerate(lines, 1) if len(x) > limit]
    assert [(p[1], raw) for _, p, _, raw in errors] == [
        (n, x[: limit + 1].decode("utf-8", "replace")) for n, x in long
    ]
    assert all(f"over max_line_bytes={limit}" in error for _, _, error, _ in errors)
    assert source.position() == {"f.log": [sum(len(x) + 1 for x in lines), len(lines)]}


def test_a_file_that_shrinks_is_read_again_and_one_deleted_is_forgotten(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("a1\na2\n")
    (tmp_path / "b.log").write_text("b1\n")
    source = FileSource(str(tmp_path), poll_interval_secs=0)
    out = bound(source)
    source.next_tuple()
    (tmp_path / "a.log").write_text("new\n")  # truncated and rewritten: shorter than read
    (tmp_path / "b.log").unlink()
    source.next_tuple()
    assert sorted(v[0] for v in out.on()) == ["a1", "a2", "b1", "new"]
    assert "b.log" in source.owned  # its line is still in flight (not acked)
    for _, _, msg_id in out.emitted:
        source.ack(msg_id)
    source.next_tuple()
    source.next_tuple()
    assert source.owned == ["a.log"]  # gone from two listings, nothing in flight: forgotten
    assert source.position() == {"a.log": [4, 1]}


# -- FileSink by hand -----------------------------------------------------------------------


def test_exactly_once_files_stay_hidden_until_the_checkpoint_completes() -> None:
    url = memory_url()
    fs, root = fsspec.core.url_to_fs(url)
    sink = FileSink(url, format="parquet", fields=["id", "day"], partition_by="day", batch_size=4)
    bound(sink)
    state = KeyValueState()
    sink.init_state(state)
    for tup in rows(*range(10)):
        sink.execute(tup)
    sink.pre_checkpoint(1)
    assert visible(fs, root) == []
    [handle] = [v for _, v in state.items()]
    assert len(handle) == 3 and all("/.inprogress-c-0-" in src for src, _ in handle)
    sink.checkpoint_complete(1)
    published = visible(fs, root)
    assert len(published) == 3 and all("/day=2026-11-2" in p for p in published)
    assert sum(pq.read_metadata(fs.open(p)).num_rows for p in published) == 10
    sink.commit(handle, 1)  # again, as after a lost notification: nothing changes
    assert visible(fs, root) == published and len(state) == 0


def test_a_restore_publishes_held_handles_and_deletes_other_in_progress_files() -> None:
    url = memory_url()
    fs, root = fsspec.core.url_to_fs(url)
    sink = FileSink(url, fields=["id", "day"], batch_size=1)
    bound(sink)
    sink.init_state(KeyValueState())
    for tup in rows(1, 2):
        sink.execute(tup)
    sink.pre_checkpoint(1)  # complete, but the notification is lost in a crash
    held = KeyValueState.restore(dict((k, v) for k, v in sink.state.everything() if v is not None))
    sink.execute(rows(3)[0])
    sink.pre_checkpoint(2)  # never completes
    assert len(fs.find(root)) == 2 and visible(fs, root) == []
    again = FileSink(url, fields=["id", "day"], batch_size=1)
    bound(again)
    again.init_state(held)
    [published] = visible(fs, root)
    assert fs.find(root) == [published] and published.endswith(".jsonl")
    assert [json.loads(line)["id"] for line in fs.cat(published).splitlines()] == [1, 2]


def test_at_least_once_publishes_every_roll_and_partitions_by_a_function() -> None:
    url = memory_url()
    fs, root = fsspec.core.url_to_fs(url)
    sink = FileSink(
        url,
        fields=["id", "day"],
        partition_by=lambda row: {"parity": row["id"] % 2},
        roll_size_bytes=40,
        guarantee="at_least_once",
        compression="gzip",
        batch_size=1,
    )
    bound(sink)
    sink.init_state(KeyValueState())
    for tup in rows(*range(6)):
        sink.execute(tup)
    published = visible(fs, root)  # per parity: two rows fill a file, the third is open
    assert len(published) == 2 and all(p.endswith(".jsonl.gz") for p in published)
    sink.cleanup()
    assert len(visible(fs, root)) == 4 and len(fs.find(root)) == 4
    ids = [
        json.loads(line)["id"]
        for p in visible(fs, root)
        for line in gzip.decompress(fs.cat(p)).splitlines()
    ]
    assert sorted(ids) == list(range(6))
    assert {p.split("/")[-2] for p in visible(fs, root)} == {"parity=0", "parity=1"}


def test_at_least_once_fails_the_write_of_a_part_file_that_vanished_before_publishing(
    tmp_path: Path,
) -> None:
    """Publishing a rolled file that is gone (its directory removed...) would lose its rows
    without a word: the write fails instead, so the topology rolls back and replays."""
    sink = FileSink(
        str(tmp_path / "out"),
        fields=["id", "day"],
        roll_size_bytes=40,
        guarantee="at_least_once",
        batch_size=1,
    )
    recorder = bound(sink)
    sink.init_state(KeyValueState())
    sink.execute(rows(0)[0])
    [in_progress] = (tmp_path / "out").iterdir()
    in_progress.unlink()
    second = rows(1)[0]
    sink.execute(second)  # fills the file: rolled, not publishable
    [error] = recorder.errors
    assert isinstance(error, FileNotFoundError)
    assert "vanished before it was published" in str(error)
    assert recorder.failed == [second]  # failed at once: the checkpoint rolls back
    assert second not in recorder.acked and recorder.input_failures == []


def test_rolling_by_time_on_a_tick() -> None:
    url = memory_url()
    fs, root = fsspec.core.url_to_fs(url)
    sink = FileSink(url, fields=["id", "day"], roll_interval_secs=10, batch_size=1)
    clock = FakeClock()
    sink.clock = clock
    assert sink.get_component_configuration() == {"topology.tick.tuple.freq.secs": 5}
    bound(sink)
    sink.init_state(KeyValueState())
    sink.execute(rows(1)[0])
    clock.now = 11.0
    sink.execute(Tuple([0], TICK))
    sink.execute(rows(2)[0])
    sink.pre_checkpoint(1)
    sink.checkpoint_complete(1)
    assert len(visible(fs, root)) == 2


# -- end to end ----------------------------------------------------------------------------


def write_input(fs: Any, root: str, files: int, per_file: int, bad: bool = False) -> list[int]:
    ids = []
    for f in range(files):
        lines = []
        for n in range(per_file):
            i = f * per_file + n
            ids.append(i)
            lines.append(json.dumps({"id": i, "day": f"2026-11-2{i % 3}"}))
        if bad and f == 0:
            lines.insert(3, "not json")
        fs.pipe(f"{root}/in-{f}.jsonl", ("\n".join(lines) + "\n").encode())
    return ids


def published_ids(fs: Any, root: str) -> Counter[int]:
    ids: Counter[int] = Counter()
    for path in visible(fs, root):
        with fs.open(path) as f:
            ids.update(pq.read_table(f).column("id").to_pylist())
    return ids


def files_topology(source_url: str, sink_url: str, **sink: Any) -> Any:
    builder = TopologyBuilder()
    spout = FileSource(
        source_url, format="json", fields=["id", "day"], guarantee="exactly_once", max_batch=50
    )
    builder.set_spout("files", spout, 2)
    store = FileSink(sink_url, format="parquet", partition_by="day", batch_size=25, **sink)
    builder.set_bolt("store", store, 2).shuffle_grouping("files")
    return builder.create_topology()


def test_exactly_once_parquet_in_process_through_a_worker_restart() -> None:
    source_url, sink_url = memory_url(), memory_url()
    fs, out_root = fsspec.core.url_to_fs(sink_url)
    ids = write_input(fs, fsspec.core.url_to_fs(source_url)[1], 4, 300, bad=True)
    conf = {
        "topology.workers": 2,
        "topology.state.provider": "memory",
        "topology.state.checkpoint.interval.ms": 50,
    }
    runner = InProcessRunner(files_topology(source_url, sink_url, row_group_rows=50), conf)
    runner.activate()
    for _ in range(30):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()
    runner.restart_worker(1)
    for _ in range(4000):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()
        if sum(published_ids(fs, out_root).values()) >= len(ids):
            break
    for _ in range(40):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()
    assert published_ids(fs, out_root) == Counter(ids)
    # the bad line, reported (nothing keeps dead letters here), maybe again after a restore
    assert {(e[0], "does not decode" in e[2]) for e in runner.errors} <= {("files", True)}


@pytest.mark.timeout(150)
def test_exactly_once_parquet_on_a_local_cluster_through_two_sigkills(tmp_path: Path) -> None:
    source, sink = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    fs = fsspec.filesystem("file")
    ids = write_input(fs, str(source), 4, 1500)
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path / "state"),
        "topology.state.checkpoint.interval.ms": 200,
        "topology.max.spout.pending": 100,
    }
    partial: list[str] = []
    checked: set[str] = set()
    stop = threading.Event()

    def read_visible() -> None:  # a reader beside the writers: every visible file whole
        while not stop.is_set():
            for path in visible(fs, str(sink)):
                try:
                    pq.read_metadata(path)
                    checked.add(path)
                except FileNotFoundError:
                    continue
                except Exception as exc:
                    partial.append(f"{path}: {exc!r}")
            stop.wait(0.05)

    reader = threading.Thread(target=read_visible, daemon=True)
    reader.start()
    topology = files_topology(str(source), str(sink), roll_size_bytes=2000, row_group_rows=100)
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf, topology)
        for worker, seen in ((0, 500), (1, 2500)):
            wait_for(
                lambda: sum(published_ids(fs, str(sink)).values()), lambda n, s=seen: n > s, 60, 0.2
            )
            landed = sum(published_ids(fs, str(sink)).values())  # (before: relaunches are slow)
            os.kill(cluster.worker_pids("files")[worker], signal.SIGKILL)
            wait_for(lambda w=worker: cluster.restarts("files").get(w, 0), bool, 30)
        assert landed < len(ids)  # the kills landed mid-run
        wait_for(
            lambda: sum(published_ids(fs, str(sink)).values()), lambda n: n >= len(ids), 90, 0.3
        )
        stop.wait(1.0)  # a few more checkpoints: nothing more may appear
        final = published_ids(fs, str(sink))
        errors = cluster.errors("files")
    stop.set()
    reader.join(5)
    assert final == Counter(ids)
    assert partial == [] and len(checked) > 10
    # what the killed tasks left in progress was deleted by their restore
    assert [p for p in fs.find(str(sink)) if "/.inprogress-" in p] == []
    assert not errors.get("store") and not errors.get("files")


# -- at-least-once on a LocalCluster ------------------------------------------------------------


def published_json_ids(fs: Any, root: str) -> Counter[int]:
    """The ids of the rows of the visible JSON-lines files (each line must parse: a visible
    file is never partial)."""
    ids: Counter[int] = Counter()
    for path in visible(fs, root):
        ids.update(json.loads(line)["id"] for line in fs.cat(path).splitlines())
    return ids


def at_least_once_topology(source_url: str, store: FileSink) -> Any:
    builder = TopologyBuilder()
    spout = FileSource(source_url, format="json", fields=["id", "day"], max_batch=50)
    builder.set_spout("files", spout, 2)
    builder.set_bolt("store", store, 2).shuffle_grouping("files")
    return builder.create_topology()


def at_least_once_conf(tmp_path: Path) -> dict[str, Any]:
    return {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path / "state"),
        "topology.state.checkpoint.interval.ms": 200,
        "topology.max.spout.pending": 100,
    }


@pytest.mark.timeout(90)
def test_at_least_once_json_on_a_local_cluster_through_a_sigkill(tmp_path: Path) -> None:
    """FileSource (at-least-once) -> FileSink(guarantee="at_least_once"): a worker is
    SIGKILLed mid-run; every input row is published at least once (the rows after the
    restored checkpoint again: counted), and no visible file is partial."""
    source, sink = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    fs = fsspec.filesystem("file")
    ids = write_input(fs, str(source), 4, 1000)
    store = FileSink(str(sink), guarantee="at_least_once", roll_size_bytes=2000, batch_size=25)
    topology = at_least_once_topology(str(source), store)
    with LocalCluster() as cluster:
        cluster.submit_topology("files-alo", at_least_once_conf(tmp_path), topology)
        wait_for(
            lambda: sum(published_json_ids(fs, str(sink)).values()), lambda n: n > 400, 60, 0.1
        )
        restarts = cluster.restarts("files-alo").get(1, 0)
        landed = len(published_json_ids(fs, str(sink)))  # (before: relaunches are slow)
        os.kill(cluster.worker_pids("files-alo")[1], signal.SIGKILL)
        wait_for(lambda: cluster.restarts("files-alo").get(1, 0), lambda n: n > restarts, 30)
        assert landed < len(ids)  # the kill landed mid-run
        wait_for(lambda: len(published_json_ids(fs, str(sink))), lambda n: n >= len(ids), 60, 0.2)
        final = published_json_ids(fs, str(sink))
        errors = cluster.errors("files-alo")
    assert set(final) == set(ids)
    duplicates = sum(final.values()) - len(ids)
    print(f"files at-least-once through a SIGKILL: {len(ids)} rows, {duplicates} published twice")
    assert not errors.get("store") and not errors.get("files")


@pytest.mark.timeout(90)
def test_an_output_directory_read_only_for_seconds_loses_nothing(tmp_path: Path) -> None:
    """At-least-once into a FileSink whose output directory refuses every change (new part
    files, renames) for 3 s mid-run: the sink retries creating and publishing its files with
    backoff (blocking: the spouts wait), then goes on; every row is published."""
    source, sink, flag = tmp_path / "in", tmp_path / "out", tmp_path / "read-only"
    source.mkdir()
    fs = fsspec.filesystem("file")
    ids = write_input(fs, str(source), 4, 1000)
    store = ReadOnlyOutageSink(
        str(sink),
        flag=str(flag),
        guarantee="at_least_once",
        roll_size_bytes=2000,
        batch_size=25,
        backoff=Backoff(initial_secs=0.05, max_secs=0.5),
    )
    topology = at_least_once_topology(str(source), store)
    with LocalCluster() as cluster:
        cluster.submit_topology("files-ro", at_least_once_conf(tmp_path), topology)
        wait_for(
            lambda: sum(published_json_ids(fs, str(sink)).values()), lambda n: n > 400, 60, 0.1
        )
        flag.touch()
        try:
            time.sleep(0.5)  # a rename under way when the directory turned read-only ends
            during = published_json_ids(fs, str(sink))
            time.sleep(2.5)
            assert published_json_ids(fs, str(sink)) == during  # nothing got in meanwhile
        finally:
            flag.unlink()
        assert len(during) < len(ids)  # the outage landed mid-run
        wait_for(lambda: len(published_json_ids(fs, str(sink))), lambda n: n >= len(ids), 60, 0.2)
        final = published_json_ids(fs, str(sink))
        errors = cluster.errors("files-ro")
    assert set(final) == set(ids)
    duplicates = sum(final.values()) - len(ids)
    print(f"files read-only for 3 s: {len(ids)} rows, {duplicates} published twice")
    assert not errors.get("store") and not errors.get("files")
