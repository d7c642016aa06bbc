"""Unit tests for the checks on frames from the network: each of the faults found so far is
refused with its reason, hostile frames generated from the frame grammar never get past
the door unchecked nor break a running executor, and drops are counted per reason."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acker import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET
from tests.frame_grammar import hostile_frames
from tests.unit.test_executor import Harness, Numbers, Recorder, data_frame, topology
from tests.unit.test_wire import wire_paths
from topology import BasicBolt, Bolt, TopologyBuilder
from topology.runtime.net import codec
from topology.runtime.net.codec import encode_backpressure, encode_data
from topology.runtime.net.data_token import TOKEN_BYTES, new_token
from topology.runtime.net.frames import REASONS, BadFrame, DropCounter, FrameCheck
from topology.spec import Topology
from topology.tuple import Tuple

pytestmark = pytest.mark.timeout(60)

#: Hypothesis runs from a fixed seed in CI (the derandomized profile in tests/conftest.py);
#: docs/SECURITY.md gives the command for a longer, random run.
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def two_streams() -> Topology:
    """numbers (1 field) -> record, and pairs (2 fields) -> record on the same stream name."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(limit=0))
    b.set_spout("pairs", Pairs())
    b.set_bolt("record", Recorder()).shuffle_grouping("numbers").shuffle_grouping("pairs")
    return b.create_topology()


class Pairs(Numbers):
    outputs = ["a", "b"]


class World:
    """Worker 0 of a one-worker acked topology, and the ids a well-formed frame uses."""

    def __init__(self) -> None:
        self.h = Harness(two_streams(), {"topology.acker.executors": 1})
        tasks = self.h.assignment.component_tasks
        self.numbers, self.pairs = tasks["numbers"][0], tasks["pairs"][0]
        self.record, self.acker = tasks["record"][0], tasks["__acker"][0]
        self.check: FrameCheck = self.h.executor._check

    def good_groups(self) -> list[list[Any]]:
        """One well-formed group of every kind this worker takes."""
        return [
            [self.record, self.numbers, "default", [[1], [2]], None],
            [self.record, self.numbers, "default", [[3]], [[7, 9]]],
            [self.record, self.pairs, "default", [[1, "x"]], [None]],
            [self.record, self.numbers, "default", [[4]], [[7, {9: 7, 11: 0}]]],
            [self.acker, -1, ACK_INIT, [[[[5, 6, self.numbers]]]], None],
            [self.acker, -1, ACK_ACK, [[{5: 6}]], None],
            [self.acker, -1, ACK_FAIL, [[5, ["failed", "record", 3, "boom"]]], None],
            [self.acker, -1, ACK_RESET, [[[5]]], None],
            [self.numbers, self.acker, ACK_ACK, [[[5, 6]]], None],
            [self.numbers, self.acker, ACK_FAIL, [[5, ["timeout", None, None, None]]], None],
        ]


WORLD = World()


def test_well_formed_frames_pass() -> None:
    for group in WORLD.good_groups():
        assert WORLD.check.decode(encode_data([group]))[1] == [group]
    assert WORLD.check.decode(encode_data(WORLD.good_groups()))[0] == 0


