"""This user's directories on a machine: where logs, checkpoints and live state go by
default, and the checks that keep what sparkstorm writes there private.

The defaults share one per-user base, ``<tmp>/sparkstorm-<uid>`` (``<tmp>`` is
:func:`tempfile.gettempdir`: ``$TMPDIR``, else ``/tmp``; the effective uid, not the user
name): ``logs/`` for ``storm.log.dir``, ``state/`` for ``topology.state.dir``, ``live/``
for ``topology.state.local.dir``.  Every process of one user on one machine resolves the
same base — the CLI, the nimbus, drivers, LocalCluster workers and Spark-hosted workers
inherit the environment of the process that starts them, ``$TMPDIR`` included; a process
started with another ``$TMPDIR`` resolves another base (set the keys explicitly then).

Every directory sparkstorm makes for itself — the base, its subdirectories, a topology's
log directory, a task's live-state directory — is created with mode 0700 and, when it
exists already, is used only if it is a directory, not a symbolic link, owned by this
user and closed to group and others (:func:`private_dir`).  A directory the user
configures is theirs (symbolic links in it followed, group-writable allowed): it is
refused only when everyone may write to it without the sticky bit, since anyone could then
replace what sparkstorm writes there (:func:`chosen_dir`).  Files sparkstorm creates in
these directories are 0600 and never opened through a symbolic link (:func:`private_opener`,
:func:`private_file`).  A refusal is one :class:`LocalDirError` line naming the key, the
path and the fix, e.g.::

    storm.log.dir: /tmp/sparkstorm-1000 is owned by uid 1001, not by this user (uid 1000):
    remove it (as its owner or root), or set storm.log.dir to a directory of your own
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import config as cfg
from .errors import ConfigError

#: The base's name in the temporary directory, before the uid.
BASE_PREFIX = "sparkstorm-"
#: The default directory of each key, under the base.
DEFAULTS: dict[str, str] = {
    cfg.LOG_DIR: "logs",
    cfg.STATE_DIR: "state",
    cfg.STATE_LOCAL_DIR: "live",
}
#: Mode of the directories and files sparkstorm creates.
DIR_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class LocalDirError(ConfigError):
    """A local directory or file sparkstorm will not use (or cannot make); the message is
    one line naming the key, the path and the fix."""


def base_dir() -> Path:
    """``<tmp>/sparkstorm-<uid>``: the parent of every default directory."""
    return Path(tempfile.gettempdir()) / f"{BASE_PREFIX}{os.geteuid()}"


def default_dir(key: str) -> Path:
    """Where ``key`` (one of :data:`DEFAULTS`) points when it is null (nothing is made).

    >>> default_dir("storm.log.dir").relative_to(base_dir()).as_posix()
    'logs'
    """
    return base_dir() / DEFAULTS[key]


def resolve(conf: Mapping[str, Any], key: str) -> Path:
    """The directory ``key`` names in ``conf`` (a ``file://`` prefix dropped), else its
    default; nothing is made or checked."""
    value = conf.get(key)
    return Path(str(value).removeprefix("file://")) if value else default_dir(key)


def ensure_dir(conf: Mapping[str, Any], key: str, *parts: str) -> Path:
    """The directory of ``key`` with ``parts`` below it, made where missing and checked:
    the default (base and subdirectory) and every part by :func:`private_dir`, a
    configured one by :func:`chosen_dir`.  Raises :class:`LocalDirError`."""
    if conf.get(key):
        folder = chosen_dir(resolve(conf, key), key)
    else:
        folder = private_dir(private_dir(base_dir(), key) / DEFAULTS[key], key)
    for part in parts:
        folder = private_dir(folder / part, key)
    return folder


def private_dir(path: Path, key: str) -> Path:
    """``path``, made with mode 0700 unless it exists; an existing one must be a directory
    (not a symbolic link, which is never followed) owned by this user and closed to group
    and others.  Returns ``path``; :class:`LocalDirError` names what is wrong and the fix."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise LocalDirError(f"{key}: cannot create {_shown(path)}: {exc.strerror}") from None
    info = os.lstat(path)
    fix = f"remove it, or set {key} to a directory of your own"
    if stat.S_ISLNK(info.st_mode):
        problem = f"is a symbolic link (never followed here): {fix}"
    elif not stat.S_ISDIR(info.st_mode):
        problem = f"is not a directory: {fix}"
    elif info.st_uid != os.geteuid():
        problem = (
            f"is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}): "
            f"remove it (as its owner or root), or set {key} to a directory of your own"
        )
    elif info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        mode = stat.S_IMODE(info.st_mode)
        problem = f"is open to group or others (mode {mode:04o}): chmod 700 {_shown(path)}"
    else:
        return path
    raise LocalDirError(f"{key}: {_shown(path)} {problem}")


def chosen_dir(path: Path, key: str) -> Path:
    """A directory the user configured: made (0700) when missing; an existing one is
    refused only when it is not a directory or everyone may write to it without the
    sticky bit.  Returns ``path``; raises :class:`LocalDirError`."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        try:
            make_dirs(path)
        except OSError as exc:
            raise LocalDirError(f"{key}: cannot create {_shown(path)}: {exc.strerror}") from None
        return path
    except OSError as exc:
        raise LocalDirError(f"{key}: cannot use {_shown(path)}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise LocalDirError(f"{key}: {_shown(path)} is not a directory: set {key} to one")
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        mode = stat.S_IMODE(info.st_mode)
        raise LocalDirError(
            f"{key}: {_shown(path)} is writable by everyone without the sticky bit (mode "
            f"{mode:04o}), so anyone could replace what sparkstorm writes there: "
            f"chmod o-w {_shown(path)}, or set {key} to a directory of your own"
        )
    return path


def make_dirs(path: str | os.PathLike[str]) -> None:
    """``os.makedirs(path, exist_ok=True)``, but every directory it makes 0700 (not only
    the last)."""
    path = os.fspath(path)
    parent = os.path.dirname(path.rstrip(os.sep))
    if parent and parent != path and not os.path.isdir(parent):
        make_dirs(parent)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An ``opener`` for :func:`open`: files created 0600, never through a symbolic link
    (``OSError`` ELOOP instead)."""
    return os.open(path, flags | _NOFOLLOW | _CLOEXEC, FILE_MODE)


def private_file(path: Path, key: str) -> Path:
    """``path`` created empty with mode 0600 unless it exists; an existing one must be a
    regular file owned by this user (a symbolic link is refused, never followed).  For
    files another library opens by name (SQLite).  Raises :class:`LocalDirError`."""
    try:
        fd = private_opener(path, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK)
    except OSError as exc:
        why = "is a symbolic link (never followed here)" if exc.errno == errno.ELOOP else None
        if why is None:
            raise LocalDirError(f"{key}: cannot use {_shown(path)}: {exc.strerror}") from None
        raise LocalDirError(f"{key}: {_shown(path)} {why}: remove it") from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        raise LocalDirError(
            f"{key}: {_shown(path)} is not a file of this user's (uid {os.geteuid()}): "
            f"remove it, or set {key} to a directory of your own"
        )
    return path


def _shown(path: Path) -> str:
    """``path`` for a one-line message: as is when printable, else ASCII-escaped."""
    text = str(path)
    return text if text.isprintable() else ascii(text)
