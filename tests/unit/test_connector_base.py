"""The connector bases (topology.connectors) with a tiny in-memory connector defined here: a
source over lists (one per partition) that keeps its committed positions in a dict, and
sinks appending to lists.  Components are driven directly (a recording collector, a real
context) for the fine-grained rules, and on the in-process runner end to end."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import topology.connectors as connectors
from tests.recording_collector import Recorder, bound
from tests.unit.test_stateful_runtime import Words
from topology import TopologyBuilder
from topology.components import OutputFieldsDeclarer
from topology.connectors import (
    Backoff,
    BatchingSink,
    PartitionedSource,
    Record,
    RowErrors,
    TransactionalSink,
    TransientError,
    retrying,
)
from topology.constants import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_STREAM,
    SYSTEM_COMPONENT,
    TICK_STREAM,
)
from topology.context import TopologyContext
from topology.errors import DataError, SparkstormError
from topology.runtime.inprocess import InProcessRunner
from topology.state.kv import KeyValueState, key_owner
from topology.testing import CaptureBolt
from topology.tuple import Tuple, TupleSource

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]


# -- the in-memory connector -----------------------------------------------------------------


class ListSource(PartitionedSource):
    """Partition ``p`` is ``data[p]``; a position is the index of the next value; positions
    committed go to ``self.store`` (the "external system", shared by copies in a test)."""

    outputs = ["n"]

    def __init__(
        self, data: dict[str, list[Any]], store: dict[str, Any] | None = None, **settings: Any
    ) -> None:
        super().__init__(**settings)
        self.data = data
        self.store = {} if store is None else store
        self.commits: list[dict[str, Any]] = []

    def partitions(self) -> list[str]:
        return list(self.data)

    def start_position(self, partition: str) -> int:
        return 0

    def committed(self, partition: str) -> Any:
        return self.store.get(partition)

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        rows = self.data[partition][position : position + max_records]
        return [Record(partition, position + i + 1, v) for i, v in enumerate(rows)]

    def commit(self, positions: dict[str, Any]) -> None:
        self.commits.append(dict(positions))
        self.store.update(positions)

    def decode(self, record: Record) -> list[Any]:
        if record.value == "bad":
            raise ValueError("not a number")
        return [record.value]


class ListSink(BatchingSink):
    """Appends each batch to ``self.written``; ``errors`` are raised by the next writes."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.written: list[list[Any]] = []
        self.errors: list[BaseException] = []
        self.calls = 0

    def write_batch(self, records: list[list[Any]]) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        self.written.extend(records)


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        self.slept.append(secs)
        self.now += secs

    def backoff(self, **kw: Any) -> Backoff:
        return Backoff(clock=self.clock, sleep=self.sleep, **kw)


SOURCE = TupleSource("src", 1, "default", ("n",))
TICK = TupleSource(SYSTEM_COMPONENT, -1, TICK_STREAM, ("tick",))


def tuples(*values: Any) -> list[Tuple]:
    return [Tuple([v], SOURCE) for v in values]


# -- PartitionedSource -----------------------------------------------------------------------


