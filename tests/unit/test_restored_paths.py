"""Paths and partitions restored from a checkpoint stay inside their component, whatever a
crafted savepoint's handles and positions say (hypothesis-generated: ``..``, absolute
paths elsewhere, ``file://`` URLs, symbolic links leading out, NUL, empty parts,
non-strings, wrong shapes).  A :class:`FileSink` renames and deletes nothing outside its
directory and a :class:`FileSource` reads nothing outside its own — a canary directory
beside each stays byte for byte as it was — while what is legitimate is still published
or read; every refusal is counted, logged with its reason and reported once, naming the
component and the path.  Kafka, Redis and PostgreSQL ignore partitions and markers they
are not configured for the same way (checked without their servers)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.recording_collector import Recorder, bound
from topology.connectors import FileSink, FileSource
from topology.connectors.restored import RestoreRefusals
from topology.state.kv import KeyValueState
from topology.tuple import Tuple, TupleSource

pytestmark = pytest.mark.timeout(120)

SECRET = b"CANARY-SECRET\n"
SOURCE = TupleSource("src", 1, "default", ("id", "day"))
RUN_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def snapshot(folder: Path) -> dict[str, Any]:
    """Every name under ``folder`` (links as their target), with its bytes."""
    out: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            out[name] = ("link", os.readlink(path))
        elif path.is_file():
            out[name] = path.read_bytes()
        else:
            out[name] = "dir"
    return out


def canary(tmp_path: Path) -> Path:
    """A directory beside the component's, with files a crafted path could aim at (an
    in-progress file of component ``c`` too, which a restore deletes when it is its own)."""
    folder = tmp_path / "canary"
    folder.mkdir(exist_ok=True)
    for name in ("a.txt", "b.txt", "secret.txt", ".inprogress-c-0-9-0.jsonl"):
        (folder / name).write_bytes(SECRET)
    return folder


#: Names a crafted path may end in: the victims, and names the sink would act on.
NAMES = ["a.txt", ".inprogress-c-0-9-0.jsonl", "part-c-0-00000007-x-0.jsonl"]


def prefixes(root: Path, victims: Path) -> st.SearchStrategy[str]:
    """Where a crafted path may lead: the sink's directory, and ways out of it."""
    return st.sampled_from(
        [
            str(root),
            f"{root}/..",
            f"{root}/../canary",
            f"{root}/sub/../../canary",
            f"{root}/link",
            f"{root}/",
            f"{root}/.",
            str(victims),
            f"file://{victims}",
            f"{root}\x00",
            "../canary",
            "",
        ]
    )


def hostile(root: Path, victims: Path) -> st.SearchStrategy[Any]:
    """Paths a crafted handle or position may name, most of them outside ``root``."""
    joined = st.builds(lambda p, n: f"{p}/{n}", prefixes(root, victims), st.sampled_from(NAMES))
    return joined | st.text(max_size=12) | st.integers() | st.none()


def pair(root: Path, victims: Path) -> st.SearchStrategy[Any]:
    """One ``[source, target]`` pair grown from the sink's own (an in-progress file and
    its part file in one folder) by moving it to another folder, renaming its files, or
    replacing them with any path or value."""
    folder, names = prefixes(root, victims), st.sampled_from(NAMES)
    renamed = st.builds(lambda f, a, b: [f"{f}/{a}", f"{f}/{b}"], folder, names, names)
    replaced = st.lists(hostile(root, victims), max_size=3)
    return st.one_of(moved(root, victims), renamed, replaced)


def pairs(root: Path, victims: Path) -> st.SearchStrategy[Any]:
    """A handle: a list of :func:`pair`, or anything else."""
    return st.lists(pair(root, victims), max_size=4) | hostile(root, victims)


def moved(root: Path, victims: Path, component: str = "c") -> st.SearchStrategy[list[str]]:
    """A pair named exactly as the sink names its files, in a folder a crafted handle
    chose (most of them outside ``root``)."""
    return st.builds(
        lambda f: [
            f"{f}/.inprogress-{component}-0-9-0.jsonl",
            f"{f}/part-{component}-0-00000009-x-0.jsonl",
        ],
        prefixes(root, victims),
    )


# -- FileSink ---------------------------------------------------------------------------------


def sink_with_a_staged_file(root: Path) -> tuple[FileSink, Recorder, KeyValueState]:
    """A sink that pre-committed one file in checkpoint 1 (a real handle), then crashed."""
    sink = FileSink(str(root), fields=["id", "day"], batch_size=1)
    bound(sink)
    sink.init_state(KeyValueState())
    sink.execute(Tuple([1, "d"], SOURCE))
    sink.pre_checkpoint(1)
    held = dict(sink.state.items())
    again = FileSink(str(root), fields=["id", "day"], batch_size=1)
    recorder = bound(again)
    return again, recorder, KeyValueState(held)


