"""Serving the UI: :class:`UiServer` binds its socket at once (so a taken port is an
error where it is asked for, and port 0 is known before anything runs), then runs uvicorn
in a background thread (:meth:`UiServer.start`, for ``LocalCluster(ui_port=...)`` and
``sparkstorm local --ui``) or in the calling thread (:meth:`UiServer.serve`, for
``sparkstorm ui``).  It binds to ``ui.host`` — 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn

from .app import create_app
from .auth import UiSettings
from .hub import Hub
from .source import ClusterView

#: Seconds :meth:`UiServer.start` waits for the server to take requests, and
#: :meth:`UiServer.stop` for it to end.
START_TIMEOUT_SECS = 10.0
STOP_TIMEOUT_SECS = 10.0
#: Connections the listening socket queues before the server takes them.
BACKLOG = 128


class _Server(uvicorn.Server):
    """uvicorn's server, ending the event streams first when it shuts down (an open
    stream would otherwise hold the shutdown for the whole graceful timeout)."""

    hub: Hub | None = None
    loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
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
    port 0: any free one, :attr:`port` is the one bound)."""

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
        self.app = create_app(view, self.settings, hosts=[self.host])
        config = uvicorn.Config(
            self.app,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        self._server = _Server(config)
        self._server.hub = self.app.state.ui.hub
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
