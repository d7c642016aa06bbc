"""Who may act: the UI's settings, the admin token and CSRF tokens (docs/UI.md, Security).

Reading needs nothing.  An action (a POST) is refused with 403 unless an admin token is
configured — ``ui.admin.token``, else the first line of ``ui.admin.token.file``, else
``$SPARKSTORM_UI_ADMIN_TOKEN``, explicitly: the cluster secret is never used in its place
(it is the workers' key, and a UI may be reached by more people than the workers) — and
then needs both
``Authorization: Bearer <token>`` and a CSRF token: the value ``GET /api/v1/csrf`` returns
and sets as the ``sparkstorm_csrf`` cookie, sent back in the ``X-CSRF-Token`` header with
that cookie (double submit).  CSRF tokens are signed with a key of this server process, so
a cookie planted by another site (or another server) does not pass either.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topology import config as cfg
from topology.errors import ConfigError
from topology.secret_files import read_secret_file

from .params import BadRequest

#: The header and the cookie of the double-submit CSRF check.
CSRF_HEADER = "X-CSRF-Token"
CSRF_COOKIE = "sparkstorm_csrf"
#: The environment variable holding the admin token (when neither ``ui.admin.token`` nor
#: ``ui.admin.token.file`` is set): unlike ``-c``, not seen in the process list.
TOKEN_ENV = "SPARKSTORM_UI_ADMIN_TOKEN"
#: How to give the UI an admin token, as messages say it.
HOW_TO_ENABLE = (
    f"set {cfg.UI_ADMIN_TOKEN_FILE}=<a file only you can read> or ${TOKEN_ENV} "
    "(at least 16 characters)"
)
#: What a refused action says when no admin token is configured.
DISABLED = (
    f"actions are disabled: no admin token is configured; {HOW_TO_ENABLE}, restart the UI "
    "and send the token as 'Authorization: Bearer <token>' (docs/UI.md)"
)


def admin_token(resolved: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The admin token of a resolved conf: ``ui.admin.token``, else the first line of
    ``ui.admin.token.file`` (refused, like the cluster secret's file, when open to its
    group or others), else ``environ[TOKEN_ENV]``; None when none is set.

    Raises :class:`~topology.errors.ConfigError` naming the key or variable at fault (a
    file that cannot be read, is open to others or is short; a short variable).

    >>> admin_token({"ui.admin.token": None, "ui.admin.token.file": None},
    ...             {TOKEN_ENV: "0123456789abcdef"})
    '0123456789abcdef'
    """
    token = str(resolved.get(cfg.UI_ADMIN_TOKEN) or "").strip()
    if token:
        return token
    path = resolved.get(cfg.UI_ADMIN_TOKEN_FILE)
    if path:
        return read_secret_file(cfg.UI_ADMIN_TOKEN_FILE, str(path), "token")
    token = environ.get(TOKEN_ENV, "").strip()
    if token and len(token) < 16:
        raise ConfigError(f"${TOKEN_ENV}: the admin token must be at least 16 characters")
    return token or None


@dataclass(frozen=True)
class UiSettings:
    """What the server reads of a conf: where it binds, the admin token (None: actions
    disabled), how often it publishes, the extra redaction patterns for conf shown, and
    what a client connection may hold (``ui.connections.max``, ``ui.idle.timeout.secs``,
    ``ui.request.timeout.secs``)."""

    host: str = "127.0.0.1"
    port: int = 8080
    admin_token: str | None = None
    publish_interval: float = 1.0
    redact_patterns: tuple[str, ...] = ()
    max_connections: int = 256
    idle_timeout: float = 5.0
    request_timeout: float = 10.0
    #: ``ui.prometheus.url``: where the charts' series are read (None: the UI's own ring).
    prometheus_url: str | None = None

    @classmethod
    def from_conf(
        cls, conf: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
    ) -> UiSettings:
        """The ``ui.*`` keys of ``conf`` over their defaults (checked: a bad value raises
        :class:`~topology.errors.ConfigError`).  The admin token is :func:`admin_token`'s
        (``environ``: default ``os.environ``): without one actions are disabled, whatever
        cluster secret is set."""
        resolved = cfg.resolve(conf or {}, where="ui")
        return cls(
            host=resolved[cfg.UI_HOST],
            port=resolved[cfg.UI_PORT],
            admin_token=admin_token(resolved, os.environ if environ is None else environ),
            publish_interval=float(resolved[cfg.UI_PUBLISH_INTERVAL_SECS]),
            redact_patterns=tuple(resolved[cfg.REDACT_PATTERNS]),
            max_connections=int(resolved[cfg.UI_CONNECTIONS_MAX]),
            idle_timeout=float(resolved[cfg.UI_IDLE_TIMEOUT_SECS]),
            request_timeout=float(resolved[cfg.UI_REQUEST_TIMEOUT_SECS]),
            prometheus_url=resolved.get(cfg.UI_PROMETHEUS_URL) or None,
        )


class Guard:
    """Checks the admin token and CSRF token of an action; issues CSRF tokens."""

    def __init__(self, admin_token: str | None) -> None:
        self._token = admin_token.encode() if admin_token else None
        self._key = secrets.token_bytes(32)

    @property
    def enabled(self) -> bool:
        """Whether actions are possible at all (an admin token is configured)."""
        return self._token is not None

    def new_csrf(self) -> str:
        """A fresh CSRF token: a random nonce and its signature by this server."""
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign(nonce)}"

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._key, nonce.encode(), hashlib.sha256).hexdigest()[:32]

    def _signed(self, value: str) -> bool:
        nonce, _, signature = value.partition(".")
        return bool(nonce) and hmac.compare_digest(signature.encode(), self._sign(nonce).encode())

    def check(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> None:
        """Return if the request may act, else raise :class:`BadRequest`: 403 when
        actions are disabled, 401 without the right bearer token, 403 without a CSRF
        header matching the CSRF cookie (both issued by this server)."""
        if self._token is None:
            raise BadRequest(DISABLED, "Authorization", 403)
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), self._token
        ):
            raise BadRequest(
                "admin token missing or wrong: send 'Authorization: Bearer <token>'",
                "Authorization",
                401,
            )
        header = headers.get(CSRF_HEADER.lower(), "")
        cookie = cookies.get(CSRF_COOKIE, "")
        if not (header and cookie and hmac.compare_digest(header.encode(), cookie.encode())):
            raise BadRequest(
                f"CSRF token missing or wrong: GET /api/v1/csrf, then send its token in the "
                f"{CSRF_HEADER} header with the {CSRF_COOKIE} cookie it set",
                CSRF_HEADER,
                403,
            )
        if not self._signed(header):
            raise BadRequest(
                "CSRF token not issued by this server: GET /api/v1/csrf again", CSRF_HEADER, 403
            )
