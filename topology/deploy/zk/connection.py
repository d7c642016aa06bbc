"""The kazoo client sparkstorm's ZooKeeper state runs on: credentials, connecting, lost
sessions, and writing JSON nodes (no record is read here: :mod:`.state` reads them, checked).

Every znode holds JSON (readable with zkCli) except the pickled topology code, which is
stored as raw bytes in chunks.  A write larger than ZooKeeper accepts is refused before it
is sent (:class:`ZnodeTooLarge`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    AuthFailedError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionClosedRequireSaslError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import make_digest_acl

from topology import config as cfg
from topology.errors import SparkstormError, Unavailable

from ..limits import node_size_problem
from ..security import zookeeper_is_local
from . import local_identity
from .ownership import NodeNotOwned, Ownership
from .paths import ZkPaths


class ZooKeeperUnavailable(Unavailable):
    """ZooKeeper could not be reached in time; the message names the servers tried."""


class ZooKeeperNotAuthorized(SparkstormError):
    """ZooKeeper refused this client: it lacks (or has other) credentials."""


def _auth(conf: dict[str, Any]) -> tuple[list[tuple[str, str]] | None, list[Any] | None]:
    """kazoo's ``auth_data`` and ``default_acl`` for the configured credentials: every node
    created gives this identity all rights, and nobody else any."""
    scheme, payload = conf.get(cfg.ZK_AUTH_SCHEME), conf.get(cfg.ZK_AUTH_PAYLOAD)
    if not scheme:
        return None, None
    if not payload:
        raise SparkstormError(
            f"{cfg.ZK_AUTH_SCHEME} is {scheme!r} but {cfg.ZK_AUTH_PAYLOAD} is not set"
        )
    user, _, password = str(payload).partition(":")
    return [(scheme, payload)], [make_digest_acl(user, password, all=True)]


def connect_string(conf: dict[str, Any]) -> str:
    """``host:port,host:port`` from ``storm.zookeeper.servers`` / ``storm.zookeeper.port``."""
    port = conf[cfg.ZK_PORT]
    return ",".join(
        server if ":" in server else f"{server}:{port}" for server in conf[cfg.ZK_SERVERS]
    )


class ZnodeTooLarge(SparkstormError):
    """A write over :data:`~topology.deploy.limits.ZNODE_MAX_BYTES`, refused before it is
    sent (ZooKeeper would drop the connection instead of answering)."""


def _dump(data: Any) -> bytes:
    raw = json.dumps(data, sort_keys=True, default=str).encode()
    problem = node_size_problem("a ZooKeeper write", len(raw))
    if problem is not None:
        raise ZnodeTooLarge(problem)
    return raw


def _load(raw: bytes) -> Any:
    return json.loads(raw.decode()) if raw else None


class _BelowError(logging.Filter):
    """Lets only errors through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """Hold back ``logger``'s warnings (kazoo's connection loop) for the block."""
    quiet = _BelowError()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