def shapes(w: World) -> list[tuple[Any, str, str]]:
    r, n, a = w.record, w.numbers, w.acker
    return [
        (b"\xc1\xc1\xc1", "undecodable", "undecodable"),
        (encode_data([[r, n, "default", [[1]], None]])[:-3], "undecodable", "undecodable"),
        (b"\x92\x00\xdd\xff\xff\xff\xff", "undecodable", "undecodable"),  # 4G elements
        (b"\xdb\xff\xff\xff\xff", "undecodable", "undecodable"),  # a 4 GB string header
        (b"\x91" * 3000 + b"\xc0", "undecodable", "undecodable"),  # 3,000-deep nesting
        # 600,000 empty lists: 600 KB that would be 43 MB of objects
        (pack([0, [[r, n, "default", [[]] * 600_000, None]]]), "too-costly", "budget"),
        (pack({"a": 1}), "not-a-frame", "not a frame"),
        (pack([]), "not-a-frame", "not a frame"),
        (pack("a bare string"), "not-a-frame", "not a frame"),
        (pack([7, []]), "not-a-frame", "unknown frame kind"),
        (pack([0, "groups"]), "not-a-frame", "not a list"),
        (pack([0, [[r, n, "default"]]]), "bad-group", "wrong shape"),
        (pack([0, ["a group"]]), "bad-group", "wrong shape"),
        # the shapes that killed workers (issue 24): unhashable ids and streams ...
        (pack([0, [[[r], n, "default", [[1]], None]]]), "bad-group", "addressed"),
        (pack([0, [[r, [n], "default", [[1]], None]]]), "bad-group", "addressed"),
        (pack([0, [[r, n, ["default"], [[1]], None]]]), "bad-group", "addressed"),
        (pack([0, [[r, n, {"a": 1}, [[1]], None]]]), "bad-group", "addressed"),
        (pack([0, [[float(r), n, "default", [[1]], None]]]), "bad-group", "addressed"),
        # ... roots that are not ints, a bare string for an envelope ...
        (pack([0, [[r, n, "default", [[1]], [[5, 1.5]]]]]), "bad-tuple", "root id"),
        (pack([0, [[r, n, "default", [[1]], [[5, {"x": 1}]]]]]), "bad-tuple", "root id"),
        (pack([0, [[r, n, "default", [[1]], [[5, {1.5: 1}]]]]]), "bad-tuple", "root id"),
        (pack([0, [[r, n, "default", [[1]], ["xy"]]]]), "bad-tuple", "envelope"),
        (pack([0, [[r, n, "default", [[1]], [[-5, 1]]]]]), "bad-tuple", "edge id"),
        (pack([0, [[r, n, "default", [[1]], [[5, 2**64 - 1, 3]]]]]), "bad-tuple", "envelope"),
        # ... and system or acker traffic sent to a user bolt
        (pack([0, [[r, -1, ACK_ACK, [[{5: 6}]], None]]]), "unknown-source", "unknown source"),
        (pack([0, [[r, a, ACK_ACK, [[[5]]], None]]]), "unknown-source", "unknown source"),
        (pack([0, [[99, n, "default", [[1]], None]]]), "unknown-task", "task 99"),
        (pack([0, [[r, 77, "default", [[1]], None]]]), "unknown-source", "source 77"),
        (pack([0, [[r, n, "secret", [[1]], None]]]), "unknown-source", "'secret'"),
        (pack([0, [[a, n, ACK_ACK, [[{5: 6}]], None]]]), "unknown-source", "source"),
        (pack([0, [[n, -1, ACK_ACK, [[[5]]], None]]]), "unknown-source", "source -1"),
        (pack([0, [[r, n, "default", "values", None]]]), "bad-group", "not a list"),
        (pack([0, [[r, n, "default", [1, 2], None]]]), "bad-tuple", "not a list"),
        (pack([0, [[r, n, "default", [[1, 2]], None]]]), "bad-tuple", "number of values"),
        (pack([0, [[r, w.pairs, "default", [[1]], None]]]), "bad-tuple", "number of values"),
        (pack([0, [[r, n, "default", [[1], [2]], [[1, 2]]]]]), "bad-tuple", "do not match"),
        (pack([0, [[r, n, "default", None, 12]]]), "bad-group", "not a list"),  # no barriers
        (pack([0, [[a, -1, ACK_ACK, [[{"x": 6}]], None]]]), "bad-system", "root: value"),
        (pack([0, [[a, -1, ACK_ACK, [[{5: 6.5}]], None]]]), "bad-system", "root: value"),
        (pack([0, [[a, -1, ACK_INIT, [[[[5, None, 1]]]], None]]]), "bad-system", "inits"),
        (pack([0, [[a, -1, ACK_INIT, [[[[5, 6]]]], None]]]), "bad-system", "inits"),
        (pack([0, [[a, -1, ACK_FAIL, [[5, "boom"]], None]]]), "bad-system", "fail"),
        (pack([0, [[a, -1, ACK_RESET, [[["5"]]], None]]]), "bad-system", "roots"),
        (pack([0, [[a, -1, ACK_ACK, [[{5: 6}]], [[1, 2]]]]]), "bad-system", "tracked"),
        (pack([0, [[n, a, ACK_ACK, [[{5: 6}]], None]]]), "bad-system", "roots"),
        (pack([0, [[n, a, ACK_INIT, [[[[5, 6, 1]]]], None]]]), "unknown-source", "stream"),
        (pack([1, 77, True]), "bad-backpressure", "not a peer"),
        (pack([1, 0, True]), "bad-backpressure", "not a peer"),  # this worker itself
        (pack([1, [0], True]), "bad-backpressure", "not a peer"),
        (pack([1, 0, True, [1]]), "not-a-frame", "unknown frame kind"),  # quoting link tokens
        (pack([2, 0, 5]), "not-a-frame", "unknown frame kind"),  # a link token: none now
    ]


