"""Unit tests for :class:`Transfer` toward a peer worker: frames, batching, flushing,
overflow and backpressure signals, with a fake peer sender."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from tests.unit.test_wire import wire_paths
from topology.runtime.checkpoint.hooks import UNSTAMPED, FrameStamp, RecoveryEpoch
from topology.runtime.net import codec
from topology.runtime.net.codec import BACKPRESSURE, DATA, decode, encode_backpressure
from topology.runtime.net.transfer import Transfer

pytestmark = pytest.mark.timeout(30)

wire_path = wire_paths()


# -- transfer toward a peer -----------------------------------------------------------------


class FakeSender:
    """A peer's queue: refuses frames while closed, records accepted ones."""

    def __init__(self, open: bool = True) -> None:
        self.open = open
        self.frames: list[bytes] = []
        self.attempts = 0

    def try_send(self, frame: bytes) -> bool:
        self.attempts += 1
        if not self.open:
            return False
        self.frames.append(frame)
        return True


def remote_transfer(
    sender: FakeSender,
    batch_size: int = 1000,
    flush_interval: float = 0.0,
    stamp: FrameStamp = UNSTAMPED,
) -> tuple[Transfer, deque[list[Any]]]:
    """Worker 0 hosts task 1; worker 1 hosts tasks 2, 3, 4."""
    inbound: deque[list[Any]] = deque()
    worker_of = {1: 0, 2: 1, 3: 1, 4: 1}
    t = Transfer(
        0,
        worker_of,
        {1: sender},
        inbound,
        batch_size,
        flush_interval,
        lambda *a: None,
        stamp=stamp,
    )
    return t, inbound


def sent_values(frames: list[bytes]) -> list[tuple[int, Any]]:
    out = []
    for frame in frames:
        message = decode(frame)
        assert message[0] == DATA
        for dest, _src, _stream, vals, _metas in message[1]:
            out.extend((dest, v) for v in vals)
    return out


def sent_tuples(frames: list[bytes]) -> list[tuple[int, Any, Any]]:
    """(dest, values, envelope) of every tuple sent, packed envelopes expanded by the
    reference twin (and the lists a frame decodes to as tuples, the way emits make them)."""
    out = []
    for frame in frames:
        message = decode(frame)
        assert message[0] == DATA
        for dest, _src, _stream, vals, metas in message[1]:
            if type(metas) is bytes:
                metas = codec.py_expand_metas(metas)
            for v, m in zip(vals, metas or [None] * len(vals)):
                out.append((dest, v, tuple(m) if type(m) is list else m))
    return out


def tuples_per_frame(frames: list[bytes]) -> list[int]:
    return [sum(len(g[3]) for g in decode(f)[1]) for f in frames]


def test_remote_lanes_are_sent_not_delivered_locally() -> None:
    sender = FakeSender()
    t, inbound = remote_transfer(sender)
    t.lane(1, "default", 2).push_val(["a"])
    t.lane(1, "default", 2).push_meta(None)
    t.lane(1, "default", 1).push_val(["local"])
    t.lane(1, "default", 1).push_meta(None)
    assert t.flush_local() == 1
    assert list(inbound) == [[1, 1, "default", [["local"]], None]]
    t.flush_remote(now=100.0)
    assert [decode(f) for f in sender.frames] == [[DATA, [[2, 1, "default", [["a"]], None]]]]


def test_congested_frame_is_kept_and_retried_in_order() -> None:
    sender = FakeSender(open=False)
    t, _ = remote_transfer(sender)
    lane = t.lane(1, "default", 2)
    pushed = []
    for batch in range(3):
        for i in range(4):
            v = [f"b{batch}-{i}"]
            lane.push_val(v)
            lane.push_meta(None)
            pushed.append((2, v))
        t.flush_remote(now=100.0 + batch)
        assert t.congested
    assert sender.attempts == 1  # frames queue behind the first refused one untried
    assert sender.frames == []
    assert t.buffered() == 3  # three held frames, nothing lost
    t.retry_overflow()
    assert t.congested and sender.attempts == 2  # still closed
    assert t.full_peers() == [1]  # the worker the held frames wait for (status: full_peers)
    sender.open = True
    t.retry_overflow()
    assert not t.congested and t.full_peers() == []
    assert t.buffered() == 0
    assert sent_values(sender.frames) == pushed


