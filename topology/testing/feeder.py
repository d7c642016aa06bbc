"""FeederSpout: a fixed list of tuples, plus whatever the test feeds while it runs.

The spout object the test builds stays in the test process; the topology's workers run
copies of it.  :meth:`FeederSpout.feed` reaches those copies over a ZeroMQ feed: the
test's object binds a PUSH socket on 127.0.0.1 (a random port) when it is first pickled —
``create_topology`` already pickles every component — and each task's copy connects a
PULL socket in ``open`` and reads it, without blocking, in ``next_tuple``.  Fed tuples go
round-robin over the spout's tasks (the sockets: :mod:`.feed`).  This is a test tool:
anyone on this machine may connect to the feed port, and tuples queued toward a worker that
dies are lost.  A LocalCluster closes the test's end of the feed when the topology is
killed: this module registers :func:`feeders` with it
(:mod:`topology.deploy.local.attachments`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgpack

from acker import FailReason
from topology.components import OutputFieldsDeclarer, Spout
from topology.constants import DEFAULT_STREAM
from topology.context import TopologyContext
from topology.deploy.local.attachments import register_attacher
from topology.runtime.net.codec import encodable
from topology.spec import Topology

from .tracking import TracksAcks

#: How long ``feed`` waits for a spout task to connect to the feed (seconds).
FEED_CONNECT_SECS = 10.0


class FeedError(ValueError):
    """``FeederSpout.feed`` refused its values, or no spout task took them."""


class FeederSpout(TracksAcks, Spout):
    """Emits a fixed list of tuples once, spread over its tasks, then what is fed to it.

    Item ``i`` of ``items`` is emitted by task ``i % parallelism`` with ``msg_id=i``
    (unless ``msg_ids=False``).  :meth:`feed` adds tuples while the topology runs, with
    msg ids continuing from ``len(items)``.  With ``replay_failed=True`` a failed tuple is
    emitted again (by the task that failed it).  Acked and failed msg ids are recorded
    (see :mod:`topology.testing.tracking`).

    Example::

        feeder = FeederSpout(["word"])
        builder.set_spout("words", feeder, parallelism=2)
        cluster.submit_topology("t", {}, with_capture(builder.create_topology()))
        feeder.feed(["storm"])                       # the workers' copies emit it
        Capture(cluster, "t").wait_for("words", 1)
    """

    def __init__(
        self,
        fields: Sequence[str],
        items: Iterable[Sequence[Any]] = (),
        stream: str = DEFAULT_STREAM,
        msg_ids: bool = True,
        replay_failed: bool = False,
    ) -> None:
        self._fields = list(fields)
        self._stream = stream
        self._items = [list(v) for v in items]
        self._msg_ids = msg_ids
        self._replay = replay_failed
        #: The component id, once a LocalCluster runs it (for error messages; set by
        #: :func:`feeders`).
        self.component_id: str | None = None
        self._fed = 0
        self._feed_endpoint: str | None = None
        self._sender: Any = None  # FeedSender of the test's own object, bound when pickled
        self._original = True

    # -- the test's side ----------------------------------------------------------------

    def feed(self, values: Sequence[Any], msg_id: Any = None) -> Any:
        """Have one of the running spout tasks emit ``values``; return its msg id (the
        next number after the initial items unless ``msg_id`` — an int or str — is given;
        None with ``msg_ids=False``).

        Call it from one thread, on the object given to the builder, after submitting.
        Raises :class:`FeedError` when the values do not fit the declared fields or msgpack
        cannot encode them, or when no spout task connected within ``FEED_CONNECT_SECS``.
        """
        if not self._original:
            raise FeedError(f"{self._name()}: feed() the object given to the builder, not a copy")
        values = self._checked(values)
        if not self._msg_ids:
            msg_id = None
        elif msg_id is None:
            msg_id = len(self._items) + self._fed
        elif type(msg_id) not in (int, str):
            raise FeedError(f"{self._name()}: a fed msg_id must be an int or str, got {msg_id!r}")
        sender = self._feed()
        if not sender.send(msgpack.packb([msg_id, values], use_bin_type=True)):
            raise FeedError(
                f"{self._name()}: no spout task connected to the feed within "
                f"{FEED_CONNECT_SECS:g}s (is the topology submitted and running?)"
            )
        self._fed += 1
        return msg_id

    def _checked(self, values: Sequence[Any]) -> list[Any]:
        if isinstance(values, (str, bytes, dict)) or not isinstance(values, Iterable):
            raise FeedError(
                f"{self._name()}: feed() takes a list of values, got {type(values).__name__}"
            )
        values = list(values)
        if len(values) != len(self._fields):
            raise FeedError(
                f"{self._name()}: fed {len(values)} value(s), but the spout declares "
                f"{len(self._fields)} field(s) {self._fields}"
            )
        for name, value in zip(self._fields, values):
            if not encodable(value):
                raise FeedError(
                    f"{self._name()}: field {name!r} was fed a {type(value).__name__} that "
                    "msgpack cannot encode (use str, int within 64 bits, float, bool, None, "
                    "bytes, or lists/dicts of them)"
                )
        return values

    def _name(self) -> str:
        where = f" (component {self.component_id!r})" if self.component_id else ""
        return f"FeederSpout{where} with fields {self._fields}"

    def _feed(self) -> Any:
        if self._sender is None:
            from .feed import FeedSender

            self._sender = FeedSender(FEED_CONNECT_SECS)
            self._feed_endpoint = self._sender.endpoint
        return self._sender

    def __getstate__(self) -> dict[str, Any]:
        """What a copy carries: the feed's endpoint (bound now if it is not yet), never a
        socket; a copy of a copy feeds from the same endpoint."""
        if self._original:
            self._feed()
        state = {k: v for k, v in self.__dict__.items() if k not in ("_sender", "_inlet")}
        state["_original"] = False
        return state

    # -- the worker's side (copies) -------------------------------------------------------

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self._fields, self._stream)

    def open(self, conf: Any, context: TopologyContext) -> None:
        n = len(context.component_tasks())
        #: msg_id (or index when msg ids are off) -> values, of what this task may replay.
        self._values: dict[Any, list[Any]] = {
            i: self._items[i] for i in range(context.task_index, len(self._items), n)
        }
        self._queue = list(self._values)
        self._queue.reverse()
        self._inlet: Any = None
        if self._feed_endpoint is not None:
            from .feed import FeedReceiver

            self._inlet = FeedReceiver(self._feed_endpoint)
        self._reset_tracking()

    def next_tuple(self) -> None:
        if self._queue:
            key = self._queue.pop()
            msg_id = key if self._msg_ids else None
            self.emit(self._values[key], msg_id=msg_id, stream=self._stream)
            if not (self._replay and self._msg_ids):
                del self._values[key]
        elif self._inlet is not None:
            fed = self._inlet.recv_nowait()
            if fed is not None:
                msg_id, values = fed
                if self._replay and msg_id is not None:
                    self._values[msg_id] = values
                self.emit(values, msg_id=msg_id, stream=self._stream)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)
        self._values.pop(msg_id, None)

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        self.failures.append([msg_id, reason.kind])
        self.fail(msg_id)

    def fail(self, msg_id: Any) -> None:
        """Record the failure; replay it with ``replay_failed`` (subclasses that override
        ``fail_with_reason`` call this)."""
        self.failed.append(msg_id)
        if self._replay and msg_id in self._values:
            self._queue.append(msg_id)

    def close(self) -> None:
        """Close this object's end of the feed: the PULL socket of a task's copy, or the
        test's PUSH socket (LocalCluster does that when the topology is killed; a later
        submit of the same object binds a new one)."""
        for name in ("_inlet", "_sender"):
            end = getattr(self, name, None)
            if end is not None:
                end.close()
                setattr(self, name, None)
        if self._original:
            self._feed_endpoint = None

    def collect_results(self) -> dict[str, Any]:
        return self._tracking_results()


def feeders(topology: Topology) -> list[FeederSpout]:
    """The topology's FeederSpouts, each told its component id (for its errors): what a
    LocalCluster attaches to the topology, to close their feeds when it is killed."""
    found = []
    for component in topology.components.values():
        instance = component.instance
        # (or wrapped: in an AckTracker, or with Streams operators chained to it)
        instance = getattr(instance, "spout", instance)
        if isinstance(instance, FeederSpout):
            instance.component_id = component.id
            found.append(instance)
    return found


register_attacher(feeders)
