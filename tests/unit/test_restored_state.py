"""Restored state through the door's decode budget, and crafted savepoints restored into
real components.

* whatever bytes a checkpoint holds for a key or a value (hypothesis-generated: any bytes,
  msgpack of any value, values stored with a TTL, amplification bombs, extension types,
  bad UTF-8, maps with list keys), checking them gives a reason or a value that decodes,
  never another exception, and the 4 MB value of empty arrays of issue 40 is refused
  without allocating its 275 MiB;
* a crafted checkpoint (the ``memory`` provider, the workers' own restore) restores its
  good entries into a stateful bolt and a spout and drops the rest, each task reporting
  once, naming the checkpoint, component and key, and counting them (``restore_refused``);
* the ``directory`` provider reads any file in its folders as entries or refuses it as
  :class:`CorruptCheckpoint`, within a few times its size;
* hypothesis-generated savepoints (positions, sink handles, state values) are refused at
  submit with one line naming the savepoint, component and key, or restored into a
  running in-process topology (``FileSpout`` → counting bolt and ``FileSink``) that reads,
  renames and deletes nothing outside its directories.
"""

from __future__ import annotations

import re
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.frame_grammar import ANY_VALUE
from tests.unit.test_restored_paths import (
    SECRET,
    canary,
    moved,
    outside_names,
    pair,
    positions,
    snapshot,
)
from topology import FileSpout, StatefulBolt, TopologyBuilder, Tuple
from topology import config as cfg
from topology.connectors import FileSink
from topology.deploy.savepoint_restore import restore_savepoint
from topology.deploy.savepoints import state_components
from topology.runtime.checkpoint.restored_state import Refused, check_key, check_value, decoded
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.net import codec
from topology.state.backends import CorruptCheckpoint, DirectoryBackend, encode_value, open_backend
from topology.state.kv import key_bytes
from topology.state.live.codec import encode_ttl
from topology.state.savepoint import SavepointError, SavepointWriter

pytestmark = pytest.mark.timeout(180)

#: Issue 40's value: 4 MB of empty arrays in one array (275 MiB once decoded).
BOMB = b"\xdd" + (4 << 20).to_bytes(4, "big") + b"\x90" * (4 << 20)
FUNCTION_SCOPED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def bomb(n: int) -> bytes:
    """``n`` empty arrays in one array."""
    return b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n


#: Stored bytes a checkpoint may hold: well formed, bombs, junk.
STORED = st.one_of(
    st.binary(max_size=40),
    ANY_VALUE.map(lambda v: msgpack.packb(v, use_bin_type=True)),
    st.tuples(st.floats(allow_nan=False), ANY_VALUE).map(lambda t: encode_ttl(*t)),
    st.integers(1, 3 << 20).map(bomb),
    st.integers(0, 127).map(lambda code: msgpack.packb(msgpack.ExtType(code, b"x" * 9))),
    st.sampled_from([b"\xa2\xff\xfe", b"\x81\x91\x01\x02", b"\xc1", b"\x92\x01"]),
)


@settings(max_examples=300, deadline=None)
@given(raw=STORED, prefix=st.binary(min_size=0, max_size=3))
def test_any_stored_bytes_are_refused_with_a_reason_or_decode(raw: bytes, prefix: bytes) -> None:
    for check in (check_value, decoded, check_key):
        try:
            check(prefix + raw if check is check_key else raw)
        except Refused as exc:
            assert str(exc) and "\n" not in str(exc)


def test_the_reported_value_is_refused_without_being_allocated() -> None:
    wrapped = msgpack.packb(msgpack.ExtType(17, b"\x92\xcb" + b"\x00" * 8 + BOMB))
    over = "would decode to more than the door's budget" if codec.COMPILED else "max_array_len"
    tracemalloc.start()
    try:
        with pytest.raises(Refused, match=over):
            check_value(BOMB)
        with pytest.raises(Refused, match=over):  # inside a TTL wrapper
            check_value(wrapped)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # compiled: nothing but the wrapper's contents copied; pure Python: within the budget
    assert peak < (2 * len(BOMB) if codec.COMPILED else codec.budget(len(BOMB)) + (8 << 20))


# -- the workers' restore of a crafted checkpoint --------------------------------------------


class Count(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)


def files_topology(src: Path, out: Path) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("lines", FileSpout(str(src), pattern="*.txt", scan_secs=0, recursive=True))
    builder.set_bolt("count", Count(), 2).fields_grouping("lines", ["line"])
    builder.set_bolt("store", FileSink(str(out), fields=["line"], batch_size=1)).shuffle_grouping(
        "lines"
    )
    return builder.create_topology()


CONF = {
    cfg.TOPOLOGY_WORKERS: 1,
    cfg.STATE_PROVIDER: "memory",
    cfg.CHECKPOINT_INTERVAL_MS: 50,
}


def run(runner: InProcessRunner, turns: int = 60) -> None:
    for _ in range(turns):
        runner.clock.advance(0.01)  # type: ignore[attr-defined]
        runner.turn()


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    src, out, victims = tmp_path / "src", tmp_path / "out", canary(tmp_path)
    for folder in (src, out):
        folder.mkdir(exist_ok=True)
    (src / "a.txt").write_bytes(b"x\ny\n")
    return src, out, victims