def test_retry_stops_when_the_peer_fills_again() -> None:
    class FillsUp(FakeSender):
        def try_send(self, frame: bytes) -> bool:
            if self.open and len(self.frames) >= 1:
                self.open = False
            return super().try_send(frame)

    sender = FillsUp(open=False)
    t, _ = remote_transfer(sender)
    for i in range(3):
        t.lane(1, "default", 2).push_val([i])
        t.lane(1, "default", 2).push_meta(None)
        t.flush_remote(now=10.0 + i)
    sender.open = True
    t.retry_overflow()
    assert sent_values(sender.frames) == [(2, [0])]
    assert t.congested and t.buffered() == 2
    sender.open = True
    sender.frames.clear()  # the peer drained its queue
    t.retry_overflow()
    assert sent_values(sender.frames) == [(2, [1])]


def test_control_frames_queue_behind_overflow() -> None:
    sender = FakeSender(open=False)
    t, _ = remote_transfer(sender)
    assert t.peers == [1]
    t.lane(1, "default", 2).push_val(["a"])
    t.lane(1, "default", 2).push_meta(None)
    t.flush_remote(now=1.0)
    t.send_control(1, encode_backpressure(0, True))
    sender.open = True
    t.retry_overflow()
    assert [decode(f)[0] for f in sender.frames] == [DATA, BACKPRESSURE]
    assert decode(sender.frames[1]) == [BACKPRESSURE, 0, True]


def test_frames_split_across_lanes_at_batch_size() -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender, batch_size=2)
    for dest in (2, 3, 4):
        t.lane(1, "default", dest).push_val([dest])
        t.lane(1, "default", dest).push_meta(None)
    t.flush_remote(now=5.0)
    assert tuples_per_frame(sender.frames) == [2, 1]
    assert sent_values(sender.frames) == [(2, [2]), (3, [3]), (4, [4])]


@pytest.mark.parametrize("layout", [[5], [2, 2]], ids=["one-lane-of-5", "two-lanes-of-2"])
def test_frames_never_exceed_batch_size(layout: list[int]) -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender, batch_size=3)
    pushed = []
    for dest, n in zip((2, 3), layout):
        lane = t.lane(1, "default", dest)
        for i in range(n):
            lane.push_val([i])
            lane.push_meta(None)
            pushed.append((dest, [i]))
    t.flush_remote(now=5.0, force=True)
    assert sent_values(sender.frames) == pushed  # nothing lost either way
    assert max(tuples_per_frame(sender.frames)) <= 3, tuples_per_frame(sender.frames)


def test_flush_remote_waits_for_the_interval_unless_full() -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender, batch_size=3, flush_interval=1.0)
    lane = t.lane(1, "default", 2)
    assert t.flush_remote(now=100.0) is None  # nothing pending
    lane.push_val([0])
    lane.push_meta(None)
    t.flush_remote(now=100.0)  # first flush: last flush was long ago
    assert len(sender.frames) == 1
    lane.push_val([1])
    lane.push_meta(None)
    assert t.flush_remote(now=100.5) == pytest.approx(101.0)  # not due: says when
    assert len(sender.frames) == 1
    assert t.flush_remote(now=101.0) is None  # due now
    assert len(sender.frames) == 2
    for i in range(3):
        lane.push_val([i])
        lane.push_meta(None)
    t.flush_remote(now=101.1)  # a full batch goes at once
    assert len(sender.frames) == 3
    lane.push_val(["forced"])
    lane.push_meta(None)
    t.flush_remote(now=101.2, force=True)
    assert len(sender.frames) == 4
    assert sent_values(sender.frames[-1:]) == [(2, ["forced"])]