def test_importing_the_package_loads_no_client_library() -> None:
    assert set(connectors.__all__) >= {"PartitionedSource", "BatchingSink", "retrying"}
    with pytest.raises(AttributeError):
        connectors.Nothing  # noqa: B018
    code = (
        "import sys, topology.connectors as c; c.PartitionedSource, c.TransactionalSink; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'redis', 'psycopg', 'confluent_kafka', 'fsspec', 'pyarrow'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stderr


def test_partitions_are_split_among_tasks_and_errors_stream_is_declared() -> None:
    data = {f"p{i}": [] for i in (3, 0, 4, 1, 2)}
    owned = []
    for index in range(2):
        source = ListSource(data)
        bound(source, tasks=2, index=index)
        owned.append(source.owned)
    assert owned == [["p0", "p2", "p4"], ["p1", "p3"]]
    declarer = OutputFieldsDeclarer()
    ListSource(data).declare_output_fields(declarer)
    assert declarer.streams["default"].fields == ("n",)
    assert declarer.streams["errors"].fields == ("partition", "position", "error", "raw")


def test_at_least_once_commits_only_fully_acked_prefixes() -> None:
    time = FakeTime()
    source = ListSource({"a": list(range(5))}, commit_interval_secs=1.0, backoff=time.backoff())
    out = bound(source)
    source.next_tuple()
    assert out.on() == [[0], [1], [2], [3], [4]]
    assert [m for _, _, m in out.emitted] == [("a", i) for i in range(1, 6)]
    for position in (2, 4, 3):  # out of order; position 1 (value 0) still pending
        source.ack(("a", position))
    time.now = 1.5
    source.next_tuple()
    assert source.commits == []
    source.ack(("a", 1))
    time.now = 3.0
    source.next_tuple()
    assert source.commits == [{"a": 4}]  # 5 is not acked yet
    source.ack(["a", 5])  # a msg id back as a list
    source.close()
    assert source.commits == [{"a": 4}, {"a": 5}] and source.store == {"a": 5}


def test_a_failed_record_is_emitted_again_and_restart_resumes_from_the_commit() -> None:
    store: dict[str, Any] = {}
    source = ListSource({"a": ["x", "y", "z"]}, store)
    out = bound(source)
    source.next_tuple()
    source.fail(("a", 2))
    source.ack(("a", 1))
    source.next_tuple()
    assert out.emitted[-1] == ("default", ["y"], ("a", 2))
    source.ack(("a", 2))
    source.close()
    assert store == {"a": 2}
    again = ListSource({"a": ["x", "y", "z"]}, store)
    out = bound(again)
    again.next_tuple()
    assert out.on() == [["z"]]


def test_a_bad_record_goes_to_the_errors_stream_and_counts_as_consumed() -> None:
    source = ListSource({"a": [1, "bad", 3]})
    out = bound(source)
    source.next_tuple()
    assert out.on() == [[1], [3]]
    [error] = out.on("errors")
    assert error[:2] == ["a", 2] and error[2].startswith("ValueError") and error[3] == "bad"
    [letter] = [dict(zip(DEAD_LETTER_FIELDS, v)) for v in out.on(DEAD_LETTER_STREAM)]
    assert (letter["source"], letter["stream"], letter["values"]) == ("a", "", [2, "bad"])
    assert letter["error"].startswith("ValueError") and letter["attempts"] == 1
    [reported] = out.errors  # nothing subscribes to either stream here (the recorder)
    assert "does not decode" in "".join(reported.__notes__)
    assert source.bad_records.value == 1
    source.ack(("a", 1))
    source.close()
    assert source.store == {"a": 2}  # past the bad record, not past the unacked 3


def test_values_the_emit_refuses_go_to_the_errors_stream_and_commits_go_on() -> None:
    """The collector refuses values it cannot send (a wrong count, a value msgpack cannot
    carry): that record is a bad one, not a hole that holds every later commit back."""
    source = ListSource({"a": [1, 2, 3]})
    out = bound(source)
    emit = out.emit

    def refusing(values: Any, msg_id_or_anchors: Any = None, stream: str = "default") -> list:
        if stream == "default" and list(values) == [2]:
            raise TypeError("value 0 of stream 'default' is not msgpack-encodable")
        return emit(values, msg_id_or_anchors, stream)

    out.emit = refusing  # type: ignore[method-assign]
    source.next_tuple()
    assert out.on() == [[1], [3]]
    [error] = out.on("errors")
    assert error[:2] == ["a", 2] and error[2].startswith("TypeError")
    source.ack(("a", 1))
    source.ack(("a", 3))
    source.close()
    assert source.store == {"a": 3}  # past the refused record


def test_the_backoff_stays_at_its_cap_however_long_the_outage() -> None:
    backoff = Backoff(initial_secs=0.1, max_secs=10.0)
    assert backoff.delay(1) == 0.1 and backoff.delay(5000) == 10.0


def test_transient_read_errors_rest_the_source_without_blocking() -> None:
    time = FakeTime()

    class Flaky(ListSource):
        failures = 2

        def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
            if self.failures:
                self.failures -= 1
                raise TransientError("busy")
            return super().read(partition, position, max_records)

    source = Flaky({"a": [1]}, backoff=time.backoff(initial_secs=1.0))
    out = bound(source)
    source.next_tuple()
    source.next_tuple()  # resting
    time.now = 1.0
    source.next_tuple()  # fails again: rests 2 s
    time.now = 2.5
    source.next_tuple()
    assert out.on() == [] and time.slept == [] and len(out.logged) == 2
    time.now = 3.0
    source.next_tuple()
    assert out.on() == [[1]]


def test_exactly_once_positions_round_trip_and_need_a_checkpointed_topology() -> None:
    with pytest.raises(SparkstormError, match="c: guarantee='exactly_once' needs a checkpointed"):
        bound(ListSource({"a": [1]}, guarantee="exactly_once"))
    data = {"a": list(range(10)), "b": list(range(10, 20))}
    source = ListSource(data, guarantee="exactly_once", max_batch=3)
    out = bound(source, checkpointed=True)
    assert source.position() == {"a": 0, "b": 0}
    source.next_tuple()
    source.next_tuple()
    saved = source.position()
    assert saved == {"a": 3, "b": 3} and len(out.on()) == 6
    source.next_tuple()
    source.seek(saved)
    out.emitted.clear()
    source.next_tuple()
    source.fail(("a", 4))  # a checkpointed topology seeks instead: nothing re-emitted
    source.next_tuple()
    assert out.on() == [[13], [14], [15], [3], [4], [5]]  # partitions take turns
    for position in range(1, 7):
        source.ack(("a", position))
    assert source.commits == []
    source.checkpoint_complete(1)
    assert source.commits == [{"a": 6}]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="guarantee"):
        ListSource({}, guarantee="twice")
    with pytest.raises(ValueError, match="max_batch"):
        ListSource({}, max_batch=0)
    with pytest.raises(ValueError, match="batch_size"):
        ListSink(batch_size=0)
    with pytest.raises(ValueError, match="Backoff"):
        Backoff(initial_secs=5, max_secs=1)


