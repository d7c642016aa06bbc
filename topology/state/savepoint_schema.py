"""The checks of a savepoint's ``_metadata.json``, read as hostile input (pure).

A savepoint may come from anywhere (a shared bucket, an old version, a hand edit), so every
field is checked for its type, range and size before anything trusts it, and a data file's
name must be a plain name inside the savepoint's directory.  A bad field is a
:class:`SavepointError` naming the file and the field (``scopes.count.file``), never a
``KeyError`` or ``TypeError`` from deep inside.
"""

from __future__ import annotations

import re
from typing import Any

from topology.config import MAX_KEY_GROUPS
from topology.errors import SparkstormError
from topology.names import MAX_ID_CHARS, name_problem, quoted

#: The format this sparkstorm writes and reads.
FORMAT_VERSION = 1
#: Most components, scopes, tasks a savepoint may describe.
MAX_COMPONENTS = 100_000
MAX_SCOPES = 1_000_000
MAX_TASKS = 100_000
#: Kinds of state (``topology.runtime.checkpoint.state_layout``'s names; checked for shape only).
MAX_KINDS = 8
#: A data file: a plain name inside the savepoint (no ``/``, no leading ``.``).
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")
_KIND = re.compile(r"[a-z][a-z-]{0,39}")
#: A scope: a uid, then ``#<task>`` and/or ``/windows`` (state_layout's names).
_SCOPE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.#/-]{0,255}")
#: The shapes a scope of one uid has (topology.runtime.checkpoint.state_layout's names).
_SCOPE_OF_UID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(#[0-9]{1,9})?(/windows)?")


class SavepointError(SparkstormError):
    """A savepoint that cannot be written, read or restored; the message names the
    savepoint, the file and the field (or the component and key) at fault."""


class MetadataProblem(Exception):
    """One field's problem (becomes a :class:`SavepointError` naming the file)."""


def check_metadata(data: Any) -> dict[str, Any]:
    """``data`` (parsed ``_metadata.json``) if it is a well-formed savepoint description,
    else :class:`MetadataProblem` naming the field; unknown fields are ignored (newer writers)."""
    top = _obj(data, "(the document)")
    version = top.get("format")
    if version != FORMAT_VERSION or type(version) is not int:
        raise MetadataProblem(
            f"field 'format': this sparkstorm reads savepoint format {FORMAT_VERSION}, "
            f"got {_shown(version)}"
        )
    _name(top.get("topology"), "topology")
    _text(top.get("topology_id"), "topology_id", MAX_ID_CHARS)
    _int(top.get("checkpoint"), "checkpoint", 1, 2**62)
    _text(top.get("created_at"), "created_at", 64)
    _int(top.get("key_groups"), "key_groups", 1, MAX_KEY_GROUPS)
    _text(top.get("backend"), "backend", 64)
    uids = _components(top.get("components"))
    _scopes(top.get("scopes"), uids)
    return top


def _components(value: Any) -> set[str]:
    components = _obj(value, "components")
    if len(components) > MAX_COMPONENTS:
        raise MetadataProblem(
            f"field 'components': {len(components):,} components, more than {MAX_COMPONENTS:,}"
        )
    uids = set()
    for component, info in components.items():
        _name(component, "components")
        where = f"components.{component}"
        info = _obj(info, where)
        uids.add(_name(info.get("uid"), f"{where}.uid"))
        if info.get("kind") not in ("spout", "bolt"):
            raise MetadataProblem(
                f"field '{where}.kind': must be 'spout' or 'bolt', got {_shown(info.get('kind'))}"
            )
        _int(info.get("tasks"), f"{where}.tasks", 1, MAX_TASKS)
        kinds = info.get("state")
        if not isinstance(kinds, list) or len(kinds) > MAX_KINDS:
            raise MetadataProblem(
                f"field '{where}.state': must be a list of at most {MAX_KINDS} kinds"
            )
        for kind in kinds:
            if not isinstance(kind, str) or not _KIND.fullmatch(kind):
                raise MetadataProblem(
                    f"field '{where}.state': {_shown(kind)} is not a kind of state"
                )
    return uids


def _scopes(value: Any, uids: set[str]) -> None:
    scopes = _obj(value, "scopes")
    if len(scopes) > MAX_SCOPES:
        raise _bad("scopes", f"{len(scopes):,} scopes, more than {MAX_SCOPES:,}")
    files: set[str] = set()
    for scope, info in scopes.items():
        if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
            raise _bad("scopes", f"{_shown(scope)} is not a scope name")
        where = f"scopes.{scope}"
        info = _obj(info, where)
        uid = _name(info.get("uid"), f"{where}.uid")
        if uid not in uids:
            raise MetadataProblem(
                f"field '{where}.uid': {_shown(uid)} is the uid of no component listed"
            )
        if not _SCOPE_OF_UID.fullmatch(scope) or scope.split("#")[0].split("/")[0] != uid:
            raise MetadataProblem(
                f"field 'scopes': scope {_shown(scope)} is not one of uid {_shown(uid)} "
                "(uid, uid#N, uid/windows or uid#N/windows)"
            )
        file = info.get("file")
        if not isinstance(file, str) or not _FILE_NAME.fullmatch(file):
            raise MetadataProblem(
                f"field '{where}.file': must be a file name inside the savepoint "
                f"(A-Z a-z 0-9 _ - ., no '/'), got {_shown(file)}"
            )
        if file in files:
            raise MetadataProblem(
                f"field '{where}.file': {_shown(file)} is another scope's file too"
            )
        files.add(file)
        _int(info.get("entries"), f"{where}.entries", 0, 2**62)
        _int(info.get("bytes"), f"{where}.bytes", 0, 2**62)


def _bad(field: str, text: str) -> MetadataProblem:
    return MetadataProblem(f"field '{field}': {text}")


def _shown(value: Any) -> str:
    """``value`` for a message: a string quoted and cut, a number as it is, else its type."""
    if isinstance(value, str):
        return quoted(value)
    if value is None or isinstance(value, bool | int | float):
        return repr(value)[:40]
    return f"a {type(value).__name__}"


def _obj(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(field, f"must be an object, got {type(value).__name__}")
    return value


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _bad(field, f"must be a name (a string), got {_shown(value)}")
    problem = name_problem("name", value)
    if problem is not None:
        raise _bad(field, f"{problem}")
    return str(value)


def _text(value: Any, field: str, most: int) -> str:
    if not isinstance(value, str) or not value or len(value) > most:
        raise MetadataProblem(
            f"field '{field}': must be a string of 1 to {most} characters, got {_shown(value)}"
        )
    return value


def _int(value: Any, field: str, least: int, most: int) -> int:
    if type(value) is not int or not least <= value <= most:
        raise MetadataProblem(
            f"field '{field}': must be an integer from {least} to {most}, got {_shown(value)}"
        )
    return value
