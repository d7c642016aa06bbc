"""Why a LocalCluster worker process died before it started: its stderr until then.

A worker that cannot even import sparkstorm (or dies in the interpreter's start-up) says
why on stderr and exits; its parent only sees an exit code.  So a worker starts with its
stderr in a temporary file and the parent's stderr handed over as an extra descriptor
(named by :data:`STDERR_FD_ENV`).  As soon as the worker's own code runs it calls
:func:`restore_stderr`, and from then on writes to the parent's stderr as before; if it
dies first, :meth:`StartupStderr.last_line` tells the parent why.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO, Any

#: Environment variable naming the descriptor of the parent's stderr in a worker.
STDERR_FD_ENV = "SPARKSTORM_STDERR_FD"
#: How much of the end of the captured stderr is read for the reason.
TAIL_BYTES = 4096


class StartupStderr:
    """The captured start-up stderr of one worker process (parent side)."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = tempfile.TemporaryFile()
        try:
            self._parent_fd: int | None = os.dup(2)
        except OSError:  # no stderr to hand over: the worker inherits nothing to restore
            self._parent_fd = None

    def popen_kwargs(self, env: dict[str, str]) -> dict[str, Any]:
        """``subprocess.Popen`` arguments: stderr to the file, the parent's stderr passed
        on; ``env`` is extended with :data:`STDERR_FD_ENV`."""
        if self._parent_fd is None or self._file is None:
            return {"env": env}
        return {
            "env": {**env, STDERR_FD_ENV: str(self._parent_fd)},
            "stderr": self._file,
            "pass_fds": (self._parent_fd,),
        }

    def spawned(self) -> None:
        """The process started (or failed to): drop the parent's copy of the descriptor."""
        if self._parent_fd is not None:
            os.close(self._parent_fd)
            self._parent_fd = None

    def last_line(self) -> str | None:
        """The last non-empty line the process wrote before it took over the parent's
        stderr (None when it wrote nothing)."""
        if self._file is None:
            return None
        self._file.seek(0, os.SEEK_END)
        size = self._file.tell()
        self._file.seek(max(0, size - TAIL_BYTES))
        lines = self._file.read().decode("utf-8", "replace").splitlines()
        return next((line.strip() for line in reversed(lines) if line.strip()), None)

    def close(self) -> None:
        self.spawned()
        if self._file is not None:
            self._file.close()
            self._file = None


#: Most start-up output a worker copies to the parent's stderr when it takes it over.
EARLY_BYTES = 65536


def restore_stderr() -> None:
    """In a worker: write to the parent's stderr from now on, starting with what was
    written to the start-up file so far (e.g. warnings at import); a no-op when the parent
    handed over no stderr."""
    fd = os.environ.pop(STDERR_FD_ENV, None)
    if fd is None:
        return
    try:
        parent = int(fd)
        os.lseek(2, 0, os.SEEK_SET)
        early = os.read(2, EARLY_BYTES)
        os.dup2(parent, 2)
        os.close(parent)
        if early:
            os.write(2, early)
    except (OSError, ValueError):
        pass  # keep writing to the start-up file rather than fail the worker