# -- retrying ---------------------------------------------------------------------------------


def test_retrying_backs_off_exponentially_up_to_the_cap_and_gives_up_after_max() -> None:
    time = FakeTime()
    calls: list[int] = []
    logged: list[str] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 6:
            raise ConnectionError("down")
        return "ok"

    backoff = time.backoff(initial_secs=1, max_secs=4)
    assert retrying(flaky, backoff, "ping", transient=(ConnectionError,), log=logged.append) == "ok"
    assert time.slept == [1, 2, 4, 4, 4] and len(logged) == 5 and "ping" in logged[0]
    with pytest.raises(TransientError):
        retrying(_raise(TransientError("x")), time.backoff(initial_secs=1, max_retry_secs=3), "p")
    with pytest.raises(KeyError):  # not transient: at once
        retrying(_raise(KeyError("k")), backoff, "p")


def _raise(error: BaseException) -> Any:
    def call() -> None:
        raise error

    return call


# -- BatchingSink -----------------------------------------------------------------------------


def test_batching_sink_flushes_by_size_tick_and_cleanup_and_acks_after_the_write() -> None:
    sink = ListSink(batch_size=3, flush_interval_secs=2.5)
    assert sink.get_component_configuration() == {"topology.tick.tuple.freq.secs": 2.5}
    out = bound(sink)
    batch = tuples(1, 2, 3, 4, 5)
    for tup in batch[:2]:
        sink.execute(tup)
    assert sink.written == [] and out.acked == []
    sink.execute(batch[2])
    assert sink.written == [[1], [2], [3]] and out.acked == batch[:3]
    sink.execute(batch[3])
    sink.execute(Tuple([1], TICK))
    assert sink.written[-1] == [4] and out.acked == batch[:4]
    sink.execute(batch[4])
    sink.cleanup()
    assert sink.written[-1] == [5] and out.acked == batch and out.failed == []


def test_batching_sink_retries_transient_errors_and_splits_the_batch_on_others() -> None:
    time = FakeTime()
    sink = ListSink(batch_size=2, backoff=time.backoff(initial_secs=0.5))
    out = bound(sink)
    sink.errors = [TransientError("a"), TransientError("b")]
    batch = tuples(1, 2)
    for tup in batch:
        sink.execute(tup)
    assert sink.written == [[1], [2]] and time.slept == [0.5, 1.0] and out.acked == batch
    sink.errors = [RuntimeError("constraint violated")]  # the batch fails, its halves do not
    halves = tuples(3, 4)
    for tup in halves:
        sink.execute(tup)
    assert out.acked == batch + halves and sink.written == [[1], [2], [3], [4]]
    assert out.failed == [] and out.input_failures == []
    bad = RuntimeError("a row of its own")  # the batch and one half fail: that row is given up
    sink.errors = [bad, bad]
    rows = tuples(5, 6)
    for tup in rows:
        sink.execute(tup)
    assert out.input_failures == [(rows[0], bad, 1, {})] and out.acked[-1] is rows[1]
    sink.retry_input(rows[0])  # the policy's next attempt: written alone, acked
    assert sink.written[-1] == [5] and out.acked[-1] is rows[0]
    limited = ListSink(batch_size=1, max_retry_secs=2, backoff=time.backoff(initial_secs=1))
    out = bound(limited)
    limited.errors = [TransientError("down")] * 10
    limited.execute(tuples(5)[0])
    assert len(out.failed) == 1 and limited.calls == 2