@pytest.mark.parametrize("case", range(len(shapes(WORLD))))
def test_malformed_frames_are_refused_with_their_reason(case: int) -> None:
    frame, reason, text = shapes(WORLD)[case]
    with pytest.raises(BadFrame, match=text) as refused:
        WORLD.check.decode(frame)
    assert refused.value.reason == reason and reason in REASONS


def test_an_over_budget_frame_is_refused_before_it_is_decoded() -> None:
    """16 MiB of empty arrays (the issue's 1.2 GB frame): refused, and quickly — the
    compiled walk allocates nothing (the pure-Python one stops at the budget)."""
    inner = b"\xdd" + (1_000_000).to_bytes(4, "big") + b"\x90" * 1_000_000
    frame = b"\x92\x00\xdc" + (16).to_bytes(2, "big") + inner * 16
    check = FrameCheck(
        0, 1, WORLD.check.routes, max_frame_bytes=32 * 1024 * 1024, token=new_token()
    )
    with pytest.raises(BadFrame) as refused:
        check.decode(frame)
    assert refused.value.reason == "too-costly"


def test_drops_are_counted_per_reason_and_reported_at_a_bounded_rate() -> None:
    reports: list[str] = []
    drops = DropCounter(reports.append, every=10.0)
    for i in range(50):
        drops.drop("bad-tuple" if i % 2 else "unknown-task", f"detail {i}", now=100.0 + i * 0.1)
    drops.drop("undecodable", "later", now=111.0)
    assert drops.dropped == 51 and drops.last_reason == "undecodable: later"
    assert drops.by_reason == {"unknown-task": 25, "bad-tuple": 25, "undecodable": 1}
    assert len(reports) == 2
    assert "dropped 1 malformed" in reports[0] and "dropped 50 malformed" in reports[1]


# -- generated from the frame grammar -------------------------------------------------------


@FUZZ
@given(hostile_frames(WORLD.good_groups()))
def test_generated_frames_are_refused_with_a_reason_or_are_well_formed(frame: bytes) -> None:
    try:
        message = WORLD.check.decode(frame)
    except BadFrame as refused:
        assert refused.reason in REASONS
        return
    assert message[0] == 0  # the only backpressure frame from worker 0 would be its own
    for group in message[1]:  # what passes has the shape the runtime relies on
        dest, src, stream, vals, _ = group
        assert (
            stream in WORLD.check.routes[dest] and src in WORLD.check.routes[dest][stream].sources
        )


@FUZZ
@given(st.lists(hostile_frames(WORLD.good_groups()), min_size=1, max_size=4))
def test_a_running_worker_survives_generated_frames_and_executes_the_good_ones(
    frames: list[bytes],
) -> None:
    """The decode-and-dispatch path of a real executor (acking on): hostile frames go in
    between good ones; the loop never raises, the good tuples all run, in order."""
    w = World()
    expected = [f"good-{i}-{k}" for i in range(len(frames)) for k in range(2)]
    good = [
        encode_data([[w.record, w.numbers, "default", [[f"good-{i}-{k}"] for k in range(2)], None]])
        for i in range(len(frames))
    ]
    for hostile, then in zip(frames, good):
        w.h.put(hostile, then)
    w.h.turn(3)
    seen = w.h.bolt().seen
    assert [v[0] for _, _, v in seen if str(v[0]).startswith("good-")] == expected
    assert all(type(v) is list and len(v) in (1, 2) for _, _, v in seen)
    assert w.h.executor.drops.dropped <= len(frames)
    assert set(w.h.executor.drops.by_reason) <= set(REASONS)


