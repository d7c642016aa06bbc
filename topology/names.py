"""The rule for topology and component names, checked in one place (pure).

A topology's name becomes part of its id (``<name>-<n>-<time>``), which names ZooKeeper
nodes (``<root>/storms/<id>``, ``<root>/errors/<id>/<component>``), its log directory and
its checkpoint files; a component's name is a ZooKeeper node under ``errors/<id>``.  So a
name is 1 to :data:`MAX_NAME_CHARS` ASCII letters, digits, ``_``, ``-`` and ``.``, starting
with a letter, digit or ``_``: short enough that the id and every file name derived from it
stay far below the 255-byte limit of file systems, and nothing ZooKeeper or a shell treats
specially (``/``, ``.`` and ``..``, control characters, spaces, non-ASCII look-alikes).
"""

from __future__ import annotations

import re

from .errors import SparkstormError

#: Longest topology or component name (characters; all ASCII, so also bytes).
MAX_NAME_CHARS = 128
#: Longest topology id (``<name>-<n>-<time>``): a name and room for the suffix.
MAX_ID_CHARS = MAX_NAME_CHARS + 32
#: How the rule reads in error messages and docs.
NAME_RULE = "1-{max} characters from A-Z a-z 0-9 _ - . starting with a letter, digit or _"
_ALLOWED = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: How much of a bad name an error message quotes.
_QUOTED_CHARS = 40


class InvalidName(SparkstormError):
    """A topology or component name breaks :data:`NAME_RULE`."""


def quoted(name: object) -> str:
    """``name`` for an error message: ASCII-escaped, one line, cut after 40 characters."""
    if isinstance(name, str) and len(name) > _QUOTED_CHARS:
        return f"{ascii(name[:_QUOTED_CHARS])}... ({len(name):,} characters)"
    return ascii(name)


def name_problem(kind: str, name: object, max_chars: int = MAX_NAME_CHARS) -> str | None:
    """Why ``name`` cannot name a ``kind`` ("topology", "component"), or None if it can."""
    if isinstance(name, str) and len(name) <= max_chars and _ALLOWED.fullmatch(name):
        return None
    return f"invalid {kind} name {quoted(name)}: use {NAME_RULE.format(max=max_chars)}"


def check_name(kind: str, name: object) -> str:
    """``name`` if it may name a ``kind``, else :class:`InvalidName` (one line, the rule)."""
    problem = name_problem(kind, name)
    if problem is not None:
        raise InvalidName(problem)
    assert isinstance(name, str)
    return name


def safe_name(text: str) -> str:
    """``text`` made into a name (a default from a file's stem): every other character
    becomes ``_``, cut to :data:`MAX_NAME_CHARS`."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:MAX_NAME_CHARS]
    return name if _ALLOWED.fullmatch(name) else f"_{name}"[:MAX_NAME_CHARS]
