"""Redaction: the conf as it may be shown, with the values of secret-looking keys hidden.

See docs/SECURITY.md.  Which keys are secret is :func:`topology.config.is_secret_key`
(the config's own rules check values with it too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .config import REDACT_PATTERNS, REDACTED, _str_list, is_secret_key

#: Values nested deeper than this are shown as :data:`REDACTED` whole (not inspected).
REDACT_MAX_DEPTH = 32


def redact(conf: Mapping[str, Any], extra: Iterable[str] = ()) -> dict[str, Any]:
    """``conf`` as it may be shown: the value of every secret-looking key
    (:func:`is_secret_key`) replaced by :data:`REDACTED`, in nested dicts and lists of
    dicts too (``{"db": {"password": ...}}``); a null stays null (nothing to hide).  The
    name parts of ``conf``'s own ``sparkstorm.redact.patterns`` count, with ``extra``."""
    own = conf.get(REDACT_PATTERNS) or []
    patterns = tuple(extra) + (tuple(own) if _str_list(own) else ())
    return {k: _shown(k, v, patterns, 0) for k, v in conf.items()}


def _shown(key: Any, value: Any, patterns: tuple[str, ...], depth: int) -> Any:
    if value is not None and is_secret_key(key, patterns):
        return REDACTED
    return _walk(value, patterns, depth + 1)


def _walk(value: Any, patterns: tuple[str, ...], depth: int) -> Any:
    if isinstance(value, Mapping):
        if depth > REDACT_MAX_DEPTH:
            return REDACTED
        return {k: _shown(k, v, patterns, depth) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if depth > REDACT_MAX_DEPTH:
            return REDACTED
        return [_walk(v, patterns, depth + 1) for v in value]
    return value