# -- a running executor -------------------------------------------------------------------


def test_a_worker_drops_malformed_frames_and_keeps_executing() -> None:
    h = Harness(topology())
    (bolt_task,) = h.bolts
    src = h.spouts[0].task_id
    h.put(
        b"garbage",
        pack([0, [[bolt_task, 99, "default", [[1]], None]]]),
        pack([0, [[bolt_task, -1, ACK_ACK, [[[1]]], None]]]),  # KeyError: -1 before
        data_frame(bolt_task, src, 3),
    )
    h.turn()
    assert h.executor.drops.dropped == 3
    assert h.executor.drops.by_reason == {"undecodable": 1, "unknown-source": 2}
    assert [v for _, _, v in h.bolt().seen] == [[0], [1], [2]]


def test_a_poisoned_root_never_reaches_the_ackers() -> None:
    """A float root in an envelope used to travel on to the acker (and downstream
    workers) and end a worker's loop in the outbox; now its group never gets in."""
    h = Harness(topology(), {"topology.acker.executors": 1})
    (bolt_task,) = h.bolts
    src = h.spouts[0].task_id
    bad = pack([0, [[bolt_task, src, "default", [[1], [2]], [[5, 1.5], [6, 7]]]]])
    h.put(bad, data_frame(bolt_task, src, 2, start=10))
    h.turn(3)
    assert h.executor.drops.by_reason == {"bad-tuple": 1}
    assert [v for _, _, v in h.bolt().seen] == [[10], [11]]


def test_checkpointed_frames_carry_an_epoch_and_may_hold_barriers() -> None:
    from topology import StatefulBolt

    class Counting(StatefulBolt):
        def execute(self, tup: Any) -> None:
            self.ack(tup)

    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(limit=0))
    b.set_bolt("count", Counting()).shuffle_grouping("numbers")
    h = Harness(b.create_topology())
    check: FrameCheck = h.executor._check
    tasks = h.assignment.component_tasks
    n, c, k = tasks["numbers"][0], tasks["count"][0], tasks["__checkpoint"][0]
    barrier = [c, n, "default", None, 12]
    assert check.decode(encode_data([barrier], 3))[2] == 3
    assert check.decode(encode_data([[-1, k, "__ckpt_rollback", [[4, 2]], None]], 3))
    assert check.decode(encode_data([[k, -1, "__ckpt_done", [[4, 2, c, True, 0, 0]], None]], 3))
    assert check.decode(encode_data([[n, k, "__ckpt_begin", [[4, 2]], None]], 3))
    refusals = [
        (encode_data([barrier]), "unknown frame kind"),  # no epoch
        (pack([0, [barrier], "3"]), "without an epoch"),
        (encode_data([[c, n, "default", None, "12"]], 3), "not a list"),
        (encode_data([[c, n, "default", None, -1]], 3), "not a list"),
        (encode_data([[-1, n, "__ckpt_rollback", [[1, 1]], None]], 3), "unknown source"),
        (encode_data([[-1, k, "__ckpt_rollback", [[1]], None]], 3), "not 2 values"),
        (encode_data([[-1, k, "__ckpt_rollback", [["1", 2]], None]], 3), "wrong types"),
        (encode_data([[k, -1, "__ckpt_done", [[4, 2, c, 1, 0, 0]], None]], 3), "wrong types"),
        (encode_data([[c, k, "__ckpt_begin", [[4, 2]], None]], 3), "unknown source"),
    ]
    for frame, text in refusals:
        with pytest.raises(BadFrame, match=text):
            check.decode(frame)
    # packed envelopes where a barrier's checkpoint id goes
    for packed in (codec.py_pack_metas([(5, 12)]), b"", b"\x0c"):
        with pytest.raises(BadFrame, match="not a list") as refused:
            check.decode(encode_data([[c, n, "default", None, packed]], 3))
        assert refused.value.reason == "bad-group"


