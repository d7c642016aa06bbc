"""Serving the UI: :class:`UiServer` binds its socket at once (so a taken port is an
error where it is asked for, and port 0 is known before anything runs), then runs uvicorn
in a background thread (:meth:`UiServer.start`, for ``LocalCluster(ui_port=...)`` and
``sparkstorm local --ui``) or in the calling thread (:meth:`UiServer.serve`, for
``sparkstorm ui``).  It binds to ``ui.host`` — 127.0.0.1 unless told otherwise.

A client cannot hurt the process the UI shares with the cluster (docs/UI.md, Limits):

- **Connections are capped at accept.**  The server accepts connections itself
  (:class:`_Acceptor`) and admits at most the :class:`~topology.ui.connections.ConnectionGate`'s
  limit; one over it is answered 503 and closed before the next is accepted, so it holds a
  descriptor for microseconds.  uvicorn's own ``limit_concurrency`` would not do: it
  answers 503 only once a whole request has arrived, and holds the socket until then.
  Connections the server has not accepted wait in the kernel's queue (:data:`BACKLOG`),
  holding no descriptor of this process.
- **Idle connections are closed.**  uvicorn's ``timeout_keep_alive`` (``ui.idle.timeout.secs``)
  closes a connection silent between two requests; it is armed only after a response, so
  :class:`_GuardedH11` arms it on connect too: a connection that never sends a byte is
  closed as well.
- **A request must arrive in time.**  uvicorn has no deadline for a request's headers (a
  byte every few seconds would hold a connection for ever): :class:`_GuardedH11` closes a
  connection whose request is not whole (headers and body) ``ui.request.timeout.secs``
  after it opened or after its previous response.  Headers still incomplete past
  :data:`MAX_HEADER_BYTES` are answered 400 and the connection closed (uvicorn's
  ``h11_max_incomplete_event_size``).
- Event streams count against the cap but are never idle: once their request has
  arrived, neither timer runs while the response streams.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import time
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .app import create_app
from .auth import UiSettings
from .connections import (
    ConnectionGate,
    Ticket,
    connection_cap,
    descriptors_in_use,
    open_file_limit,
)
from .hub import Hub
from .source import ClusterView

log = logging.getLogger("sparkstorm.ui")

#: Seconds :meth:`UiServer.start` waits for the server to take requests, and
#: :meth:`UiServer.stop` for it to end.
START_TIMEOUT_SECS = 10.0
STOP_TIMEOUT_SECS = 10.0
#: Connections the kernel queues before the server accepts them (they hold no descriptor
#: of this process meanwhile).
BACKLOG = 128
#: Most bytes of a request's line and headers held while incomplete (h11 answers 400 then).
MAX_HEADER_BYTES = 16 * 1024
#: Connections accepted per wake-up of the event loop (then other work runs).
ACCEPT_BATCH = 64
#: Seconds accepting pauses when the system has no descriptor to give.
ACCEPT_RETRY_SECS = 0.5
#: What a connection over the cap reads before it is closed: the head, then the body.
BUSY_BODY = b"the UI has too many connections open: try again shortly\n"
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\n"
    b"retry-after: 5\r\n"
    b"connection: close\r\n\r\n%s" % (len(BUSY_BODY), BUSY_BODY)
)


class _GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with the idle timer armed from the first moment and a
    deadline for each request (see the module docstring); gives its gate ticket back
    when the connection ends."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: Any,
        app_state: dict[str, Any],
        ticket: Ticket,
        gate: ConnectionGate,
        request_timeout: float,
    ) -> None:
        super().__init__(config, server_state, app_state)
        self._ticket = ticket
        self._gate = gate
        self._request_timeout = request_timeout
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        # uvicorn arms its keep-alive timer only after a response: silence before the
        # first request is idleness too
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )
        self._arm()

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self._request_timeout, self._late)

    def timeout_keep_alive_handler(self) -> None:
        if not self.transport.is_closing():
            self._gate.timed_out += 1
        super().timeout_keep_alive_handler()

    def _late(self) -> None:
        """The request deadline: close unless a request arrived whole meanwhile."""
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self._gate.timed_out += 1
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request has the whole deadline again

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        try:
            super().connection_lost(exc)
        finally:
            self._ticket.release()


class _Acceptor:
    """Accepts the listening socket's connections on the server's event loop: each admitted
    by the gate is served by ``protocol(ticket)``, each refused is sent
    :data:`BUSY_RESPONSE` and closed at once."""

    def __init__(self, sock: socket.socket, gate: ConnectionGate, protocol: Any) -> None:
        self.sock = sock
        self.gate = gate
        self.protocol = protocol
        self.loop = asyncio.get_running_loop()
        self.listening = False
        self._retry: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self) -> None:
        self.sock.setblocking(False)
        self.loop.add_reader(self.sock.fileno(), self._accept)
        self.listening = True

    def stop(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
        if self.listening:
            self.loop.remove_reader(self.sock.fileno())
            self.listening = False

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:  # no descriptor left (EMFILE, ENFILE, ENOBUFS, ENOMEM)
                self._pause(exc)
                return
            ticket = self.gate.admit()
            if ticket is None:
                _refuse(conn)
                continue
            task = self.loop.create_task(self._serve(conn, ticket))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: socket.socket, ticket: Ticket) -> None:
        conn.setblocking(False)
        try:
            await self.loop.connect_accepted_socket(lambda: self.protocol(ticket), conn)
        except Exception:  # the peer left before the transport was made, or we stop
            conn.close()
            ticket.release()

    def _pause(self, exc: OSError) -> None:
        self.gate.accept_errors += 1
        if self.gate.accept_errors == 1:
            log.warning(
                "web UI: cannot accept a connection (%s); pausing %g s each time this happens",
                errno.errorcode.get(exc.errno or 0, exc),
                ACCEPT_RETRY_SECS,
            )
        self.stop()
        self._retry = self.loop.call_later(ACCEPT_RETRY_SECS, self.start)


def _refuse(conn: socket.socket) -> None:
    """Tell a connection over the cap that the UI is busy, and close it (never blocks)."""
    try:
        conn.setblocking(False)
        conn.send(BUSY_RESPONSE)
    except OSError:
        pass
    finally:
        conn.close()


class _Server(uvicorn.Server):
    """uvicorn's server, accepting through :class:`_Acceptor` (uvicorn itself listens on
    nothing), and ending the event streams first when it shuts down (an open stream would
    otherwise hold the shutdown for the whole graceful timeout)."""

    hub: Hub | None = None
    loop: asyncio.AbstractEventLoop | None = None
    gate: ConnectionGate | None = None
    request_timeout: float = 10.0
    acceptor: _Acceptor | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets=[])  # the lifespan; no listener of uvicorn's own
        assert self.gate is not None
        gate, config, state = self.gate, self.config, self.server_state
        app_state, timeout = self.lifespan.state, self.request_timeout

        def protocol(ticket: Ticket) -> _GuardedH11:
            return _GuardedH11(config, state, app_state, ticket, gate, timeout)

        for sock in sockets or []:
            self.acceptor = _Acceptor(sock, gate, protocol)
            self.acceptor.start()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.acceptor is not None:
            self.acceptor.stop()
        if self.hub is not None:
            self.hub.close()
        await super().shutdown(sockets)


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (IPv6 when ``host`` has a colon); OSError
    as the system gives it (a port in use, an address not of this host)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(BACKLOG)  # connections wait for the server from now on, never refused
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


class UiServer:
    """The UI of ``view`` on ``host:port`` (None: ``settings``' ``ui.host`` / ``ui.port``;
    port 0: any free one, :attr:`port` is the one bound).  :attr:`connections` is its
    gate: at most :func:`~topology.ui.connections.connection_cap` connections, sized now
    from ``settings.max_connections`` and this process's free descriptors."""

    def __init__(
        self,
        view: ClusterView,
        settings: UiSettings | None = None,
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        self.settings = settings or UiSettings()
        self.host = host if host is not None else self.settings.host
        self._socket = bind(self.host, self.settings.port if port is None else port)
        self.port: int = self._socket.getsockname()[1]
        limit = connection_cap(
            self.settings.max_connections, open_file_limit(), descriptors_in_use()
        )
        self.connections = ConnectionGate(limit)
        self.app = create_app(view, self.settings, hosts=[self.host], connections=self.connections)
        config = uvicorn.Config(
            self.app,
            http="h11",
            loop="asyncio",
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
            timeout_keep_alive=self.settings.idle_timeout,  # type: ignore[arg-type]
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        )
        self._server = _Server(config)
        self._server.hub = self.app.state.ui.hub
        self._server.gate = self.connections
        self._server.request_timeout = self.settings.request_timeout
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port/`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}/"

    def serve(self) -> None:
        """Serve in this thread until SIGINT / SIGTERM (in the main thread) or :meth:`stop`."""
        self._server.run(sockets=[self._socket])

    def start(self) -> UiServer:
        """Serve in a daemon thread; return once requests are taken (RuntimeError if it
        did not start within :data:`START_TIMEOUT_SECS`)."""
        self._thread = threading.Thread(
            target=self.serve, name=f"sparkstorm-ui-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the UI at {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """End the event streams and the server; safe to call twice and from any thread."""
        server = self._server
        server.should_exit = True
        if server.loop is not None and server.hub is not None and not server.loop.is_closed():
            try:
                server.loop.call_soon_threadsafe(server.hub.close)
            except RuntimeError:  # the loop closed meanwhile
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(STOP_TIMEOUT_SECS)
        self._socket.close()

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