@RUN_SETTINGS
@given(data=st.data())
def test_restored_sink_handles_touch_nothing_outside_the_sink(tmp_path: Path, data: Any) -> None:
    root, victims = tmp_path / "out", canary(tmp_path)
    root.mkdir(exist_ok=True)
    (root / "sub").mkdir(exist_ok=True)
    if not (root / "link").is_symlink():
        (root / "link").symlink_to(victims)
    before = snapshot(victims)
    sink, recorder, state = sink_with_a_staged_file(root)
    handles = data.draw(st.lists(pairs(root, victims), max_size=4))
    ids = data.draw(
        st.lists(st.integers(-3, 2**64) | st.floats() | st.text(max_size=2), max_size=4)
    )
    for n, (handle, checkpoint) in enumerate(zip(handles, [*ids, *range(2, 10)], strict=False)):
        state.put(("pending", checkpoint, n), handle)
    sink.init_state(state)

    assert snapshot(victims) == before
    published = [p for p in root.iterdir() if p.name.startswith("part-c-0-")]
    assert [json.loads(line)["id"] for p in published for line in p.read_text().splitlines()]
    assert not [p for p in root.iterdir() if p.name.startswith(".inprogress-")]
    refused = int(sink._refused.value)
    assert len(recorder.errors) == (1 if refused else 0)
    if refused:
        [error] = recorder.errors
        assert error.startswith("c#0: a restored checkpoint's ") and "is refused: " in error
        reasons = [line for line in recorder.logged if "is refused: " in line]
        assert len(reasons) == min(refused, 10)
        assert all(line.split("is refused: ", 1)[1] for line in reasons)


def test_the_reported_attack_renames_and_deletes_nothing(tmp_path: Path) -> None:
    """Issue 40's savepoint: handles naming one victim to rename and one to delete."""
    root, victims = tmp_path / "out", canary(tmp_path)
    root.mkdir()
    before = snapshot(victims)
    sink = FileSink(str(root), fields=["id", "day"])
    recorder = bound(sink)
    rename = [str(victims / "a.txt"), str(victims / "renamed.txt")]
    delete = [f"{root}/../canary/b.txt", f"{root}/../canary/secret.txt"]  # target exists
    sink.init_state(KeyValueState({("pending", 3, 0): [rename, delete]}))
    assert snapshot(victims) == before
    assert sink._refused.value == 2
    [error] = recorder.errors
    assert str(victims / "a.txt") in error and "not under" in error and "(and 1 more" in error


@pytest.mark.parametrize(
    ("folder", "reason"),
    [
        ("{root}/link", "leads out of {root} through a symbolic link"),
        ("{root}/../canary", "'..' in the path"),
        ("{victims}", "not under {root}"),
        ("file://{victims}", "not under {root}"),
        ("{root}/sub/../../canary", "'..' in the path"),
    ],
)
def test_each_way_out_is_refused_with_its_reason(tmp_path: Path, folder: str, reason: str) -> None:
    """A pair named exactly as the sink names its files, in a folder outside the sink."""
    root, victims = tmp_path / "out", canary(tmp_path)
    (root / "sub").mkdir(parents=True)
    (root / "link").symlink_to(victims)
    before = snapshot(victims)
    sink = FileSink(str(root), fields=["id", "day"])
    recorder = bound(sink)
    where = folder.format(root=root, victims=victims)
    pair = [f"{where}/.inprogress-c-0-9-0.jsonl", f"{where}/part-c-0-00000009-x-0.jsonl"]
    sink.init_state(KeyValueState({("pending", 9, 0): [pair]}))
    assert snapshot(victims) == before and sink._refused.value == 1
    [error] = recorder.errors
    assert f"is refused: {reason.format(root=root)}; it is ignored" in error


# -- FileSource -------------------------------------------------------------------------------


def outside_names(victims: Path) -> list[str]:
    """File names a crafted position may give a source whose directory is beside
    ``victims`` (with a ``link`` in it leading there): every way out."""
    return [
        "../canary/secret.txt",
        "../../../../../../etc/passwd",
        str(victims / "secret.txt"),
        "link/secret.txt",
        "sub/../../canary/secret.txt",
    ]


def positions(root: Path, victims: Path) -> st.SearchStrategy[Any]:
    others = [
        ".hidden.txt",
        "_meta.txt",
        "sub/deep.txt",
        "good.txt",
        "missing.txt",
        "a\x00b.txt",
        "",
    ]
    names = st.sampled_from(outside_names(victims) + others) | st.text(max_size=8)
    where = st.sampled_from([[0, 0], [5, 1], [-1, 0], [2**64, 0], [0], "0", None, {"a": 1}])
    keys = names | st.integers() | st.none()
    return st.dictionaries(keys, where, max_size=6) | st.lists(names) | st.text(max_size=4)


