"""A ZooKeeper identity of this user, for a loopback ZooKeeper without credentials.

Without ``storm.zookeeper.auth.*`` every node is open to whoever reaches the server; on
loopback that is every local user.  So that nobody but the user who submitted a topology
can change what it runs, a client of such a ZooKeeper authenticates with a digest identity
of its user, kept in ``zookeeper-identity`` (mode 0600) under ``$SPARKSTORM_STATE_DIR``
(default ``$XDG_STATE_HOME/sparkstorm``, i.e. ``~/.local/state/sparkstorm``) and created on
first use.  Every node such a client creates is that identity's alone, and the nimbus,
drivers and workers of the same user use a record, and run a topology, only when nobody
else could have written it (:mod:`.ownership`).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import stat
from pathlib import Path

STATE_DIR_ENV = "SPARKSTORM_STATE_DIR"
IDENTITY_FILE = "zookeeper-identity"
_IDENTITY = re.compile(r"sparkstorm-[0-9]{1,10}:[A-Za-z0-9_-]{32,128}")
_log = logging.getLogger(__name__)
_warned: set[str] = set()


def identity_path() -> Path:
    """Where this user's identity is kept."""
    base = os.environ.get(STATE_DIR_ENV)
    if not base:
        xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(
            os.path.expanduser("~"), ".local", "state"
        )
        base = os.path.join(xdg, "sparkstorm")
    return Path(base) / IDENTITY_FILE


def _warn(path: Path, why: str) -> None:
    if str(path) not in _warned:
        _warned.add(str(path))
        _log.warning(
            "no local ZooKeeper identity (%s: %s): topologies' nodes stay writable by anyone "
            "who reaches ZooKeeper",
            path,
            why,
        )


def _create(path: Path) -> None:
    """Write a new identity to ``path`` unless one is there (atomically: readers never see
    half a file; of two processes creating it at once, one wins)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    identity = f"sparkstorm-{os.geteuid()}:{secrets.token_urlsafe(32)}\n"
    temp = path.with_name(f".{IDENTITY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(identity)
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
    finally:
        temp.unlink(missing_ok=True)


def load_or_create() -> str | None:
    """This user's identity (``user:password``), created on first use; None (said once in
    the log) when it cannot be had: no writable state directory, or a file that is not
    this user's, is readable by others, or holds something else."""
    path = identity_path()
    try:
        if not path.exists():
            _create(path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd) as source:
            info = os.fstat(source.fileno())
            if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                _warn(path, "not this user's, or readable by others: chmod 600 it or remove it")
                return None
            identity = source.read(256).strip()
    except OSError as exc:
        _warn(path, exc.strerror or type(exc).__name__)
        return None
    if not _IDENTITY.fullmatch(identity):
        _warn(path, "not an identity written by sparkstorm: remove it")
        return None
    return identity
