"""Reserved component and stream names, every one of them here.

Each name is defined once: the acker's own (its component and streams) in
:mod:`acker.protocol`, the lowest layer that needs them, re-exported here; the rest here,
read by the layers above (the checkpoint protocol in :mod:`topology.state.checkpoint`
names its control streams from this module).
"""

from acker.protocol import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, ACK_STREAMS, ACKER_COMPONENT

#: Component and stream ids starting with this prefix are reserved for sparkstorm.
RESERVED_PREFIX = "__"

DEFAULT_STREAM = "default"
#: The source of tick tuples and of a worker's own reports (errors, drops).
SYSTEM_COMPONENT = "__system"
SYSTEM_TASK_ID = -1
TICK_STREAM = "__tick"
#: The component under which a worker's own death and relaunches are recorded as errors.
WORKER_COMPONENT = "__worker"
#: The component under which a topology driver's troubles are recorded as errors.
DRIVER_COMPONENT = "__driver"
#: The bolt the testing kit adds to capture every stream (``topology.testing.with_capture``).
CAPTURE_COMPONENT = "__capture"

#: Event-time progress marks: a stream component feeding an event-time window sends one to
#: every task of that window now and then (``topology.streams.progress``); a window task
#: that got a mark from an input task and no element from it since that task's previous
#: mark holds its watermark back for it no longer (docs/STREAMS.md, "Event time").
PROGRESS_STREAM = "__progress"
#: A mark's one field: 1 if its sender handled input since its previous mark, else 0.
PROGRESS_FIELDS = ("active",)

#: Every user component's dead-letter stream, declared for it: the inputs it gave up on
#: (after its failure policy's retries), each with the error.  Subscribe to it like any
#: stream (``shuffle_grouping("split", DEAD_LETTER_STREAM)``, or ``dead_letters()`` for
#: every component's); see docs/ERRORS.md.
DEAD_LETTER_STREAM = "__dead_letter"
#: Its fields: the component and task that gave up; where the input came from (its source
#: component and stream; a source connector's undecodable record: its partition, and
#: stream ""); the input's values (a record: ``[position, raw text]``); the error's one-line
#: text (``"ValueError: ..."``) and traceback; the attempts made; the time (Unix seconds).
DEAD_LETTER_FIELDS = (
    "component",
    "task",
    "source",
    "stream",
    "values",
    "error",
    "traceback",
    "attempts",
    "time",
)

#: The system component of the checkpoint coordinator (one task, in checkpointed topologies).
COORDINATOR_COMPONENT = "__checkpoint"
#: Coordinator -> spout task: ``[epoch, k]`` take checkpoint k.
CHECKPOINT_BEGIN = "__ckpt_begin"
#: Coordinator -> spout task and stateful bolt task:
#: ``[epoch, k]`` checkpoint k is complete and durable.
CHECKPOINT_COMMIT = "__ckpt_commit"
#: Coordinator -> worker: ``[epoch, k]`` drop what is in flight, restore checkpoint k, pause.
CHECKPOINT_ROLLBACK = "__ckpt_rollback"
#: Coordinator -> worker: ``[epoch]`` every worker restored: go on.
CHECKPOINT_RESUME = "__ckpt_resume"
#: Worker -> coordinator: ``[epoch, k, task, ok, alignment_us, bytes]`` the task stored (ok)
#: or declined k, after holding inputs back ``alignment_us`` aligning, writing ``bytes``.
CHECKPOINT_DONE = "__ckpt_done"
#: Worker -> coordinator, repeated while paused: ``[worker, epoch]`` (epoch 0: just started).
CHECKPOINT_STATUS = "__ckpt_status"
#: Worker -> coordinator: ``[worker, epoch]`` a tuple failed: replay from the last checkpoint.
CHECKPOINT_FAILED = "__ckpt_failed"

__all__ = [
    "ACKER_COMPONENT",
    "ACK_ACK",
    "ACK_FAIL",
    "ACK_INIT",
    "ACK_RESET",
    "ACK_STREAMS",
    "CHECKPOINT_BEGIN",
    "CHECKPOINT_COMMIT",
    "CHECKPOINT_DONE",
    "CHECKPOINT_FAILED",
    "CHECKPOINT_RESUME",
    "CHECKPOINT_ROLLBACK",
    "CHECKPOINT_STATUS",
    "CAPTURE_COMPONENT",
    "COORDINATOR_COMPONENT",
    "DEAD_LETTER_FIELDS",
    "DEAD_LETTER_STREAM",
    "DRIVER_COMPONENT",
    "DEFAULT_STREAM",
    "PROGRESS_FIELDS",
    "PROGRESS_STREAM",
    "RESERVED_PREFIX",
    "SYSTEM_COMPONENT",
    "SYSTEM_TASK_ID",
    "TICK_STREAM",
    "WORKER_COMPONENT",
]
