"""Shipping the driver's import path to workers, so modules a topology references by name
import on the worker side too (in local mode the paths are the same machine's)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable


def launch_sys_path() -> list[str]:
    """This process's ``sys.path`` with every entry absolute (``""`` is the cwd)."""
    return [os.path.abspath(p) if p else os.getcwd() for p in sys.path]


def adopt_sys_path(paths: Iterable[str]) -> None:
    """Put the shipped ``paths`` in front of this process's ``sys.path`` (in their order),
    skipping those it already has."""
    for entry in reversed(list(paths)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