@RUN_SETTINGS
@given(data=st.data())
def test_restored_source_positions_read_nothing_outside_the_source(
    tmp_path: Path, data: Any
) -> None:
    root, victims = tmp_path / "src", canary(tmp_path)
    (root / "sub").mkdir(parents=True, exist_ok=True)
    (root / "good.txt").write_bytes(b"good line\n")
    (root / "sub" / "deep.txt").write_bytes(SECRET)  # not read: recursive=False
    (root / ".hidden.txt").write_bytes(SECRET)
    if not (root / "link").is_symlink():
        (root / "link").symlink_to(victims)
    source = FileSource(str(root), pattern="*.txt", guarantee="exactly_once", max_batch=50)
    recorder = bound(source, checkpointed=True)
    source.seek(data.draw(positions(root, victims)))
    for _ in range(3):
        source.next_tuple()
    lines = [values[0] for values in recorder.on()]
    assert "CANARY-SECRET" not in lines and not any(line.startswith("root:") for line in lines)
    assert set(source.owned) <= {"good.txt"}
    refused = int(source._refused.value)
    assert len(recorder.errors) == (1 if refused else 0)
    if refused:
        assert recorder.errors[0].startswith("c#0: a restored checkpoint's ")


def test_the_reported_position_emits_nothing_of_etc_passwd(tmp_path: Path) -> None:
    """Issue 40's savepoint: ``{"../../../../../etc/passwd": [0, 0]}`` as a position."""
    (tmp_path / "in").mkdir()
    source = FileSource(str(tmp_path / "in"), guarantee="exactly_once")
    recorder = bound(source, checkpointed=True)
    source.seek({"../../../../../etc/passwd": [0, 0]})
    source.next_tuple()
    assert recorder.on() == [] and source.owned == []
    [error] = recorder.errors
    assert "partition '../../../../../etc/passwd' is refused: '..' in the path" in error


def test_a_legitimate_restored_position_is_still_read_from_where_it_was(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_bytes(b"one\ntwo\n")
    source = FileSource(str(tmp_path / "in"), guarantee="exactly_once")
    recorder = bound(source, checkpointed=True)
    source.seek({"a.txt": [4, 1], "gone.txt": [9, 2]})  # a file deleted since: adopted
    source.next_tuple()
    assert recorder.on() == [["two"]] and recorder.errors == []


# -- the other connectors ---------------------------------------------------------------------


def test_other_sources_ignore_partitions_they_are_not_configured_for() -> None:
    from topology.connectors import KafkaSpout, PostgresPollingSource, RedisStreamSpout

    kafka = KafkaSpout(["orders"], bootstrap_servers="localhost:9092", group_id="g")
    assert kafka.restored_problem("orders:3", 17) is None
    assert "not a partition of the topics" in str(kafka.restored_problem("secrets:0", 1))
    assert "not an offset" in str(kafka.restored_problem("orders:0", -1))
    redis = RedisStreamSpout("redis://localhost", streams=["events"], outputs=["f"])
    assert redis.restored_problem("events", "1700000000000-3") is None
    assert "not one of the streams" in str(redis.restored_problem("session:admin", "0-0"))
    assert "not an entry id" in str(redis.restored_problem("events", "$"))
    pg = PostgresPollingSource("postgresql://x", "orders", ["id"], "id")
    assert pg.restored_problem("orders", 41) is None
    assert "not one of the tables" in str(pg.restored_problem("pg_authid", 0))
    assert "position column" in str(pg.restored_problem("orders", [1, 2]))
    for source in (kafka, redis, pg):
        assert source.restored_problem(5, 0) == "a partition that is not a string"


def test_other_sinks_keep_only_their_own_markers() -> None:
    from topology.connectors import (
        KafkaTransactionalSink,
        PostgresTransactionalSink,
        RedisTransactionalSink,
    )

    seen: list[str] = []
    refusals = RestoreRefusals(Recorder(), "c#0", _counter())  # type: ignore[arg-type]
    refusals.refuse = lambda what, why: seen.append(f"{what}: {why}")  # type: ignore[method-assign]
    redis = RedisTransactionalSink("redis://localhost", stream="s", fields=["a"])
    redis.sink_prefix = "c#"
    assert redis.restored_handle(["sparkstorm:sink:c#1@x", ["a"], [[1]]], refusals)
    assert redis.restored_handle(["session:admin", ["a"], [[1]]], refusals) is None
    assert redis.restored_handle(["sparkstorm:sink:c#0@x", ["a"], [[1, 2]]], refusals) is None
    pg = PostgresTransactionalSink("postgresql://x", "t", ["a"])
    pg.sink_prefix = "c#"
    assert pg.restored_handle(["c#0@x", [[1]]], refusals)
    assert pg.restored_handle(["other#0@x", [[1]]], refusals) is None
    kafka = KafkaTransactionalSink("out", bootstrap_servers="localhost:9092")
    assert kafka.restored_handle({"run": "r", "records": [[None, b"v"]]}, refusals)
    assert kafka.restored_handle({"run": "r", "records": [["k", 1]]}, refusals) is None
    assert len(seen) == 4 and all(": " in line for line in seen)


def _counter() -> Any:
    from topology.metrics import Counter

    return Counter()
