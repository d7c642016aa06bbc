"""Asynchronous I/O in bolts (Flink's ``AsyncDataStream``): ``AsyncBolt``, ``AsyncMapBolt``.

A bolt that calls a remote service per tuple spends its time waiting; an
:class:`AsyncBolt` keeps up to ``capacity`` such calls in flight per task, as coroutines on
an asyncio loop in a thread of the task's own (:class:`~topology.async_calls.AsyncCalls`).
The contract, per input tuple (tick tuples excepted: :meth:`AsyncBolt.process_tick`):

* ``process_async(tup)`` runs on the loop thread; it must not call ``emit`` / ``ack`` /
  ``fail`` (the collector belongs to the executor thread) and should not block the loop.
* What it returns is emitted on the executor thread, each row anchored to the input, and
  then the input is acked — in input order (``ordered=True``) or as calls finish.  A list
  of values is one row; a list whose items are all lists (or tuples) is several rows (so
  a one-field row whose value is a list is written ``[[value]]``); None or ``[]``: nothing.
* A call that raises, or is not finished ``timeout_secs`` after its input arrived (topology
  time: a test with simulated time advances it), goes to the component's failure policy
  (``topology.errors.*``, docs/ERRORS.md): the call is made again later, up to ``retries``
  times, then the input goes to the dead-letter stream and is acked (or, with the ``fail``
  action, is failed; counted as ``failed_by["error"]``).  When it is given up on and
  ``error_stream`` is set, a tuple ``[error text, input values]`` also goes to that stream
  (declared for you; not anchored), and the error is not reported as the component's.
  Every failed call is counted in the task's user metrics ``async_errors`` /
  ``async_timeouts``.
* At ``capacity`` calls in flight the executor takes no more input for the task: what
  arrives waits in the worker's inbound queue, which holds back the spouts and the peers
  as any slow bolt does (docs/ARCHITECTURE.md) — nothing queues in the bolt.
* In a checkpointed topology a barrier reaches the task only once no call is in flight, no
  input waits for another attempt and every outcome was emitted: the outputs of the inputs
  before a barrier go before it.  A rollback cancels the calls in flight; their inputs are
  replayed.

The runtime drives the task through the ``async_*`` methods (executor thread only).  See
docs/ASYNC.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from .async_calls import AsyncCalls, AsyncCallTimeout, check_settings
from .components import Bolt, OutputFieldsDeclarer
from .constants import DEFAULT_STREAM

if TYPE_CHECKING:
    from .context import TopologyContext
    from .metrics import Counter
    from .tuple import Tuple

#: The fields of an :class:`AsyncBolt`'s error stream.
ERROR_FIELDS = ("error", "input")


class AsyncBolt(Bolt):
    """A bolt whose per-tuple work is a coroutine, ``capacity`` of them in flight per task.

    Settings are class attributes, or keyword arguments of the constructor (which win):
    ``capacity`` (calls in flight per task), ``ordered`` (emit in input order, else in
    completion order), ``timeout_secs`` (per call) and ``error_stream`` (a stream for
    ``[error, input values]`` of failed calls; None: none).  Results go to ``stream``.

    Args:
        capacity: calls in flight per task (default: the class attribute, 100).
        ordered: emit results in input order (default True), else as calls finish.
        timeout_secs: seconds a call may take before it counts as failed (default 5).
        error_stream: a stream for ``[error text, input values]`` of the inputs given up
            on (default None: none).

    Raises:
        ValueError: ``capacity`` is not an int >= 1 or ``timeout_secs`` not > 0.

    Example:
        >>> import asyncio
        >>> async def fetch_profile(user):  # stands for any asyncio client
        ...     return {"name": user.title()}
        >>> class Enrich(AsyncBolt):
        ...     outputs = {"default": ["user", "profile"]}
        ...     capacity = 100
        ...     async def process_async(self, tup):
        ...         profile = await fetch_profile(tup["user"])
        ...         return [tup["user"], profile]
        >>> bolt = Enrich(error_stream="errors", timeout_secs=2.0)
        >>> from topology.tuple import Tuple, TupleSource
        >>> tup = Tuple(["ada"], TupleSource("users", 1, "default", ("user",)))
        >>> asyncio.run(bolt.process_async(tup))
        ['ada', {'name': 'Ada'}]
        >>> Enrich(capacity=0)
        Traceback (most recent call last):
        ...
        ValueError: capacity must be an int >= 1, got 0
    """

    capacity: int = 100
    ordered: bool = True
    timeout_secs: float = 5.0
    error_stream: str | None = None
    #: The stream results are emitted on.
    stream: str = DEFAULT_STREAM

    _calls: AsyncCalls | None = None
    _now: float = 0.0
    #: id of an input in flight again -> the attempt its call is (the failure policy's).
    _attempts: dict[int, int] | None = None
    _errors: Counter | None = None
    _timeouts: Counter | None = None

    def __init__(
        self,
        *,
        capacity: int | None = None,
        ordered: bool | None = None,
        timeout_secs: float | None = None,
        error_stream: str | None = None,
    ) -> None:
        if capacity is not None:
            self.capacity = capacity
        if ordered is not None:
            self.ordered = bool(ordered)
        if timeout_secs is not None:
            self.timeout_secs = timeout_secs
        if error_stream is not None:
            self.error_stream = error_stream
        check_settings(self.capacity, self.timeout_secs)

    # -- what authors write -----------------------------------------------------------

    async def process_async(self, tup: Tuple) -> Any:
        """The call for one input, run on the task's asyncio loop (not the executor's thread:
        do not emit, ack or fail here).

        Args:
            tup: the input tuple.

        Returns:
            A row of values, a list of rows, or None (nothing to emit); see the module
            docstring.  Each row is emitted anchored to the input, then the input is acked.

        Raises:
            NotImplementedError: the subclass does not implement it.  Any exception it
                raises fails the call: the failure policy retries it or gives up.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement process_async()")

    def process_tick(self, tup: Tuple) -> None:
        """Handle a tick tuple, on the executor thread (no call is made for it); no-op by default.

        Args:
            tup: the tick tuple.
        """

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the ``outputs`` streams, and ``error_stream`` with :data:`ERROR_FIELDS`
        unless ``outputs`` declares it.

        Args:
            declarer: where the streams are declared.
        """
        super().declare_output_fields(declarer)
        if self.error_stream is not None and self.error_stream not in declarer.streams:
            declarer.declare(ERROR_FIELDS, self.error_stream)

    # -- the runtime's side (executor thread) -----------------------------------------

    def execute(self, tup: Tuple) -> None:
        """Start ``process_async(tup)`` (a tick tuple goes to :meth:`process_tick`).  The
        runtime calls it only while :meth:`async_room` is above 0.

        Args:
            tup: the input tuple.
        """
        if tup.is_tick():
            self.process_tick(tup)
            return
        calls = self._calls
        if calls is None:
            calls = self._calls = AsyncCalls(
                type(self).__name__,
                capacity=self.capacity,
                ordered=self.ordered,
                timeout_secs=self.timeout_secs,
            )
        calls.submit(tup, self.process_async(tup), self._now)

    def async_prepare(self, context: TopologyContext) -> None:
        """After ``prepare``: register the task's ``async_errors`` / ``async_timeouts``
        counters and ``async_in_flight`` gauge (called by the runtime).

        Args:
            context: the task's context.
        """
        self._errors = context.register_counter("async_errors", "async calls that raised")
        self._timeouts = context.register_counter("async_timeouts", "async calls timed out")
        context.register_gauge("async_in_flight", self.async_in_flight, "async calls in flight")

    def async_room(self) -> int:
        """How many more inputs the task may take now (called by the runtime).

        Returns:
            ``capacity`` minus the calls in flight.
        """
        calls = self._calls
        return self.capacity if calls is None else calls.room()

    def async_in_flight(self) -> int:
        """How many calls are in flight (called by the runtime, and the gauge's reading).

        Returns:
            Calls started and not yet emitted, acked or failed.
        """
        calls = self._calls
        return 0 if calls is None else calls.in_flight

    def async_drain(self, now: float) -> int:
        """Emit and ack (or fail) every outcome that may be handled now, in order (called by
        the runtime).

        Args:
            now: topology time; later calls time out counting from it.

        Returns:
            How many outcomes were handled.
        """
        self._now = now
        calls = self._calls
        if calls is None or not calls.in_flight:
            return 0
        outcomes = calls.ready(now)
        attempts = self._attempts
        for tup, result, error in outcomes:
            attempt = attempts.pop(id(tup), 1) if attempts else 1
            try:
                if error is None:
                    error = self._emit_result(tup, result)
                if error is not None:
                    self._failed(tup, error, attempt)
            except Exception as exc:  # failing must never take the worker down
                self.report_error(exc)
        return len(outcomes)

    def async_retry(self, tup: Tuple, attempt: int) -> None:
        """Start the call for an input again (the runtime's failure policy; only while
        :meth:`async_room` is above 0).

        Args:
            tup: the input whose call failed.
            attempt: which attempt this one is (2 for the first retry).
        """
        if self._attempts is None:
            self._attempts = {}
        self._attempts[id(tup)] = attempt
        self.execute(tup)

    def async_drop(self) -> int:
        """A rollback: cancel every call in flight, never to emit, ack or fail it (called by
        the runtime).

        Returns:
            How many calls were cancelled.
        """
        if self._attempts:
            self._attempts.clear()
        return 0 if self._calls is None else self._calls.drop()

    def async_close(self) -> None:
        """After ``cleanup``: cancel what is in flight and stop the loop thread."""
        calls, self._calls = self._calls, None
        if calls is not None:
            calls.close()

    def _emit_result(self, tup: Tuple, result: Any) -> BaseException | None:
        try:
            for row in rows_of(result):
                self.emit(row, tup, self.stream)
        except Exception as exc:  # not rows, or rows the stream refuses (EmitError)
            return exc
        self.ack(tup)
        return None

    def _failed(self, tup: Tuple, error: BaseException, attempt: int) -> None:
        counter = self._timeouts if isinstance(error, AsyncCallTimeout) else self._errors
        if counter is not None:
            counter.inc()
        self._collector.input_failed(tup, error, attempt)  # the policy: again later...

    def async_gave_up(self, tup: Tuple, error: BaseException) -> bool:
        """The failure policy gave up on an input: emit ``[error text, input values]`` on
        ``error_stream`` when there is one (called by the runtime).

        Args:
            tup: the input given up on.
            error: the last call's error.

        Returns:
            True when the error went to ``error_stream`` (it is then not reported as the
            component's error), False when there is no error stream.
        """
        if self.error_stream is None:
            return False
        text = f"{type(error).__name__}: {error}"
        self.emit([text, list(tup.values)], None, self.error_stream)
        return True


class AsyncMapBolt(AsyncBolt):
    """An :class:`AsyncBolt` made of a function: ``fn(tup)`` returns an awaitable of a
    row, rows or None, emitted on ``fields`` (the default stream).

    ``fn`` travels with the topology (cloudpickle), so a lambda or a closure works.

    Args:
        fn: ``fn(tup)`` returns an awaitable of a row, a list of rows, or None.
        fields: the fields of the rows, on the default stream.
        capacity: as for :class:`AsyncBolt`.
        ordered: as for :class:`AsyncBolt`.
        timeout_secs: as for :class:`AsyncBolt`.
        error_stream: as for :class:`AsyncBolt`.

    Raises:
        TypeError: ``fn`` is not callable.
        ValueError: ``capacity`` or ``timeout_secs`` is out of range.

    Example:
        >>> import asyncio
        >>> async def lookup(tup):
        ...     return [tup["user"], len(tup["user"])]
        >>> bolt = AsyncMapBolt(lookup, ["user", "length"], capacity=50)
        >>> from topology.tuple import Tuple, TupleSource
        >>> tup = Tuple(["ada"], TupleSource("users", 1, "default", ("user",)))
        >>> asyncio.run(bolt.process_async(tup))
        ['ada', 3]
        >>> AsyncMapBolt("lookup", ["user"])
        Traceback (most recent call last):
        ...
        TypeError: AsyncMapBolt needs a function returning an awaitable, got 'lookup'
    """

    def __init__(
        self,
        fn: Callable[[Tuple], Awaitable[Any]],
        fields: Sequence[str],
        *,
        capacity: int | None = None,
        ordered: bool | None = None,
        timeout_secs: float | None = None,
        error_stream: str | None = None,
    ) -> None:
        super().__init__(
            capacity=capacity, ordered=ordered, timeout_secs=timeout_secs, error_stream=error_stream
        )
        if not callable(fn):
            raise TypeError(f"AsyncMapBolt needs a function returning an awaitable, got {fn!r}")
        self.fn = fn
        self.fields = list(fields)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare ``fields`` on the default stream (and the error stream, when set).

        Args:
            declarer: where the streams are declared.
        """
        declarer.declare(self.fields, self.stream)
        super().declare_output_fields(declarer)

    async def process_async(self, tup: Tuple) -> Any:
        """Await ``fn(tup)``.

        Args:
            tup: the input tuple.

        Returns:
            What ``fn(tup)``'s awaitable gives: a row, a list of rows, or None.
        """
        return await self.fn(tup)


def rows_of(result: Any) -> list[Any]:
    """The rows a ``process_async`` result stands for: None -> none; a list (or tuple)
    whose items are all lists or tuples -> those rows; any other list or tuple -> itself,
    one row.  Raises ``TypeError`` for anything else."""
    if result is None:
        return []
    if not isinstance(result, list | tuple):
        raise TypeError(
            f"process_async returned a {type(result).__name__}; return a list of values, "
            "a list of rows, or None"
        )
    if result and all(isinstance(row, list | tuple) for row in result):
        return list(result)
    if not result:
        return []
    return [result]
