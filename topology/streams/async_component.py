"""``map_async``'s component: an :class:`~topology.async_bolt.AsyncBolt` whose call is the
stream's coroutine function, its results passed on through the operators fused after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from topology.async_bolt import AsyncBolt

from .components import Operators, StreamComponent

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.tuple import Tuple


class AsyncOperatorBolt(StreamComponent, AsyncBolt):
    """Up to ``capacity`` calls of ``fn(element)`` in flight per task; each result is one
    element downstream, anchored to its input, which is acked then (see docs/ASYNC.md)."""

    def __init__(self, operators: Operators) -> None:
        options = operators.head_step.options
        AsyncBolt.__init__(
            self,
            capacity=options["capacity"],
            ordered=options["ordered"],
            timeout_secs=options["timeout"],
        )
        self.operators = operators

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._out = self._anchored_after(context)
        self._decode = self._single_decoder()
        self._fn = self.operators.head_step.fn

    async def process_async(self, tup: Tuple) -> Any:
        """Await the stream's function on the input's element (on the task's loop)."""
        return await self._fn(self._decode(tup.values))

    def _emit_result(self, tup: Tuple, result: Any) -> BaseException | None:
        """On the executor thread: the result through the operators after this one."""
        self._current = tup
        try:
            self._out(result)
        except Exception as exc:  # an operator after the call raised: the input fails
            return exc
        finally:
            self._current = None
        self.ack(tup)
        return None