class ZkConnection:
    """One kazoo client, connected with the configured credentials.

    ``connect`` fails with :class:`ZooKeeperUnavailable` within
    ``storm.zookeeper.connection.timeout.secs`` instead of hanging.  The client outlives
    its sessions: when a session expires (``lost`` is set) kazoo keeps reconnecting, and
    once a new session is up every callback given to :meth:`on_new_session` runs (in a
    thread of its own) to re-create ephemeral nodes.  Watches of kazoo's recipes
    (DataWatch, ChildrenWatch) re-register by themselves.
    """

    def __init__(self, conf: dict[str, Any]) -> None:
        self.hosts = connect_string(conf)
        self.paths = ZkPaths(conf[cfg.ZK_ROOT])
        self.timeout = float(conf[cfg.ZK_CONNECTION_TIMEOUT_SECS])
        auth_data, default_acl = _auth(conf)
        self.authenticated = auth_data is not None
        #: The ACL of every node this client creates when this user has a local identity
        #: (loopback ZooKeeper, no credentials): its identity's alone (:mod:`.ownership`).
        self.owner_acl: list[Any] | None = None
        if auth_data is None and zookeeper_is_local(conf):
            identity = local_identity.load_or_create()
            if identity is not None:
                user, _, password = identity.partition(":")
                auth_data = [("digest", identity)]
                self.owner_acl = default_acl = [make_digest_acl(user, password, all=True)]
        self.client = KazooClient(
            hosts=self.hosts,
            timeout=float(conf[cfg.ZK_SESSION_TIMEOUT_SECS]),
            connection_retry={"max_tries": -1, "delay": 0.2, "max_delay": 2.0},
            auth_data=auth_data,
            default_acl=default_acl,
        )
        #: Checks and claims of nodes for the local identity (None without one).
        self.ownership: Ownership | None = None
        if self.owner_acl is not None:
            where = str(local_identity.identity_path())
            self.ownership = Ownership(self.client, self.owner_acl, self.paths, where)
        self.lost = threading.Event()
        self.sessions_lost = 0
        self._new_session_callbacks: list[Callable[[], None]] = []
        self._connection_callbacks: list[Callable[[bool], None]] = []
        self._closing = False
        self.client.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self.sessions_lost += 1
            self.lost.set()
        elif state == KazooState.CONNECTED and self.lost.is_set():
            for callback in list(self._new_session_callbacks):
                threading.Thread(target=callback, name="zk-new-session", daemon=True).start()
        if not self._closing:  # closing: the session ends on purpose
            for on_change in list(self._connection_callbacks):
                on_change(state == KazooState.CONNECTED)

    def on_new_session(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` (in its own thread) each time a session replaces a lost one."""
        self._new_session_callbacks.append(callback)

    def on_connection_change(self, callback: Callable[[bool], None]) -> None:
        """Call ``callback(False)`` each time the connection to ZooKeeper is lost (or its
        session with it) and ``callback(True)`` each time one is back, from kazoo's own
        thread: it must return at once (print a line, set an event)."""
        self._connection_callbacks.append(callback)

    @contextmanager
    def reachable(self) -> Iterator[None]:
        """Turn the errors of a ZooKeeper that stopped answering inside the block (kazoo's
        ``ConnectionLoss``, ``SessionExpiredError``, time-outs) into one
        :class:`ZooKeeperUnavailable` naming the servers; others pass unchanged.  While
        the client is reconnecting it is raised at once, before the block runs (kazoo
        would hold the block's calls until a session is back)."""
        if not self.connected:
            raise ZooKeeperUnavailable(
                f"ZooKeeper at {self.hosts} is not answering (reconnecting); "
                "the topologies keep running: try again once it is back"
            )
        try:
            yield
        except ZooKeeperUnavailable:
            raise
        except Exception as exc:
            if not self.unreachable(exc):
                raise
            raise ZooKeeperUnavailable(
                f"ZooKeeper at {self.hosts} is not answering ({type(exc).__name__}); "
                "the topologies keep running: try again once it is back"
            ) from None

    @staticmethod
    def unreachable(exc: BaseException) -> bool:
        """Whether ``exc`` means ZooKeeper could not be reached (rather than a bug)."""
        return isinstance(
            exc, (ConnectionLoss, SessionExpiredError, KazooTimeoutError, ZooKeeperUnavailable)
        )

    @property
    def connected(self) -> bool:
        return bool(self.client.connected)

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Wait until the client has a live session; True when it has."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.client.connected:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def connect(self) -> Self:
        """Start the session within the connection timeout, then check access; fails with
        one :class:`ZooKeeperUnavailable` or :class:`ZooKeeperNotAuthorized` saying why.
        kazoo's own warnings while the first session starts ("Connection dropped",
        "Failed connecting...") are held back: the error, or the session, says it all."""
        self._closing = False
        try:
            with _quiet(self.client.logger):
                try:
                    self.client.start(timeout=self.timeout)
                except KazooTimeoutError:
                    self.client.stop()
                    self.client.close()
                    raise
        except KazooTimeoutError:
            raise ZooKeeperUnavailable(
                f"cannot reach ZooKeeper at {self.hosts} within {self.timeout:g}s "
                "(check storm.zookeeper.servers / storm.zookeeper.port, or start one with "
                "`sparkstorm dev-zookeeper`)"
            ) from None
        try:
            if self.ownership is not None:
                self.ownership.claim_skeleton()
            for path in (self.paths.storms, self.paths.assignments):
                self.client.ensure_path(path)
            self.client.get_children(self.paths.storms)
        except (NoAuthError, AuthFailedError, SessionClosedRequireSaslError):
            self.close()
            how = "with the configured credentials" if self.authenticated else "without credentials"
            raise ZooKeeperNotAuthorized(
                f"not authorized: ZooKeeper at {self.hosts} refused access to "
                f"{self.paths.root} {how}; set {cfg.ZK_AUTH_SCHEME}=digest and "
                f"{cfg.ZK_AUTH_PAYLOAD}=user:password to the cluster's credentials"
            ) from None
        except NodeNotOwned as exc:
            self.close()
            raise ZooKeeperNotAuthorized(f"not authorized: {exc}") from None
        return self

    def close(self) -> None:
        self._closing = True
        try:
            self.client.stop()
        finally:
            self.client.close()

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- JSON nodes ------------------------------------------------------------------------

    @staticmethod
    def decode(raw: bytes) -> Any:
        """A node's JSON content (None when empty); ValueError when it is not JSON."""
        return _load(raw)

    def _set(
        self,
        path: str,
        data: Any,
        makepath: bool = True,
        timeout: float | None = None,
    ) -> None:
        """Write ``data`` at ``path``, creating the node when missing, replacing it when it
        is not this identity's alone (:meth:`.ownership.Ownership.replace`); each ZooKeeper
        call waits at most ``timeout`` seconds (None: as long as it takes)."""
        raw = _dump(data)
        client = self.client
        owner = self.ownership
        try:
            stat = client.set_async(path, raw).get(timeout=timeout)
        except NoNodeError:
            try:
                client.create_async(path, raw, makepath=makepath).get(timeout=timeout)
            except NodeExistsError:
                self._set(path, data, makepath, timeout)
            return
        except NoAuthError:
            if owner is None:
                raise
            stat = None  # someone else's: replaced below
        if owner is not None and (stat is None or owner.problem(path, stat, timeout) is not None):
            owner.replace(path, raw, timeout)

    def _delete_tree(self, path: str) -> None:
        for _ in range(5):  # children may appear while deleting (a worker's last beat)
            try:
                self.client.delete(path, recursive=True)
                return
            except NoNodeError:
                return
            except NotEmptyError:
                time.sleep(0.05)
