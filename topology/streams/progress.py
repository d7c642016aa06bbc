"""Event-time progress marks: how a window learns that an input task has nothing for it.

A window's watermark is the minimum over its input tasks (:mod:`topology.windows.watermark`),
so an input task that never sends a window task anything — its filtered branch passes
nothing, or its share of the keys never hashes there — would hold that task's windows back
for ever.  Every stream component whose results an event-time window reads therefore sends
a mark on :data:`~topology.constants.PROGRESS_STREAM` to every task of the window (an all
grouping) once per :data:`PROGRESS_SECS`, on its tick, saying whether it handled input of
its own since the last.  Marks travel behind the elements the task sent before them, so a
window task that gets a mark from an input task and no element from it since that task's
previous mark knows the input is running with nothing for it (it stops holding the
watermark back until it sends again) or stopped (it holds it, unless every input did:
the end of the input) — :class:`~topology.windows.watermark.LowWatermark`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topology.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from topology.constants import PROGRESS_FIELDS, PROGRESS_STREAM, TICK_STREAM
from topology.windows.watermark import ACTIVE_MARK, IDLE_MARK

from .components import FusedBolt, FusedValueBolt, KeyedStateBolt, RunningAggregateBolt

if TYPE_CHECKING:
    from topology.builder import BoltDeclarer
    from topology.tuple import Tuple

#: Seconds between a component's progress marks: how long an input task must have had
#: nothing for a window task before that task's watermark stops waiting for it.
PROGRESS_SECS = 1.0


class _BasicMarks:
    """For a :class:`~topology.components.BasicBolt` stream component: a tick is a mark,
    saying whether it handled input since the last."""

    _active = False

    def process(self, tup: Tuple) -> None:
        if tup.stream == TICK_STREAM:
            mark = ACTIVE_MARK if self._active else IDLE_MARK
            self._active = False
            self.emit(mark, None, PROGRESS_STREAM)  # type: ignore[attr-defined]
            return
        self._active = True
        super().process(tup)  # type: ignore[misc]


class MarkingFusedBolt(_BasicMarks, FusedBolt):
    """:class:`FusedBolt` that sends progress marks."""


class MarkingFusedValueBolt(_BasicMarks, FusedValueBolt):
    """:class:`FusedValueBolt` that sends progress marks."""


class MarkingRunningAggregateBolt(_BasicMarks, RunningAggregateBolt):
    """:class:`RunningAggregateBolt` that sends progress marks."""


class MarkingKeyedStateBolt(KeyedStateBolt):
    """:class:`KeyedStateBolt` that sends progress marks."""

    _active = False

    def execute(self, tup: Tuple) -> None:
        if tup.stream == TICK_STREAM:
            self.emit(ACTIVE_MARK if self._active else IDLE_MARK, None, PROGRESS_STREAM)
            self._active = False
            self.ack(tup)
            return
        self._active = True
        super().execute(tup)


MARKING: dict[type, type] = {
    FusedBolt: MarkingFusedBolt,
    FusedValueBolt: MarkingFusedValueBolt,
    RunningAggregateBolt: MarkingRunningAggregateBolt,
    KeyedStateBolt: MarkingKeyedStateBolt,
}


def marking(cls: type) -> type | None:
    """The variant of component class ``cls`` that sends marks (None: it cannot; a window
    component sends them from its own timer)."""
    return MARKING.get(cls)


def set_ticks(declarer: BoltDeclarer, marks: bool) -> None:
    """The ticks of the stream component ``declarer`` adds: those its marks are sent on,
    or none — a topology-wide ``topology.tick.tuple.freq.secs`` is for hand-written bolts;
    a stream component would take its ticks for elements (a window keeps its own timer).
    """
    declarer.add_configuration(TOPOLOGY_TICK_TUPLE_FREQ_SECS, PROGRESS_SECS if marks else None)


def progress_outputs(outputs: dict[str, Any]) -> None:
    """Declare the marks' stream among a component's ``outputs``."""
    outputs[PROGRESS_STREAM] = list(PROGRESS_FIELDS)
