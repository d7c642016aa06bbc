"""Reading a secret from a file: the cluster secret (``sparkstorm.cluster.secret.file``) and
the UI's admin token (``ui.admin.token.file``) are each the first line of a file only its
owner may read — like ssh with a private key, a secret others can read is no secret.
"""

from __future__ import annotations

import os
import shlex
import stat

from .errors import ConfigError

#: Most bytes of a secret file's first line read.
SECRET_FILE_MAX_BYTES = 4096
#: Fewest characters of a secret or token.
MIN_SECRET_CHARS = 16


def read_secret_file(key: str, path: str, what: str = "secret") -> str:
    """The first line of the file ``path`` (given as ``key``; a leading ``~`` is the home
    directory, which no shell expands in ``-c key=~/...``), stripped: a ``what`` (a
    secret, a token) of at least :data:`MIN_SECRET_CHARS` characters.

    Raises :class:`ConfigError` naming ``key`` and ``path`` when the file cannot be read,
    is not a regular file (a FIFO is never waited on), is open to its group or others
    (:func:`refuse_open_secret_file`), is not UTF-8 or holds too few characters.

    >>> read_secret_file("ui.admin.token.file", "/nonexistent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    topology.errors.ConfigError: ui.admin.token.file: cannot read /nonexistent: No such ...
    """
    path = os.path.expanduser(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, encoding="utf-8") as f:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise ConfigError(f"{key}: {path} is not a regular file")
            refuse_open_secret_file(path, mode, key, what)
            text = f.readline(SECRET_FILE_MAX_BYTES).strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path} is not UTF-8 text") from None
    if len(text) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"{key}: the {what} in {path} is shorter than {MIN_SECRET_CHARS} characters"
        )
    return text


def refuse_open_secret_file(path: str, mode: int, key: str, what: str = "secret") -> None:
    """Raise :class:`ConfigError` (one line naming ``key``, ``path`` and the ``chmod`` that
    fixes it) when the file's ``mode`` lets its group or others in (``mode & 0o077``)."""
    if os.name == "posix" and mode & 0o077:
        raise ConfigError(
            f"{key}: {path} is open to its group or others "
            f"(mode {mode & 0o777:04o}); the {what} must be readable by its owner only: "
            f"run chmod 600 {shlex.quote(str(path))}"
        )