def test_commit_reaches_stateful_bolts_from_the_coordinator_only() -> None:
    from topology import StatefulBolt

    class Sink(StatefulBolt):
        def execute(self, tup: Any) -> None:
            self.ack(tup)

    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(limit=0))
    b.set_bolt("plain", Recorder()).shuffle_grouping("numbers")  # no state: no COMMIT
    b.set_bolt("sink", Sink()).shuffle_grouping("numbers")
    h = Harness(b.create_topology())
    check: FrameCheck = h.executor._check
    tasks = h.assignment.component_tasks
    n, p, s, k = (tasks[c][0] for c in ("numbers", "plain", "sink", "__checkpoint"))
    commit = "__ckpt_commit"
    assert check.decode(encode_data([[s, k, commit, [[4, 2], [4, 3]], None]], 3))
    assert check.decode(encode_data([[s, n, "default", None, 2]], 3))  # its barriers still
    refusals = [
        (encode_data([[p, k, commit, [[4, 2]], None]], 3), "unknown source"),
        (encode_data([[s, n, commit, [[4, 2]], None]], 3), "unknown source"),
        (encode_data([[s, -1, commit, [[4, 2]], None]], 3), "unknown source"),
        (encode_data([[s, k, "__ckpt_begin", [[4, 2]], None]], 3), "unknown source"),
        (encode_data([[s, k, "__ckpt_rollback", [[4, 2]], None]], 3), "unknown source"),
        (encode_data([[s, k, commit, [[4]], None]], 3), "not 2 values"),
        (encode_data([[s, k, commit, [[4, True]], None]], 3), "wrong types"),
        (encode_data([[s, k, commit, [[4, 2]], [[1, 2]]]], 3), "tracked system tuple"),
        (encode_data([[s, k, commit, None, 2]], 3), "not a list"),  # no barrier on it
    ]
    for frame, text in refusals:
        with pytest.raises(BadFrame, match=text):
            check.decode(frame)


def test_backpressure_frames_are_checked() -> None:
    h = Harness(topology(), num_workers=3)
    check: FrameCheck = h.executor._check
    assert check.decode(encode_backpressure(2, True)) == [1, 2, True]
    assert check.decode(encode_backpressure(1, False)) == [1, 1, False]
    refusals = [
        (pack([1, 2, "yes"]), "neither on nor off"),
        (pack([1, 2, 1]), "neither on nor off"),
        (pack([1, 0, True]), "not a peer"),  # worker 0 is this one
        (pack([1, 3, True]), "not a peer"),
        (pack([1, -1, False]), "not a peer"),
        (pack([1, True, False]), "not a peer"),
    ]
    for frame, text in refusals:
        with pytest.raises(BadFrame, match=text) as refused:
            check.decode(frame)
        assert refused.value.reason == "bad-backpressure"


# -- the data token ---------------------------------------------------------------------------


def refused(check: FrameCheck, message: bytes) -> str:
    with pytest.raises(BadFrame) as refusal:
        check.admit(message)
    return refusal.value.reason


def test_a_frame_with_this_workers_token_is_checked_as_any_frame(wire_path: str) -> None:
    token = WORLD.check.token
    assert len(token) == TOKEN_BYTES
    frame = encode_data(WORLD.good_groups())
    assert WORLD.check.admit(token + frame) == WORLD.check.decode(frame)
    assert refused(WORLD.check, token + b"\xc1") == "undecodable"  # the rest as before
    assert refused(WORLD.check, token) == "undecodable"  # a token and no frame
    assert refused(WORLD.check, token + pack([1, 0, True])) == "bad-backpressure"


def one_bit_off(token: bytes, byte: int, bit: int) -> bytes:
    return token[:byte] + bytes([token[byte] ^ (1 << bit)]) + token[byte + 1 :]


def test_a_frame_without_the_token_is_refused_before_anything_in_it_is_looked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check, real = WORLD.check, WORLD.check.token
    other_worker = Harness(topology()).receiver.token
    frame = encode_data(WORLD.good_groups())

    def looked_at(*args: Any) -> Any:
        raise AssertionError("the door looked at a frame without the token")

    monkeypatch.setattr(codec, "decode_frame", looked_at)
    messages = [
        b"",
        frame,  # no token at all
        real[:-1],  # shorter than a token
        new_token() + frame,  # a guess
        *(one_bit_off(real, byte, bit) + frame for byte in (0, 7, 15) for bit in (0, 7)),
        real.hex().encode() + frame,  # its text
        other_worker + frame,  # another worker's
        frame + real,  # after the frame
    ]
    assert [refused(check, m) for m in messages] == ["bad-token"] * len(messages)
    assert "bad-token" in REASONS


