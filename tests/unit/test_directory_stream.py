"""The ``directory`` provider's streamed restore: a scope as of a checkpoint equals a
plain-dict replay of what was written, in key order, read a buffer at a time (memory
bounded by the buffers, not the scope); files an older version wrote unsorted still read;
a file whose name promises order and whose keys are out of it is corrupt."""

from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology.state.backends import CorruptCheckpoint, DirectoryBackend
from topology.state.backends.codec import pack_entries, unpack_entries
from topology.state.backends.directory_stream import SORTED, file_entries, write_entries

pytestmark = pytest.mark.timeout(120)

KEYS = st.binary(max_size=3)
VALUES = st.none() | st.binary(max_size=4)
# per checkpoint: each task's writes, and whether the checkpoint completes
CHECKPOINTS = st.lists(
    st.tuples(st.lists(st.lists(st.tuples(KEYS, VALUES), max_size=6), max_size=3), st.booleans()),
    max_size=8,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(checkpoints=CHECKPOINTS, retained=st.integers(1, 3))
def test_a_streamed_restore_equals_a_dict_replay(
    tmp_path_factory: pytest.TempPathFactory, checkpoints: list, retained: int
) -> None:
    backend = DirectoryBackend(str(tmp_path_factory.mktemp("dir")), retained)
    model: dict[bytes, bytes] = {}
    as_of: dict[int, dict[bytes, bytes]] = {}
    for number, (tasks, completes) in enumerate(checkpoints, 1):
        staged = dict(model)
        for task in tasks:
            backend.write(number, 1, "s", task)
            for key, value in task:
                if value is None:
                    staged.pop(key, None)
                else:
                    staged[key] = value
        if completes:
            backend.complete(number, 1, {})
            model = staged
            as_of[number] = dict(model)
        for kept in sorted(as_of)[-retained:]:
            streamed = list(backend.read_all(kept, "s"))
            assert streamed == sorted(as_of[kept].items())
            assert backend.read(kept, "s", lambda k: k[:1] == b"a") == {
                k: v for k, v in as_of[kept].items() if k[:1] == b"a"
            }


def test_a_restore_holds_a_buffer_per_file_not_the_scope(tmp_path: Path) -> None:
    backend = DirectoryBackend(str(tmp_path), 1)
    value = b"v" * 200
    for number in (1, 2, 3):  # the first folds into a compacted file, two more on top
        entries = [(b"%08d" % (i * 3 + number), value) for i in range(20_000)]
        backend.write(number, 1, "s", entries)
        backend.complete(number, 1, {})
    folder = tmp_path / "scopes" / "s"
    stored = sum(os.path.getsize(folder / name) for name in os.listdir(folder))
    assert stored > 10_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in backend.read_all(3, "s"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 60_000
    # read whole, the scope alone would take more than the files; streamed, ~1 MB here
    assert peak < stored // 6, (peak, stored)


def test_files_written_unsorted_by_an_older_version_still_read(tmp_path: Path) -> None:
    backend = DirectoryBackend(str(tmp_path))
    backend.write(1, 1, "s", [(b"b", b"1"), (b"a", b"1")])
    backend.complete(1, 1, {})
    folder = tmp_path / "scopes" / "s"
    (name,) = os.listdir(folder)
    (folder / name).rename(folder / name.removesuffix(SORTED))  # as issue 29 named them
    (folder / "000000000002-1-old").write_bytes(pack_entries([(b"c", b"2"), (b"a", None)]))
    backend.complete(2, 1, {})
    assert list(backend.read_all(1, "s")) == [(b"a", b"1"), (b"b", b"1")]
    assert list(backend.read_all(2, "s")) == [(b"b", b"1"), (b"c", b"2")]
    backend.write(3, 1, "s", [(b"d", b"3")])
    backend.complete(3, 1, {})
    assert list(backend.read_all(3, "s")) == [(b"b", b"1"), (b"c", b"2"), (b"d", b"3")]


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ([(b"b", b"1"), (b"a", b"1")], "keys out of order"),
        ([(b"a", b"1"), (b"a", b"2")], "keys out of order"),
        ([(b"a", 7)], "not a [key, value] pair of byte strings"),
    ],
)
def test_a_sorted_file_out_of_order_is_corrupt(tmp_path: Path, entries: list, problem: str) -> None:
    backend = DirectoryBackend(str(tmp_path))
    backend.write(1, 1, "s", [(b"a", b"0")])
    backend.complete(1, 1, {})
    folder = tmp_path / "scopes" / "s"
    (name,) = os.listdir(folder)
    (folder / name).write_bytes(pack_entries(entries))
    with pytest.raises(CorruptCheckpoint) as corrupt:
        list(backend.read_all(1, "s"))
    assert problem in str(corrupt.value) and name in str(corrupt.value)


