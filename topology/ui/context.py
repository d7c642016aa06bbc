"""What every request handler shares: :class:`UiContext` (the view, the hub, the guard,
the settings, the lanes) and the calls into the cluster, made off the event loop.

Every call a request makes into the cluster goes through a :class:`Lane`: a bounded number
of threads of its own (never anyio's default pool, which the poller and starlette share),
a :class:`anyio.CapacityLimiter` of as many slots, and a timeout.  A call that finds every
slot taken is refused at once with 503 ("busy") rather than queued; a call that does not
return in time answers 503 and keeps its slot until its thread returns, so abandoned calls
stay bounded too.  Reads and actions (whose kill / rebalance waits may last minutes) have
lanes of their own.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from topology.errors import SparkstormError, Unavailable
from topology.names import quoted

from .auth import Guard, UiSettings
from .connections import ConnectionGate
from .hub import Hub, Snapshot, encode
from .params import BadRequest, query_params
from .source import ClusterView

T = TypeVar("T")

#: Seconds a request waits for the poller's first snapshot before answering 503.
FIRST_SNAPSHOT_SECS = 15.0
#: Seconds a worker has to answer a request made for one page.
REQUEST_TIMEOUT_SECS = 5.0
#: Seconds a read's call into the cluster may take (a worker request's own timeout, plus
#: the ZooKeeper reads around it) before the request answers 503.
READ_CALL_SECS = 2 * REQUEST_TIMEOUT_SECS
#: Seconds an action may take beyond the wait it was given (kill, rebalance).
ACTION_CALL_SECS = 60.0
#: Cluster calls of requests under way at once: reads, and actions.
READ_SLOTS = 16
ACTION_SLOTS = 4
#: Largest request body read (a POST's JSON parameters).
MAX_BODY_BYTES = 64 * 1024


class Lane:
    """At most ``slots`` blocking calls at once on threads of their own, each answered
    within ``timeout`` seconds (see the module docstring).  Use from the event loop only."""

    def __init__(self, name: str, slots: int, timeout: float) -> None:
        self.name = name
        self.slots = slots
        self.timeout = timeout
        self._executor = ThreadPoolExecutor(slots, thread_name_prefix=f"sparkstorm-ui-{name}")
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def busy(self) -> int:
        """Calls under way now (an abandoned call counts until its thread returns)."""
        return int(self._limiter.borrowed_tokens) if self._limiter is not None else 0

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """``fn(*args)`` on a thread of this lane.  :class:`BadRequest` 503 at once when
        every slot is taken, and 503 when it did not return within ``timeout`` (default:
        the lane's) seconds; ``fn``'s own exception otherwise."""
        if self._limiter is None:  # made on the loop that uses it
            self._limiter = anyio.CapacityLimiter(self.slots)
        limiter, token = self._limiter, object()
        try:
            limiter.acquire_on_behalf_of_nowait(token)
        except anyio.WouldBlock:
            raise BadRequest(
                f"the UI is busy: {self.slots} {self.name} calls to the cluster are under way; "
                "try again shortly",
                None,
                503,
            ) from None
        try:
            future = asyncio.get_running_loop().run_in_executor(
                self._executor, functools.partial(fn, *args)
            )
        except BaseException:
            limiter.release_on_behalf_of(token)
            raise

        def done(finished: asyncio.Future[T]) -> None:
            limiter.release_on_behalf_of(token)
            if not finished.cancelled():
                finished.exception()  # retrieved: an abandoned call's error is not logged

        future.add_done_callback(done)
        limit = self.timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(asyncio.shield(future), limit)
        except TimeoutError:
            raise BadRequest(f"the cluster did not answer within {limit:g} s", None, 503) from None

    def close(self) -> None:
        """Stop taking calls; calls under way end on their own (threads are not joined)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


class SharedCalls:
    """Results shared for ``ttl`` seconds: every request for one key within that time (or
    while the first is under way) gets the first one's result, so N open pages asking for
    the same thing cost the cluster what one does.  A failure is not kept.  Use from the
    event loop only."""

    def __init__(self, ttl: float, max_keys: int = 256) -> None:
        self.ttl = ttl
        self.max_keys = max_keys
        #: Calls made (not shared): what a test counts.
        self.calls = 0
        self._entries: dict[Any, tuple[float, asyncio.Task[Any]]] = {}

    async def get(self, key: Any, make: Callable[[], Awaitable[T]]) -> T:
        """``make()``'s result for ``key``: the shared one while fresh, else a new one."""
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is None or (entry[1].done() and now - entry[0] > self.ttl):
            for old in [k for k, (at, t) in self._entries.items() if now - at > self.ttl]:
                if self._entries[old][1].done():
                    del self._entries[old]
            if len(self._entries) >= self.max_keys:
                return await make()
            self.calls += 1
            entry = self._entries[key] = (now, asyncio.ensure_future(make()))
        task = entry[1]
        try:
            return cast(T, await asyncio.shield(task))
        except Exception:
            if self._entries.get(key) is entry:
                del self._entries[key]
            raise


@dataclass(frozen=True)
class UiContext:
    """The state of one server (``app.state.ui``)."""

    view: ClusterView
    hub: Hub
    guard: Guard
    settings: UiSettings
    reads: Lane
    actions: Lane
    #: Reports of a topology over a window, shared for one publish interval.
    reports: SharedCalls
    #: The server's client connections: how many, how many refused or timed out.
    connections: ConnectionGate


def context(request: Request) -> UiContext:
    ui: UiContext = request.app.state.ui
    return ui


class JSON(Response):
    """A compact JSON response (:func:`topology.ui.hub.encode`); a ``str`` is sent as it
    is (already encoded)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return (content if isinstance(content, str) else encode(content)).encode()


def error_response(exc: BadRequest) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def latest(ctx: UiContext) -> Snapshot:
    """The poller's latest snapshot (503 when there is none after
    :data:`FIRST_SNAPSHOT_SECS`)."""
    snapshot = await ctx.hub.current(FIRST_SNAPSHOT_SECS)
    if snapshot is None:
        raise BadRequest("no snapshot of the cluster yet: try again", None, 503)
    return snapshot


async def known(ctx: UiContext, name: str) -> None:
    """Return if a topology ``name`` runs, else 404 naming the parameter ``name`` (503
    when the cluster is busy or does not answer in time: :class:`Lane`)."""
    names = await call(ctx.reads, 503, ctx.view.topology_names)
    if name not in names:
        running = ", ".join(quoted(n) for n in names[:20]) or "none"
        raise BadRequest(f"no topology named {quoted(name)} (running: {running})", "name", 404)


async def call(
    lane: Lane, status: int, fn: Callable[..., T], *args: Any, timeout: float | None = None
) -> T:
    """``fn(*args)`` in ``lane`` (503 when busy or late: :meth:`Lane.run`); a
    :class:`SparkstormError` (the cluster refused, or a worker did not answer in time)
    becomes ``status`` with its message, an :class:`~topology.errors.Unavailable` one (the
    cluster's store, ZooKeeper, is not answering) 503."""
    try:
        return await lane.run(fn, *args, timeout=timeout)
    except Unavailable as exc:
        raise BadRequest(str(exc), None, 503) from None
    except SparkstormError as exc:
        raise BadRequest(str(exc), None, status) from None


async def body_params(request: Request, allowed: Iterable[str]) -> dict[str, Any]:
    """A POST's parameters: its query string, overridden by a JSON object body (an empty
    body is none); a parameter not in ``allowed`` is refused, as in a query string.  A
    body must be sent as ``Content-Type: application/json`` (415 otherwise) and be a JSON
    object (400 naming ``body`` otherwise, however it fails to decode — too deep too)."""
    allowed = tuple(allowed)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BadRequest(f"request body over {MAX_BODY_BYTES:,} bytes", "body", 413)
        chunks.append(chunk)
    raw = b"".join(chunks).strip()
    params: dict[str, Any] = query_params(request.query_params.multi_items(), allowed)
    if not raw:
        return params
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise BadRequest(
            "body: send it as Content-Type: application/json (a JSON object)", "body", 415
        )
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadRequest("body: expected a JSON object", "body") from None
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object", "body")
    query_params(((str(k), "") for k in body), allowed)  # unknown keys
    return {**params, **body}