def test_tracked_metas_travel_with_their_group() -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender)
    lane = t.lane(1, "s", 2)
    lane.push_val(["a"])
    lane.push_meta(None)
    lane.push_val(["b"])
    lane.push_meta([7, {1: 2}])
    t.flush_remote(now=1.0)
    (group,) = decode(sender.frames[0])[1]
    assert group == [2, 1, "s", [["a"], ["b"]], [None, [7, {1: 2}]]]


def test_an_acked_lanes_envelopes_travel_packed(wire_path: str) -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender)
    metas = [(5, 2**64 - 1), (6, 2**64 - 1), (2**64 - 1, 0)]
    lane = t.lane(1, "s", 2)
    for i, meta in enumerate(metas):
        lane.push_val([i])
        lane.push_meta(meta)
    t.flush_remote(now=1.0)
    (group,) = decode(sender.frames[0])[1]
    assert group[:4] == [2, 1, "s", [[0], [1], [2]]]
    assert type(group[4]) is bytes and group[4] == codec.py_pack_metas(metas)
    assert codec.py_expand_metas(group[4]) == metas


@pytest.mark.parametrize(
    "odd", [None, (7, {1: 7, 2: 0}), (7, -1)], ids=["untracked", "two-trees", "not-an-id"]
)
def test_a_lane_with_another_envelope_among_them_sends_a_list(wire_path: str, odd: Any) -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender)
    lane = t.lane(1, "s", 2)
    for i, meta in enumerate([(5, 9), odd, (6, 9)]):
        lane.push_val([i])
        lane.push_meta(meta)
    t.flush_remote(now=1.0)
    (group,) = decode(sender.frames[0])[1]
    sent = [[5, 9], None if odd is None else list(odd), [6, 9]]
    assert group == [2, 1, "s", [[0], [1], [2]], sent]


# -- checkpoint barriers in lanes ------------------------------------------------------------


def test_a_barrier_stays_between_the_tuples_before_and_after_it() -> None:
    sender = FakeSender()
    epoch = RecoveryEpoch(6)
    t, _ = remote_transfer(sender, batch_size=3, stamp=epoch)
    epoch.epoch = 7  # a rollback moved it: frames sent from now on carry the new one
    lane = t.lane(1, "default", 2)
    for v in range(4):
        lane.push_val([v])
        lane.push_meta(None)
    lane.mark_barrier(5)
    for v in range(4, 6):
        lane.push_val([v])
        lane.push_meta(None)
    t.flush_remote(0.0, force=True)
    groups = []
    for frame in sender.frames:
        message = decode(frame)
        assert message[0] == DATA and message[2] == 7  # stamped with the sender's epoch
        groups.extend(message[1])
    shape = [("barrier", g[4]) if g[3] is None else [v[0] for v in g[3]] for g in groups]
    assert shape == [[0, 1, 2], [3], ("barrier", 5), [4, 5]]


def test_local_barriers_reach_the_inbound_queue_in_order() -> None:
    inbound: deque[list[Any]] = deque()
    t = Transfer(0, {1: 0, 2: 0}, {}, inbound, 100, 0.0, lambda *a: None)
    lane = t.lane(1, "default", 2)
    lane.mark_barrier(1)  # a barrier with nothing before it
    lane.push_val(["a"])
    lane.push_meta(None)
    lane.mark_barrier(2)
    assert t.flush_local() == 1
    assert [g[3] if g[3] is None else g[3][0][0] for g in inbound] == [None, "a", None]
    assert [g[4] for g in inbound if g[3] is None] == [1, 2]


