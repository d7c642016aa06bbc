"""Redaction: the conf as it may be shown, with the values of secret-looking keys hidden.

See docs/SECURITY.md.  A key's *words* are its parts split at ``.``, ``_``, ``-`` (any
non-alphanumeric) and at camelCase humps, lower-cased: ``spark.ssl.keyStorePassword`` ->
spark, ssl, key, store, password.  A trailing ``s`` is ignored when a word's end is matched
(``tokens``, ``keys``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .config import CLUSTER_CREDENTIALS, REDACT_PATTERNS, _str_list

#: Secret wherever they appear in a key: ``db.password``, ``db.passwd``, ``dbPassword``,
#: ``oauth.client_secret``, ``aws.credentials``.
SECRET_ANYWHERE = ("password", "passwd", "secret", "credential")
#: Secret as the end of any word: ``api.token``, ``auth_token``, ``accessToken`` (not
#: ``tokenizer``).
SECRET_WORD_ENDINGS = ("token",)
#: Secret as the end of the key's last word: ``api.key``, ``api_key``, ``apiKey``,
#: ``ssh.privatekey``, ``storm.zookeeper.auth.payload`` (not ``key.field``, ``keyspace`` or
#: ``payload.max.bytes``).  Other keys ending in ``key`` (``routing.key``) are shown as
#: ``****`` too: hiding a harmless value is the safe side.
SECRET_LAST_WORD_ENDINGS = ("key", "payload")
#: What a redacted value is shown as.
REDACTED = "****"
#: Values nested deeper than this are shown as :data:`REDACTED` whole (not inspected).
REDACT_MAX_DEPTH = 32

_HUMP = re.compile(r"([a-z0-9])([A-Z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def _words(key: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(_HUMP.sub(r"\1 \2", key).lower()) if w]


def _ends(word: str, endings: tuple[str, ...]) -> bool:
    return word.endswith(endings) or (word.endswith("s") and word[:-1].endswith(endings))


def is_secret_key(key: Any, extra: Iterable[str] = ()) -> bool:
    """Whether the value of ``key`` is shown as :data:`REDACTED`: one of the cluster's own
    credentials (always), a key matching the built-in patterns above, or a key containing
    one of ``extra`` (user-added name parts, case-insensitive, e.g. from
    ``sparkstorm.redact.patterns``)."""
    key = str(key)
    if key in CLUSTER_CREDENTIALS:
        return True
    lowered = key.lower()
    if any(m in lowered for m in SECRET_ANYWHERE):
        return True
    if any(p.strip() and p.strip().lower() in lowered for p in extra):
        return True
    words = _words(key)
    if any(_ends(w, SECRET_WORD_ENDINGS) for w in words):
        return True
    return bool(words) and _ends(words[-1], SECRET_LAST_WORD_ENDINGS)


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