def test_a_door_has_a_token_of_full_length() -> None:
    for token in (b"", b"short", bytes(TOKEN_BYTES + 1)):
        with pytest.raises(ValueError, match="16 bytes"):
            FrameCheck(0, 1, {}, 1024, token=token)
    with pytest.raises(TypeError):
        FrameCheck(0, 1, {}, 1024)  # type: ignore[call-arg]
    token = new_token()
    shown = repr(FrameCheck(0, 1, {}, 1024, token=token))
    assert token.hex() not in shown and repr(token) not in shown  # never in a log line


@FUZZ
@given(st.binary(max_size=2 * TOKEN_BYTES), hostile_frames(WORLD.good_groups()))
def test_generated_tokens_are_refused_unless_exactly_the_workers_own(
    token: bytes, frame: bytes
) -> None:
    check = WORLD.check
    for message in (token + frame, token + encode_data(WORLD.good_groups())):
        if message[:TOKEN_BYTES] != check.token:  # (it never is: 1 in 2**128)
            assert refused(check, message) == "bad-token"


@FUZZ
@given(hostile_frames(WORLD.good_groups()))
def test_with_the_token_the_compiled_and_pure_doors_agree(frame: bytes) -> None:
    """Past the token, the door decides alike with the compiled checks and with their
    pure-Python twins (the budget, the tuples, packed envelopes): the same reason, or the
    same message."""
    outcomes = []
    for compiled in (codec._compiled, None):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(codec, "_compiled", compiled)
            for name in ("check_tuples", "pack_metas", "expand_metas"):
                twin = getattr(codec, f"py_{name}")
                patch.setattr(codec, name, twin if compiled is None else getattr(compiled, name))
            try:
                outcomes.append(WORLD.check.admit(WORLD.check.token + frame))
            except BadFrame as refused:
                outcomes.append(refused.reason)
    if codec._compiled is None:
        pytest.skip("topology.runtime.net._wire not built: only the pure door ran")
    assert outcomes[0] == outcomes[1]


# -- packed envelopes -----------------------------------------------------------------------

wire_path = wire_paths()
#: A group's one-tree envelopes, edges and roots at the edges of their range.
ENVELOPES = [(5, 9), (2**64 - 1, 9), (0, 2**64 - 1)]


def test_packed_envelopes_pass_the_door_expanded(wire_path: str) -> None:
    r, n, p = WORLD.record, WORLD.numbers, WORLD.pairs
    groups = [
        [r, n, "default", [[1], [2], [3]], codec.pack_metas(ENVELOPES)],
        [r, p, "default", [[1, "x"]], codec.pack_metas([(7, 7)])],
        [r, n, "default", [], b""],
    ]
    [kind, decoded] = WORLD.check.decode(encode_data(groups))
    assert kind == 0
    assert decoded == [
        [r, n, "default", [[1], [2], [3]], ENVELOPES],
        [r, p, "default", [[1, "x"]], [(7, 7)]],
        [r, n, "default", [], []],
    ]
    assert all(type(meta) is tuple for group in decoded for meta in group[4])


def test_packed_envelopes_of_the_wrong_length_are_refused(wire_path: str) -> None:
    r, n = WORLD.record, WORLD.numbers
    two = codec.py_pack_metas(ENVELOPES[:2])
    for vals, packed in [
        ([[1], [2]], two[:-1]),  # one byte short
        ([[1], [2]], two[:16]),  # one envelope for two values
        ([[1], [2]], two + b"\0"),  # one byte over
        ([[1]], two),  # two envelopes for one value
        ([[1]], b""),
        ([], two[:16]),
    ]:
        frame = encode_data([[r, n, "default", vals, packed]])
        with pytest.raises(BadFrame, match=f"task {r}, stream 'default'") as refused:
            WORLD.check.decode(frame)
        assert refused.value.reason == "bad-tuple"
        assert "packed envelopes that do not match" in str(refused.value)


