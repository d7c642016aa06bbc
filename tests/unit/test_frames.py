"""Unit tests for the checks on frames from the network: every malformed case is refused
with a reason, and a running executor counts it and goes on."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from acker import ACK_ACK, ACK_FAIL, ACK_INIT
from tests.unit.test_executor import Harness, data_frame, topology
from topology.runtime.frames import BadFrame, DropCounter, FrameCheck
from topology.runtime.serialization import encode_backpressure, encode_data

pytestmark = pytest.mark.timeout(30)

CHECK = FrameCheck(
    worker=0,
    workers=3,
    tasks=frozenset({1, 4}),
    streams={1: frozenset({"default"}), 2: frozenset({"default"}), -2: frozenset({ACK_ACK})},
    max_frame_bytes=64 * 1024,
)


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


GOOD = encode_data([[4, 1, "default", [[1], [2]], None], [4, 2, "default", [[3]], [[7, 9]]]])


def test_a_good_frame_passes() -> None:
    assert CHECK.decode(GOOD)[0] == 0
    assert CHECK.decode(encode_backpressure(2, True)) == [1, 2, True]


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        (b"\xc1\xc1\xc1", "undecodable"),  # never-used msgpack byte
        (GOOD[:-3], "undecodable"),  # truncated
        (b"\x92\x00\xdd\xff\xff\xff\xff", "undecodable"),  # announces 4G elements
        (b"\xdb\xff\xff\xff\xff", "undecodable"),  # a 4 GB string header
        (pack({"a": 1}), "not a frame"),
        (pack([]), "not a frame"),
        (pack([7, []]), "unknown frame kind"),
        (pack([0, "groups"]), "not a list"),
        (pack([0, [[4, 1, "default"]]]), "wrong shape"),
        (pack([0, [[99, 1, "default", [[1]], None]]]), "task 99"),
        (pack([0, [["4", 1, "default", [[1]], None]]]), "task '4'"),
        (pack([0, [[4, 77, "default", [[1]], None]]]), "unknown source 77"),
        (pack([0, [[4, 1, "secret", [[1]], None]]]), "stream 'secret'"),
        (pack([0, [[4, -2, "default", [[1]], None]]]), "stream 'default'"),
        (pack([0, [[4, 1, "default", "values", None]]]), "values are not a list"),
        (pack([0, [[4, 1, "default", [[1], [2]], [[1, 2]]]]]), "envelopes do not match"),
        (pack([1, 77, True]), "not a peer"),
        (pack([1, 0, True]), "not a peer"),  # this worker itself
        (pack([1, 2, "yes"]), "neither on nor off"),
        (pack([0, [[4, 1, "default", [[]] * 70_000, None]]]), "over the limit"),
    ],
)
def test_malformed_frames_are_refused_with_a_reason(frame: bytes, why: str) -> None:
    with pytest.raises(BadFrame, match=why):
        CHECK.decode(frame)


def test_random_garbage_never_gets_through_unchecked() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        frame = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
        try:
            message = CHECK.decode(frame)
        except BadFrame:
            continue
        assert message[0] in (0, 1)  # whatever passes is a well-formed frame


def test_drops_are_counted_and_reported_at_a_bounded_rate() -> None:
    reports: list[str] = []
    drops = DropCounter(reports.append, every=10.0)
    for i in range(50):
        drops.drop(f"reason {i}", now=100.0 + i * 0.1)
    drops.drop("later", now=111.0)
    assert drops.dropped == 51 and drops.last_reason == "later"
    assert len(reports) == 2
    assert "dropped 1 malformed" in reports[0] and "dropped 50 malformed" in reports[1]


# -- a running executor -------------------------------------------------------------------


def test_a_worker_drops_malformed_frames_and_keeps_executing() -> None:
    h = Harness(topology())
    (bolt_task,) = h.bolts
    src = h.spouts[0].task_id
    h.receiver.frames.extend(
        [
            b"garbage",
            pack([0, [[bolt_task, 99, "default", [[1]], None]]]),
            data_frame(bolt_task, src, 3),
        ]
    )
    h.turn()
    assert h.executor.drops.dropped == 2
    assert [v for _, _, v in h.bolt().seen] == [[0], [1], [2]]


def test_a_group_with_malformed_envelopes_is_dropped_not_fatal() -> None:
    h = Harness(topology())
    (bolt_task,) = h.bolts
    src = h.spouts[0].task_id
    bad = encode_data([[bolt_task, src, "default", [[1], [2]], [5, "x"]]])
    h.receiver.frames.extend([bad, data_frame(bolt_task, src, 2, start=10)])
    h.turn()
    assert h.executor.drops.dropped == 1
    assert "malformed envelope" in (h.executor.drops.last_reason or "")
    assert [v for _, _, v in h.bolt().seen] == [[10], [11]]


def test_forged_ack_traffic_of_the_wrong_shape_is_dropped() -> None:
    h = Harness(topology(), {"topology.acker.executors": 1})
    acker = h.assignment.component_tasks["__acker"][0]
    spout = h.spouts[0].task_id
    forged = encode_data(
        [[acker, -1, ACK_ACK, [[{"not": "a root"}]], None], [spout, acker, ACK_FAIL, [[1]], None]]
    )
    h.receiver.frames.append(forged)
    h.turn(2)
    assert h.executor.drops.dropped >= 1
    assert h.spout.calls == 0  # nothing broke: the (inactive) spout is just not called


def test_a_forged_init_naming_no_real_spout_task_is_dropped_not_fatal() -> None:
    """An init completes at once when its value is 0; its outcome must not go to a task of
    no worker (there is no lane to it: that used to end the worker's loop)."""
    h = Harness(topology(), {"topology.acker.executors": 1})
    acker = h.assignment.component_tasks["__acker"][0]
    forged = encode_data(
        [
            [acker, -1, ACK_INIT, [[[[11, 0, 99_999]]]], None],  # complete at once, for nobody
            [acker, -1, ACK_INIT, [[[[12, None, 1]]]], None],  # a value that is no edge XOR
        ]
    )
    h.receiver.frames.append(forged)
    h.turn()  # the malformed init is dropped as it is received, the outcome at turn end
    assert h.executor.drops.dropped == 2
    assert "ack outcomes for unknown task 99999" in (h.executor.drops.last_reason or "")
    h.turn(2)
    assert h.executor.drops.dropped == 2
    assert h.spout.calls == 0


CHECKPOINTED = FrameCheck(
    worker=0,
    workers=3,
    tasks=frozenset({1, 4, -1}),
    streams={1: frozenset({"default"}), 9: frozenset({"__ckpt_rollback"})},
    max_frame_bytes=64 * 1024,
    checkpointed=True,
)


def test_checkpointed_frames_carry_an_epoch_and_may_hold_barriers() -> None:
    barrier = [4, 1, "default", None, 12]
    assert CHECKPOINTED.decode(encode_data([barrier], 3))[2] == 3
    assert CHECKPOINTED.decode(encode_data([[-1, 9, "__ckpt_rollback", [[4, 2]], None]], 3))
    with pytest.raises(BadFrame, match="unknown frame kind"):
        CHECKPOINTED.decode(encode_data([barrier]))  # no epoch
    with pytest.raises(BadFrame, match="without an epoch"):
        CHECKPOINTED.decode(pack([0, [barrier], "3"]))
    with pytest.raises(BadFrame, match="values are not a list"):
        CHECK.decode(encode_data([barrier]))  # no barriers where nothing is checkpointed
    with pytest.raises(BadFrame, match="values are not a list"):
        CHECKPOINTED.decode(encode_data([[4, 1, "default", None, "12"]], 3))
    with pytest.raises(BadFrame, match="unknown source"):
        CHECKPOINTED.decode(encode_data([[-1, 1, "__ckpt_rollback", [[1, 1]], None]], 3))