def test_a_crafted_checkpoint_restores_its_good_entries_and_reports_the_rest(
    tmp_path: Path,
) -> None:
    src, out, _ = folders(tmp_path)
    topology = files_topology(src, out)
    state_id = f"crafted-{tmp_path.name}"
    backend = open_backend(CONF, state_id)
    good = [(key_bytes(w, 128, True), encode_value(7)) for w in ("x", "y")]
    bad = [
        (key_bytes("bomb", 128, True), BOMB),
        (key_bytes("ttl", 128, True), msgpack.packb(msgpack.ExtType(3, b"?"))),
        (b"\x00\x01\x81\x91\x01\x02", encode_value(1)),  # a key that is an unhashable map
    ]
    backend.write(1, 0, "count", good + bad)
    backend.write(1, 0, "lines#0", [(b"position", BOMB), (b"tasks", encode_value(10**9))])
    backend.complete(1, 0, {})
    runner = InProcessRunner(topology, CONF, state_id=state_id)
    runner.activate()
    run(runner)
    counted = {}
    for i in range(2):
        counted.update(dict(runner.instance("count", i).state.items()))
    assert counted == {"x": 8, "y": 8}  # 7 restored, then the file read from its start
    errors = [text for component, _, text in runner.errors if "checkpoint 1 of" in text]
    assert any("component 'count': refused key 'bomb' of scope 'count'" in e for e in errors)
    assert any("component 'lines': refused key b'position'" in e for e in errors)
    reason = r"checkpoint 1 of component '\w+': refused key .+ of scope '[^']+': .+; the entry"
    assert errors and all(re.match(reason, e) for e in errors)
    refused = sum(w["checkpoints"]["restore_refused"] for w in runner.status())
    assert refused == 5


@settings(max_examples=100, deadline=None, suppress_health_check=FUNCTION_SCOPED)
@given(data=st.binary(max_size=200) | STORED)
def test_the_directory_provider_reads_any_file_as_entries_or_refuses_it(
    tmp_path: Path, data: bytes
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    backend = DirectoryBackend(str(root))
    backend.write(1, 0, "count", [(b"k", b"\x01")])
    backend.complete(1, 0, {})
    folder = root / "scopes" / "count"
    [stored] = folder.iterdir()
    stored.write_bytes(data)
    (folder / "junk-name").write_bytes(data)  # not the provider's: ignored
    try:
        entries = backend.read(1, "count", lambda key: True)
    except CorruptCheckpoint as exc:
        assert str(stored) in str(exc) and "\n" not in str(exc)
    else:
        assert all(isinstance(k, bytes) and isinstance(v, bytes) for k, v in entries.items())


def test_a_checkpoint_file_of_empty_arrays_is_refused_within_its_size(tmp_path: Path) -> None:
    backend = DirectoryBackend(str(tmp_path / "state"))
    backend.write(1, 0, "count", [(b"k", b"\x01")])
    backend.complete(1, 0, {})
    [stored] = (tmp_path / "state" / "scopes" / "count").iterdir()
    stored.write_bytes(BOMB)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptCheckpoint, match="not a batch of entries"):
            backend.read(1, "count", lambda key: True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(BOMB)


# -- crafted savepoints into a running topology ----------------------------------------------


def packed(value: Any) -> bytes:
    """``value`` as stored, or nil where msgpack cannot take it (an int past 64 bits)."""
    try:
        return encode_value(value)
    except (OverflowError, TypeError, ValueError):
        return encode_value(None)


def crafted_savepoint(tmp_path: Path, topology: Any, data: Any, src: Path, out: Path) -> str:
    victims = tmp_path / "canary"
    writer = SavepointWriter(str(tmp_path / "savepoints"), "files")
    values = data.draw(st.lists(STORED, max_size=2) | st.just([]))  # often none: restored
    count = [(key_bytes(f"w{i}", 128, True), v) for i, v in enumerate(values)]
    writer.add_scope("count", "count", [*count, (key_bytes("x", 128, True), encode_value(5))])
    aimed = data.draw(st.lists(st.sampled_from(outside_names(victims)), min_size=1, max_size=3))
    others = data.draw(positions(src, victims))
    position = {**(others if isinstance(others, dict) else {}), **{n: [0, 0] for n in aimed}}
    writer.add_scope("lines#0", "lines", [(b"position", packed(position)), (b"tasks", packed(1))])
    handle = data.draw(st.lists(moved(out, victims, "store"), min_size=1, max_size=2))
    handle += data.draw(st.lists(pair(out, victims), max_size=2))
    key = key_bytes(("pending", 1, 0), 128, False)
    writer.add_scope("store#0", "store", [(key, packed(handle))])
    info = writer.finish(
        topology_id="files-1-1",
        checkpoint=3,
        key_groups=128,
        backend="memory",
        components=state_components(topology),
    )
    return info.path


@settings(max_examples=15, deadline=None, suppress_health_check=FUNCTION_SCOPED)
@given(data=st.data())
def test_crafted_savepoints_stay_inside_their_components(tmp_path: Path, data: Any) -> None:
    src, out, victims = folders(tmp_path)
    (src / "link").unlink(missing_ok=True)
    (src / "link").symlink_to(victims)
    (out / "link").unlink(missing_ok=True)
    (out / "link").symlink_to(victims)
    before = snapshot(victims)
    topology = files_topology(src, out)
    state_id = f"savepoint-{data.draw(st.uuids())}"
    path = crafted_savepoint(tmp_path, topology, data, src, out)
    try:
        restore_savepoint(path, topology, cfg.resolve(CONF), state_id)
    except SavepointError as exc:
        assert f"savepoint {path}: component 'count' (scope 'count'): key " in str(exc)
        assert "\n" not in str(exc)
        event("refused at submit")
        return
    event("restored")
    runner = InProcessRunner(topology, CONF, state_id=state_id)
    runner.activate()
    run(runner, 40)
    assert snapshot(victims) == before
    assert sum(runner.instance("count", i).state.get("x", 0) for i in range(2)) > 5
    published = b"".join(p.read_bytes() for p in out.glob("part-*"))
    assert SECRET.strip() not in published and b"root:" not in published
    for component, _, text in runner.errors:
        assert component in ("lines", "store") and "is refused: " in text