class RefusingSink(ListSink):
    """Refuses the rows whose value is negative, writes the others (as a pipeline does)."""

    def write_batch(self, records: list[list[Any]]) -> None:
        self.calls += 1
        refused = {i: DataError(f"no {r[0]}") for i, r in enumerate(records) if r[0] < 0}
        self.written.extend(r for r in records if r[0] >= 0)
        if refused:
            raise RowErrors(refused)


def test_rows_a_write_names_as_refused_go_to_the_policy_and_the_rest_are_acked() -> None:
    sink = RefusingSink(batch_size=4)
    out = bound(sink)
    rows = tuples(1, -2, 3, -4)
    for tup in rows:
        sink.execute(tup)
    assert sink.calls == 1 and sink.written == [[1], [3]] and out.acked == [rows[0], rows[2]]
    assert [(t, str(e)) for t, e, _, _ in out.input_failures] == [
        (rows[1], "no -2"),
        (rows[3], "no -4"),
    ]
    with pytest.raises(DataError, match="no -2"):  # the policy's next attempt meets it again
        sink.retry_input(rows[1])


# -- TransactionalSink ------------------------------------------------------------------------

#: The "database" of the write-ahead sink below: (sink id, checkpoint) -> rows, shared by
#: every copy of the sink in this process.
TABLE: dict[tuple[str, int], list[Any]] = {}


