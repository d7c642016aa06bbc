"""Components of the files connector tests (shipped to worker processes by module).

The tests run as root, whom ``chmod a-w`` does not stop, so a read-only output directory
is played by a local filesystem that refuses, as the kernel would refuse anyone else,
every change to a directory — creating, renaming, deleting a file, making a directory —
while a flag file exists; files opened before keep taking writes, as they do on a
directory made read-only.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from typing import Any

from fsspec.implementations.local import LocalFileSystem

from topology.connectors import FileSink
from topology.context import TopologyContext


class ReadOnlyWhileFlagged(LocalFileSystem):
    """A local filesystem whose directories are read-only while ``flag`` exists."""

    def __init__(self, flag: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.flag = flag

    def _refuse(self, path: Any) -> None:
        if os.path.exists(self.flag):
            raise PermissionError(errno.EACCES, "Permission denied (read-only)", str(path))

    def _open(self, path: Any, mode: str = "rb", block_size: Any = None, **kwargs: Any) -> Any:
        if not mode.startswith("r"):
            self._refuse(path)
        return super()._open(path, mode, block_size, **kwargs)

    def mv(self, path1: Any, path2: Any, recursive: bool = True, **kwargs: Any) -> None:
        self._refuse(path1)
        super().mv(path1, path2, recursive, **kwargs)

    def makedirs(self, path: Any, exist_ok: bool = False) -> None:
        if not (exist_ok and os.path.isdir(self._strip_protocol(path))):
            self._refuse(path)
        super().makedirs(path, exist_ok)

    def rm(self, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        self._refuse(path)
        super().rm(path, recursive, maxdepth)


class ReadOnlyOutageSink(FileSink):
    """A :class:`FileSink` whose output directory is read-only while ``flag`` exists."""

    def __init__(self, url: str, *, flag: str, **settings: Any) -> None:
        super().__init__(url, **settings)
        self.flag = flag

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().connect(conf, context)
        self._fs = ReadOnlyWhileFlagged(self.flag, skip_instance_cache=True)