def test_drop_data_empties_lanes_and_held_frames_but_keeps_control_lanes() -> None:
    sender = FakeSender(open=False)
    t, _ = remote_transfer(sender)
    data, control = t.lane(1, "default", 2), t.lane(-1, "__ckpt_status", 3)
    for lane in (data, control):
        lane.push_val([1])
        lane.push_meta(None)
    data.mark_barrier(4)
    t.flush_remote(0.0, force=True)
    assert t.congested
    data.push_val([2])
    data.push_meta(None)
    control.push_val([2])
    control.push_meta(None)
    t.drop_data(frozenset({"__ckpt_status"}))
    assert not t.congested and not data.pending() and control.vals == [[2]]


# -- frames the peer would refuse are split before they are sent ------------------------


def limited_transfer(
    sender: FakeSender, max_frame_bytes: int
) -> tuple[Transfer, list[tuple[int, str, str]], dict[str, int]]:
    oversized: list[tuple[int, str, str]] = []
    transferred: dict[str, int] = {}

    def count(src: int, stream: str, n: int) -> None:
        transferred[stream] = transferred.get(stream, 0) + n

    t = Transfer(
        0,
        {1: 0, 2: 1},
        {1: sender},
        deque(),
        1000,
        0.0,
        count,
        max_frame_bytes=max_frame_bytes,
        on_oversized=lambda src, stream, why: oversized.append((src, stream, why)),
    )
    return t, oversized, transferred


def push(t: Transfer, values: list[Any], tracked: bool = False) -> list[Any]:
    """Push ``values`` on one lane, each in a tree of its own when ``tracked``; returns
    their envelopes."""
    lane = t.lane(1, "default", 2)
    metas = []
    for i, v in enumerate(values):
        meta = (i + 1, 2**64 - 7 - i) if tracked else None
        lane.push_val(v)
        lane.push_meta(meta)
        metas.append(meta)
    return metas


@pytest.mark.parametrize("untracked", [False, True], ids=["acked", "one-untracked"])
def test_a_frame_over_the_peers_byte_limit_is_split_and_nothing_is_lost(
    wire_path: str, untracked: bool
) -> None:
    sender = FakeSender()
    t, oversized, transferred = limited_transfer(sender, max_frame_bytes=4096)
    values = [[f"{i:04d}" + "x" * 96] for i in range(200)]  # ~20 KB in all
    metas = push(t, values, tracked=True)
    if untracked:  # the part holding it carries a list, every other part bytes
        t.lane(1, "default", 2).metas[150] = metas[150] = None
    t.flush_remote(now=1.0)
    assert len(sender.frames) > 4 and all(len(f) <= 4096 for f in sender.frames)
    # all of them, in order, each with its own envelope
    assert sent_tuples(sender.frames) == [(2, v, m) for v, m in zip(values, metas)]
    carried = [type(g[4]) for f in sender.frames for g in decode(f)[1]]
    lists = 1 if untracked else 0
    assert carried.count(list) == lists and carried.count(bytes) == len(carried) - lists
    assert oversized == [] and t.sent_to[1] == 200 and transferred == {"default": 200}


def test_a_frame_over_the_decode_budget_is_split() -> None:
    """600 empty lists per tuple: 600 KB that would decode to 43 MB of objects."""
    sender = FakeSender()
    t, oversized, _ = limited_transfer(sender, max_frame_bytes=16 * 2**20)
    values = [[[[]] * 600] for _ in range(1000)]
    push(t, values)
    t.flush_remote(now=1.0)
    assert len(sender.frames) >= 2 and oversized == []
    assert len(sent_values(sender.frames)) == 1000


def test_a_tuple_too_big_on_its_own_is_reported_and_left_out() -> None:
    sender = FakeSender()
    t, oversized, transferred = limited_transfer(sender, max_frame_bytes=4096)
    push(t, [["small"], ["y" * 10_000], ["after"]])
    t.flush_remote(now=1.0)
    assert [v for _, v in sent_values(sender.frames)] == [["small"], ["after"]]
    [(src, stream, why)] = oversized
    assert (src, stream) == (1, "default") and "task 2" in why and "not sent" in why
    assert t.sent_to[1] == 2 and transferred == {"default": 2}  # the drain balances