def test_packed_envelopes_still_have_their_values_checked(wire_path: str) -> None:
    r, n = WORLD.record, WORLD.numbers
    for vals, text in [([[1], [2, 3]], "number of values"), ([[1], 2], "not a list")]:
        frame = encode_data([[r, n, "default", vals, codec.py_pack_metas(ENVELOPES[:2])]])
        with pytest.raises(BadFrame, match=text) as refused:
            WORLD.check.decode(frame)
        assert refused.value.reason == "bad-tuple"


def test_packed_envelopes_on_a_system_stream_are_refused(wire_path: str) -> None:
    a, n = WORLD.acker, WORLD.numbers
    for group in [
        [a, -1, ACK_ACK, [[{5: 6}]], codec.py_pack_metas([(1, 2)])],
        [a, -1, ACK_INIT, [[[[5, 6, n]]]], b"\0" * 16],
        [n, a, ACK_ACK, [[[5, 6]]], b""],  # even an empty one: only None is untracked
    ]:
        with pytest.raises(BadFrame, match="tracked system tuple") as refused:
            WORLD.check.decode(encode_data([group]))
        assert refused.value.reason == "bad-system"


@settings(
    FUZZ, suppress_health_check=[*FUZZ.suppress_health_check, HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_any_bytes_as_envelopes_pass_only_at_sixteen_a_value(
    wire_path: str, data: st.DataObject
) -> None:
    count = data.draw(st.integers(0, 4), label="values")
    packed = data.draw(
        st.binary(max_size=80) | st.binary(min_size=16 * count, max_size=16 * count),
        label="packed",
    )
    vals = [[i] for i in range(count)]
    frame = encode_data([[WORLD.record, WORLD.numbers, "default", vals, packed]])
    if len(packed) != 16 * count:
        with pytest.raises(BadFrame) as refused:
            WORLD.check.decode(frame)
        assert refused.value.reason == "bad-tuple"
        return
    [group] = WORLD.check.decode(frame)[1]  # any 16 bytes are an envelope
    assert group[3] == vals and group[4] == codec.py_expand_metas(packed)
    assert all(type(m) is tuple and 0 <= min(m) and max(m) < 2**64 for m in group[4])


@FUZZ
@given(hostile_frames(codec.packed_groups(WORLD.good_groups())))
def test_generated_frames_with_packed_envelopes_leave_no_bytes_past_the_door(
    frame: bytes,
) -> None:
    try:
        message = WORLD.check.decode(frame)
    except BadFrame as refused:
        assert refused.reason in REASONS
        return
    for group in message[1] if message[0] == 0 else []:
        dest, src, stream, vals, metas = group
        assert src in WORLD.check.routes[dest][stream].sources
        assert metas is None or type(metas) is list  # expanded: no bytes get past
        assert metas is None or len(metas) == len(vals)


class Ids(Bolt):
    """Records every input's values, edge id and root."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[tuple[list[Any], Any, Any]] = []

    def execute(self, tup: Tuple) -> None:
        self.seen.append((tup.values, tup.id, tup.anchors))
        self.ack(tup)


class BasicIds(BasicBolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[tuple[list[Any], Any, Any]] = []

    def process(self, tup: Tuple) -> None:
        self.seen.append((tup.values, tup.id, tup.anchors))


def test_a_running_worker_executes_tuples_with_packed_envelopes() -> None:
    """Past the door, the expanded envelopes are each tuple's edge id and root."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(limit=0))
    b.set_bolt("ids", Ids()).shuffle_grouping("numbers")
    b.set_bolt("basic", BasicIds()).shuffle_grouping("numbers")
    h = Harness(b.create_topology(), {"topology.acker.executors": 1})
    tasks = h.assignment.component_tasks
    n = tasks["numbers"][0]
    vals = [[1], [2], [3]]
    for bolt in ("ids", "basic"):
        group = [tasks[bolt][0], n, "default", vals, codec.pack_metas(ENVELOPES)]
        h.put(encode_data([group]))
    h.turn(3)
    assert h.executor.drops.dropped == 0
    expected = [(v, edge, root) for v, (edge, root) in zip(vals, ENVELOPES)]
    for bolt in (0, 1):
        assert h.bolt(bolt).seen == expected  # type: ignore[attr-defined]