class WriteAhead(TransactionalSink):
    """Stages rows in memory, pre-commits them into the checkpoint itself, and commits by
    inserting them under the marker (sink id, checkpoint), skipped when present."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.log_: list[Any] = []

    def begin(self, checkpoint_hint: int) -> Any:
        self.log_.append(("begin", checkpoint_hint))
        return []

    def write(self, txn: Any, records: list[list[Any]]) -> None:
        txn.extend(records)

    def pre_commit(self, txn: Any, checkpoint: int) -> Any:
        self.log_.append(("pre_commit", checkpoint))
        return [self.sink_id, txn]

    def commit(self, handle: Any, checkpoint: int) -> None:
        self.log_.append(("commit", checkpoint))
        sink_id, rows = handle
        TABLE.setdefault((sink_id, checkpoint), [r[0] for r in rows])

    def abort_others(self, keep: list[Any]) -> None:
        self.log_.append(("abort_others", keep))

    def rows(self) -> list[Any]:
        mine = [rows for (sink, _), rows in sorted(TABLE.items()) if sink == self.sink_id]
        return [r for rows in mine for r in rows]


def fresh_sink(tasks: int = 1, index: int = 0) -> tuple[WriteAhead, Recorder, KeyValueState]:
    sink = WriteAhead(batch_size=2)
    out = bound(sink, tasks, index, checkpointed=True)
    state = KeyValueState()
    sink.init_state(state)
    return sink, out, state


def test_pre_checkpoint_stages_and_complete_commits_in_order() -> None:
    TABLE.clear()
    sink, out, state = fresh_sink()
    for tup in tuples(1, 2, 3):
        sink.execute(tup)
    assert len(out.acked) == 3 and TABLE == {}
    sink.pre_checkpoint(1)
    assert [v for k, v in state.items()] == [["c#0", [[1], [2], [3]]]]
    sink.pre_checkpoint(2)  # nothing written since: no handle
    sink.execute(tuples(4)[0])
    sink.pre_checkpoint(3)
    assert len(state) == 2 and TABLE == {}
    sink.checkpoint_complete(3)  # the notification of 1 was lost: 3 covers it
    assert sink.rows() == [1, 2, 3, 4] and len(state) == 0
    assert [e for e in sink.log_ if e[0] == "commit"] == [("commit", 1), ("commit", 3)]
    assert ("begin", 1) in sink.log_ and ("begin", 4) in sink.log_


def test_a_restore_commits_pending_handles_idempotently_then_aborts_the_rest() -> None:
    TABLE.clear()
    sink, _, state = fresh_sink()
    for tup in tuples(1, 2, 3):
        sink.execute(tup)
    sink.pre_checkpoint(1)
    sink.checkpoint_complete(1)  # committed, but the crash came before the state's delete
    sink.execute(tuples(4)[0])
    sink.pre_checkpoint(2)
    restored = KeyValueState.restore(dict(_stored(state)))
    restored.put(("pending", 1, 0), ["c#0", [[1], [2], [3]]])  # checkpoint 2 still held it
    again, _, _ = fresh_sink()
    again.init_state(restored)
    assert again.rows() == [1, 2, 3, 4] and len(restored) == 0
    assert again.log_[-1] == ("abort_others", [])
    assert [e[1] for e in again.log_ if e[0] == "commit"] == [1, 2]


def _stored(state: KeyValueState) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in state.everything() if v is not None]


def test_handle_keys_belong_to_their_task_in_keyed_state() -> None:
    for index in range(3):
        sink, _, state = fresh_sink(tasks=3, index=index)
        for tup in tuples(1, 2):
            sink.execute(tup)
        sink.pre_checkpoint(7)
        [key] = list(state)
        assert key[:2] == ("pending", 7) and key_owner(key, 3) == index


def test_a_failed_write_fails_execute_and_declines_checkpoints_until_the_restore() -> None:
    class Broken(WriteAhead):
        def write(self, txn: Any, records: list[list[Any]]) -> None:
            raise RuntimeError("disk full")

    sink = Broken(batch_size=1)
    out = bound(sink, checkpointed=True)
    sink.init_state(KeyValueState())
    first = tuples(1)
    sink.execute(first[0])  # failed at once (a rollback), never to the failure policy
    assert out.failed == first and out.input_failures == []
    assert [str(e) for e in out.errors] == ["disk full"]
    with pytest.raises(RuntimeError, match="cannot take part in checkpoint 1"):
        sink.pre_checkpoint(1)
    later = tuples(2)
    sink.execute(later[0])  # failed: the topology rolls back
    assert out.failed == first + later and out.acked == []
    sink.init_state(KeyValueState())
    sink.pre_checkpoint(2)  # nothing staged: fine again


# -- end to end ----------------------------------------------------------------------------

CONF = {
    "topology.workers": 2,
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
}


def run(runner: InProcessRunner, turns: int) -> None:
    for _ in range(turns):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()


#: The committed positions of the source below (its "external system"), shared by copies.
POSITIONS: dict[str, Any] = {}


class SharedListSource(ListSource):
    def connect(self, conf: Any, context: TopologyContext) -> None:
        self.store = POSITIONS


@pytest.mark.parametrize("restart", [None, 0, 1])
def test_exactly_once_from_list_source_to_transactional_sink_through_restarts(
    restart: int | None,
) -> None:
    TABLE.clear()
    POSITIONS.clear()
    data: dict[str, list[Any]] = {f"p{i}": [f"{i}-{n}" for n in range(400)] for i in range(3)}
    data["p1"][5] = "bad"
    builder = TopologyBuilder()
    builder.set_spout("src", SharedListSource(data, guarantee="exactly_once", max_batch=20), 2)
    builder.set_bolt("sink", WriteAhead(batch_size=16), 2).fields_grouping("src", ["n"])
    runner = InProcessRunner(builder.create_topology(), {**CONF, "topology.max.spout.pending": 100})
    runner.activate()
    expected = Counter(v for rows in data.values() for v in rows if v != "bad")
    run(runner, 60)
    assert 0 < sum(len(rows) for rows in TABLE.values()) < len(expected)  # half way
    if restart is not None:
        runner.restart_worker(restart)
    for _ in range(5000):
        if sum(len(rows) for rows in TABLE.values()) >= len(expected):
            break
        run(runner, 1)
    run(runner, 60)
    assert Counter(v for rows in TABLE.values() for v in rows) == expected
    # the bad record, once or again after a restore: reported, as nothing keeps dead letters
    assert {(e[0], "does not decode" in e[2]) for e in runner.errors} <= {("src", True)}
    assert POSITIONS == {"p0": 400, "p1": 400, "p2": 400}  # committed after checkpoints


#: Whether ``RefusesOnce`` refused its row already (shared by every copy in this process).
REFUSED: list[str] = []


class RefusesOnce(WriteAhead):
    """Refuses (a data error) the first write holding ``w9``, the last word."""

    def write(self, txn: Any, records: list[list[Any]]) -> None:
        if any(r[0] == "w9" for r in records) and not REFUSED:
            REFUSED.append("w9")
            raise DataError("refused once")
        super().write(txn, records)


def test_a_transactional_write_that_raises_rolls_back_and_is_never_dead_lettered() -> None:
    """The transaction is lost, not the row's fault: a rollback at once, as before the
    failure policy, even for a data error on the last tuple (which acked and
    dead-lettered left every later checkpoint declined: nothing committed, for ever)."""
    TABLE.clear()
    REFUSED.clear()
    words = [f"w{i}" for i in range(10)]
    builder = TopologyBuilder()
    builder.set_spout("words", Words(words))
    builder.set_bolt("sink", RefusesOnce(batch_size=1)).shuffle_grouping("words")
    builder.set_bolt("dlq", CaptureBolt()).dead_letters()
    runner = InProcessRunner(builder.create_topology(), CONF)
    runner.activate()
    sink = runner.instance("sink")
    runner.run_until(lambda: sorted(sink.rows()) == words, advance=0.005)
    assert REFUSED and runner.instance("dlq").captured == []