def test_a_truncated_file_is_corrupt(tmp_path: Path) -> None:
    backend = DirectoryBackend(str(tmp_path))
    backend.write(1, 1, "s", [(b"a%d" % i, b"x" * 100) for i in range(100)])
    backend.complete(1, 1, {})
    folder = tmp_path / "scopes" / "s"
    (name,) = os.listdir(folder)
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptCheckpoint, match="truncated"):
        list(backend.read_all(1, "s"))


def test_compaction_streams_the_folded_entries_to_disk(tmp_path: Path) -> None:
    backend = DirectoryBackend(str(tmp_path), 1)
    value = b"v" * 200
    backend.write(1, 1, "s", [(b"%08d" % i, value) for i in range(40_000)])
    backend.complete(1, 1, {})
    backend.write(2, 1, "s", [(b"%08d" % i, None) for i in range(0, 40_000, 2)])
    folder = tmp_path / "scopes" / "s"
    stored = sum(os.path.getsize(folder / name) for name in os.listdir(folder))
    tracemalloc.start()
    try:
        backend.complete(2, 1, {})  # folds checkpoint 1 and 2 into one compacted file
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert os.listdir(folder) == [f"{2:012d}-compacted{SORTED}"]
    assert peak < stored // 6, (peak, stored)
    restored = list(backend.read_all(2, "s"))
    assert restored == [(b"%08d" % i, value) for i in range(1, 40_000, 2)]


@settings(max_examples=60, deadline=None)
@given(entries=st.lists(st.tuples(KEYS, VALUES), max_size=20))
def test_a_streamed_file_reads_back_as_a_packed_one(entries: list) -> None:
    stream = io.BytesIO()
    assert write_entries(stream, entries) == len(entries)
    data = stream.getvalue()
    assert list(unpack_entries(data)) == entries
    assert list(file_entries("f", io.BytesIO(data), len(data))) == entries


def test_a_file_gone_mid_read_is_listed_again_and_the_read_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As under an fsspec URL, where a compaction can remove a file being read: the read
    lists the scope again and resumes after the last key it gave, nothing twice."""
    backend = DirectoryBackend(str(tmp_path))
    for number in (1, 2):
        backend.write(
            number, 1, "s", [(b"%06d" % i, b"%d" % number) for i in range(number, 30_000, 2)]
        )
        backend.complete(number, 1, {})
    expected = list(backend.read_all(2, "s"))
    failures = [1]

    class Vanishing(io.BufferedReader):
        def read(self, size: int | None = -1) -> bytes:
            if self.tell() > 50_000 and failures:
                failures.pop()
                raise FileNotFoundError("removed by a compaction")
            return super().read(size)

    def vanishing(path: str) -> tuple[Any, int]:
        return Vanishing(io.FileIO(path, "rb")), os.path.getsize(path)

    monkeypatch.setattr(backend, "_open_sized", vanishing)
    assert list(backend.read_all(2, "s")) == expected
    assert not failures  # it did vanish once
