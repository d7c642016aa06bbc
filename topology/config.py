"""Configuration: defaults from ``conf/defaults.yaml``, typed keys, validation.

Every key has one type rule here and one default in ``conf/defaults.yaml``.  Keys starting
with ``spark.`` are passed to SparkConf and not checked.  Other unknown keys are the user's
own (components read them from their conf) and pass silently, unless they look like a
misspelt sparkstorm key (see :func:`misspelt_key`): those warn with the nearest known key.
How conf is shown with its secrets hidden is :mod:`topology.redaction`.
"""

from __future__ import annotations

import difflib
import re
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError
from .secret_files import read_secret_file

TOPOLOGY_WORKERS = "topology.workers"
#: Most workers a topology may have (its assignment must fit one ZooKeeper node).
MAX_WORKERS = 10_000
TOPOLOGY_ACKER_EXECUTORS = "topology.acker.executors"
TOPOLOGY_DEBUG = "topology.debug"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = "topology.enable.message.timeouts"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_ADAPTIVE_PENDING = "topology.max.spout.pending.adaptive"
TOPOLOGY_AUTO_PENDING = "topology.max.spout.pending.auto"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_SPOUT_WAIT_MS = "topology.sleep.spout.wait.strategy.time.ms"
TOPOLOGY_SPOUT_WAIT_STRATEGY = "topology.spout.wait.strategy"
TOPOLOGY_SPOUT_WAIT_MAX_MS = "topology.spout.wait.progressive.max.millis"
TOPOLOGY_WORKER_LOSS_FAILS_PENDING = "topology.worker.loss.fails.pending"
TOPOLOGY_STATS_INTERVAL_SECS = "topology.stats.interval.secs"
TOPOLOGY_DRAIN_QUIET_SECS = "topology.drain.quiet.secs"
TOPOLOGY_TRANSFER_BATCH_SIZE = "topology.transfer.batch.size"
TOPOLOGY_FLUSH_INTERVAL_MILLIS = "topology.batch.flush.interval.millis"
TOPOLOGY_TRANSFER_BUFFER_SIZE = "topology.transfer.buffer.size"
TOPOLOGY_RECEIVE_BUFFER_SIZE = "topology.executor.receive.buffer.size"
TOPOLOGY_MAX_FRAME_BYTES = "topology.transfer.max.frame.bytes"
STATE_PROVIDER = "topology.state.provider"
STATE_DIR = "topology.state.dir"
CHECKPOINT_INTERVAL_MS = "topology.state.checkpoint.interval.ms"
CHECKPOINT_TIMEOUT_SECS = "topology.state.checkpoint.timeout.secs"
STATE_MAX_PARALLELISM = "topology.state.max.parallelism"
STATE_BACKEND = "topology.state.backend"
STATE_LOCAL_DIR = "topology.state.local.dir"
STATE_CACHE_ENTRIES = "topology.state.cache.entries"
STATE_CACHE_BYTES = "topology.state.cache.bytes"
#: Least ``topology.state.cache.bytes``: below, a cache holds too few entries to batch.
MIN_CACHE_BYTES = 1 << 16
STATE_TTL_SECS = "topology.state.ttl.secs"
CHECKPOINTS_RETAINED = "topology.state.checkpoints.retained"
SAVEPOINTS_DIR = "topology.state.savepoints.dir"
#: Most key groups (``topology.state.max.parallelism``): a key group is stored in 2 bytes.
MAX_KEY_GROUPS = 32_768
STREAMS_FUSION = "topology.streams.fusion"
ERRORS_RETRIES = "topology.errors.retries"
ERRORS_BACKOFF_MS = "topology.errors.retry.backoff.ms"
ERRORS_BACKOFF_MAX_MS = "topology.errors.retry.backoff.max.ms"
ERRORS_ACTION = "topology.errors.action"
#: What a component does with an input it gave up on (``topology.errors.action``).
ERROR_ACTIONS = ("dead_letter", "fail")
TOPOLOGY_ALWAYS_TRY_SERIALIZE = "topology.testing.always.try.serialize"
TOPOLOGY_NAME = "topology.name"
WORKER_START_TIMEOUT_SECS = "supervisor.worker.start.timeout.secs"
WORKER_SHUTDOWN_SECS = "supervisor.worker.shutdown.sleep.secs"
WORKER_RESTART_DELAY_SECS = "supervisor.worker.restart.delay.secs"
WORKER_RESTART_MAX_DELAY_SECS = "supervisor.worker.restart.max.delay.secs"
WORKER_RESTART_RESET_SECS = "supervisor.worker.restart.reset.secs"
WORKER_TIMEOUT_SECS = "topology.worker.timeout.secs"
WORKER_KILL_WHEN_STUCK = "topology.worker.kill.when.stuck"
LOCAL_HOSTNAME = "storm.local.hostname"
LOCAL_BIND_ADDRESS = "storm.local.bind.address"
LOG_DIR = "storm.log.dir"
WORKER_LOG_LEVEL = "topology.worker.log.level"
WORKER_LOG_MAX_BYTES = "topology.worker.log.max.bytes"
WORKER_LOG_BACKUPS = "topology.worker.log.backups"
NIMBUS_DRIVER_MODE = "nimbus.driver.mode"
SPARK_EXECUTOR_WAIT_SECS = "topology.spark.executor.wait.secs"
ZK_SERVERS = "storm.zookeeper.servers"
ZK_PORT = "storm.zookeeper.port"
ZK_ROOT = "storm.zookeeper.root"
ZK_CONNECTION_TIMEOUT_SECS = "storm.zookeeper.connection.timeout.secs"
ZK_SESSION_TIMEOUT_SECS = "storm.zookeeper.session.timeout.secs"
ZK_AUTH_SCHEME = "storm.zookeeper.auth.scheme"
ZK_AUTH_PAYLOAD = "storm.zookeeper.auth.payload"
CLUSTER_SECRET = "sparkstorm.cluster.secret"
METRICS_PORT = "sparkstorm.metrics.port"
METRICS_HOST = "sparkstorm.metrics.host"
CLUSTER_SECRET_FILE = "sparkstorm.cluster.secret.file"
REDACT_PATTERNS = "sparkstorm.redact.patterns"
UI_HOST = "ui.host"
UI_PORT = "ui.port"
UI_ADMIN_TOKEN = "ui.admin.token"
UI_ADMIN_TOKEN_FILE = "ui.admin.token.file"
UI_PUBLISH_INTERVAL_SECS = "ui.publish.interval.secs"
UI_CONNECTIONS_MAX = "ui.connections.max"
UI_IDLE_TIMEOUT_SECS = "ui.idle.timeout.secs"
UI_REQUEST_TIMEOUT_SECS = "ui.request.timeout.secs"
UI_PROMETHEUS_URL = "ui.prometheus.url"
#: Keys that hold the cluster's own credentials: never recorded with a topology, and always
#: redacted where conf is shown.
CLUSTER_CREDENTIALS = frozenset(
    {ZK_AUTH_PAYLOAD, CLUSTER_SECRET, CLUSTER_SECRET_FILE, UI_ADMIN_TOKEN, UI_ADMIN_TOKEN_FILE}
)

# Which keys are secret (their values hidden wherever conf is shown, see
# :mod:`topology.redaction`).  A key's *words* are its parts split at ``.``, ``_``, ``-``
# (any non-alphanumeric) and at camelCase humps, lower-cased: ``spark.ssl.keyStorePassword``
# -> spark, ssl, key, store, password.  A trailing ``s`` is ignored when a word's end is
# matched (``tokens``, ``keys``).

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


Check = Callable[[Any], bool]


def _int(minimum: int, maximum: float = float("inf")) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and minimum <= v <= maximum


def _number(positive: bool = True) -> Check:
    return lambda v: (
        isinstance(v, (int, float)) and not isinstance(v, bool) and (v > 0 if positive else v >= 0)
    )


def _optional(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


def _word_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) and s.strip() for s in v)


#: key -> (rule, what the rule means in an error message)
def one_of(names: Collection[str]) -> str:
    """``a, b or c``: what a rule that takes one of ``names`` says in an error message."""
    *rest, last = names
    return f"{', '.join(rest)} or {last}" if rest else last


#: The values of ``topology.state.backend``: the live state backends
#: (:mod:`topology.state.live.factory` opens each).
STATE_BACKENDS = ("memory", "lmdb")

SCHEMA: dict[str, tuple[Check, str]] = {
    TOPOLOGY_WORKERS: (_int(1, MAX_WORKERS), f"an integer from 1 to {MAX_WORKERS}"),
    TOPOLOGY_ACKER_EXECUTORS: (_optional(_int(0)), "null or an integer >= 0"),
    TOPOLOGY_DEBUG: (_is_bool, "true or false"),
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: (_number(), "a number > 0"),
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: (_is_bool, "true or false"),
    TOPOLOGY_MAX_SPOUT_PENDING: (_optional(_int(1)), "null or an integer >= 1"),
    TOPOLOGY_ADAPTIVE_PENDING: (_is_bool, "true or false"),
    TOPOLOGY_AUTO_PENDING: (_is_bool, "true or false"),
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: (_optional(_number()), "null or a number > 0"),
    TOPOLOGY_SPOUT_WAIT_MS: (_number(positive=False), "a number >= 0"),
    TOPOLOGY_SPOUT_WAIT_STRATEGY: (lambda v: v in ("sleep", "progressive"), "sleep or progressive"),
    TOPOLOGY_SPOUT_WAIT_MAX_MS: (_number(positive=False), "a number >= 0 (milliseconds)"),
    TOPOLOGY_WORKER_LOSS_FAILS_PENDING: (_is_bool, "true or false"),
    METRICS_PORT: (_optional(_int(0)), "null (no endpoint) or a port number (0 = any free)"),
    METRICS_HOST: (_is_str, "an address to bind the metrics endpoint to"),
    TOPOLOGY_STATS_INTERVAL_SECS: (_number(), "a number > 0"),
    TOPOLOGY_DRAIN_QUIET_SECS: (_number(positive=False), "a number >= 0"),
    TOPOLOGY_TRANSFER_BATCH_SIZE: (_int(1), "an integer >= 1"),
    TOPOLOGY_FLUSH_INTERVAL_MILLIS: (_number(positive=False), "a number >= 0"),
    TOPOLOGY_TRANSFER_BUFFER_SIZE: (_int(1), "an integer >= 1"),
    TOPOLOGY_RECEIVE_BUFFER_SIZE: (_int(100), "an integer >= 100"),
    TOPOLOGY_MAX_FRAME_BYTES: (_int(1024), "an integer >= 1024 (bytes)"),
    # the providers register themselves (topology.state.backends): see register_choices
    STATE_PROVIDER: (_is_str, "the name of a state provider"),
    STATE_DIR: (_optional(_is_str), "null or a directory (path or fsspec URL)"),
    CHECKPOINT_INTERVAL_MS: (_number(), "a number > 0 (milliseconds)"),
    CHECKPOINT_TIMEOUT_SECS: (_number(), "a number > 0"),
    STATE_MAX_PARALLELISM: (
        _int(1, MAX_KEY_GROUPS),
        f"an integer from 1 to {MAX_KEY_GROUPS} (the number of key groups)",
    ),
    STATE_BACKEND: (lambda v: isinstance(v, str) and v in STATE_BACKENDS, one_of(STATE_BACKENDS)),
    STATE_LOCAL_DIR: (
        _optional(_is_str),
        "null (<tmp>/sparkstorm-<uid>/live) or a local directory",
    ),
    STATE_CACHE_ENTRIES: (_optional(_int(1)), "null (bytes bound only) or an integer >= 1"),
    STATE_CACHE_BYTES: (_int(MIN_CACHE_BYTES), f"an integer >= {MIN_CACHE_BYTES} (bytes)"),
    STATE_TTL_SECS: (_optional(_number()), "null (keys never expire) or a number > 0"),
    CHECKPOINTS_RETAINED: (_int(1), "an integer >= 1"),
    SAVEPOINTS_DIR: (_optional(_is_str), "null or a directory (path or fsspec URL)"),
    STREAMS_FUSION: (_is_bool, "true or false"),
    ERRORS_RETRIES: (_int(0, 100), "an integer from 0 to 100"),
    ERRORS_BACKOFF_MS: (_number(positive=False), "a number >= 0 (milliseconds)"),
    ERRORS_BACKOFF_MAX_MS: (_number(positive=False), "a number >= 0 (milliseconds)"),
    ERRORS_ACTION: (lambda v: v in ERROR_ACTIONS, "dead_letter or fail"),
    TOPOLOGY_ALWAYS_TRY_SERIALIZE: (_is_bool, "true or false"),
    TOPOLOGY_NAME: (_optional(_is_str), "a non-empty string"),
    WORKER_START_TIMEOUT_SECS: (_number(), "a number > 0"),
    WORKER_SHUTDOWN_SECS: (_number(), "a number > 0"),
    WORKER_RESTART_DELAY_SECS: (_number(), "a number > 0"),
    WORKER_RESTART_MAX_DELAY_SECS: (_number(), "a number > 0"),
    WORKER_RESTART_RESET_SECS: (_number(), "a number > 0"),
    WORKER_TIMEOUT_SECS: (_number(), "a number > 0"),
    WORKER_KILL_WHEN_STUCK: (_is_bool, "true or false"),
    LOCAL_HOSTNAME: (_optional(_is_str), "null (found per host) or a host name or address"),
    LOCAL_BIND_ADDRESS: (_optional(_is_str), "null (the advertised address) or an address"),
    LOG_DIR: (_optional(_is_str), "null (<tmp>/sparkstorm-<uid>/logs) or a directory"),
    WORKER_LOG_LEVEL: (
        lambda v: isinstance(v, str) and v.upper() in ("DEBUG", "INFO", "WARNING", "ERROR"),
        "DEBUG, INFO, WARNING or ERROR",
    ),
    WORKER_LOG_MAX_BYTES: (_int(1024), "an integer >= 1024 (bytes)"),
    WORKER_LOG_BACKUPS: (_int(0), "an integer >= 0"),
    NIMBUS_DRIVER_MODE: (lambda v: v in ("process", "inline"), "process or inline"),
    SPARK_EXECUTOR_WAIT_SECS: (_number(), "a number > 0"),
    ZK_SERVERS: (_str_list, "a list of host names"),
    ZK_PORT: (_int(1), "a port number"),
    ZK_ROOT: (lambda v: isinstance(v, str) and v.startswith("/"), "a path starting with /"),
    ZK_CONNECTION_TIMEOUT_SECS: (_number(), "a number > 0"),
    ZK_SESSION_TIMEOUT_SECS: (_number(), "a number > 0"),
    ZK_AUTH_SCHEME: (lambda v: v in (None, "digest"), "null or digest"),
    ZK_AUTH_PAYLOAD: (
        _optional(lambda v: isinstance(v, str) and ":" in v),
        "null or user:password",
    ),
    CLUSTER_SECRET: (
        _optional(lambda v: isinstance(v, str) and len(v) >= 16),
        "null or at least 16 characters",
    ),
    CLUSTER_SECRET_FILE: (_optional(_is_str), "null or the path of a file holding the secret"),
    REDACT_PATTERNS: (_word_list, "a list of non-empty key name parts, e.g. [dsn, auth]"),
    "spark.master": (_is_str, "a Spark master URL"),
    UI_HOST: (_is_str, "an address to bind the web UI to"),
    UI_PORT: (_int(0, 65535), "a port number (0 = any free)"),
    UI_ADMIN_TOKEN: (
        _optional(lambda v: isinstance(v, str) and len(v.strip()) >= 16),
        "null (actions disabled) or at least 16 characters",
    ),
    UI_ADMIN_TOKEN_FILE: (_optional(_is_str), "null or the path of a file holding the token"),
    UI_PUBLISH_INTERVAL_SECS: (
        lambda v: _number()(v) and 0.05 <= v <= 3600,
        "a number of seconds from 0.05 to 3600",
    ),
    UI_CONNECTIONS_MAX: (_int(1, 65_536), "an integer from 1 to 65536"),
    UI_IDLE_TIMEOUT_SECS: (
        lambda v: _number()(v) and 0.1 <= v <= 3600,
        "a number of seconds from 0.1 to 3600",
    ),
    UI_REQUEST_TIMEOUT_SECS: (
        lambda v: _number()(v) and 0.1 <= v <= 3600,
        "a number of seconds from 0.1 to 3600",
    ),
    UI_PROMETHEUS_URL: (
        _optional(lambda v: isinstance(v, str) and v.startswith(("http://", "https://"))),
        "null or a Prometheus server's http:// or https:// URL",
    ),
}


def register_choices(key: str, names: Collection[str]) -> None:
    """Make ``key``'s rule "one of ``names``", for a key whose values a layer above this one
    registers (``topology.state.provider``: the providers of
    :mod:`topology.state.backends`).  The rule reads ``names`` as it is when a value is
    checked; call again when it grows, so that the message lists them all."""
    SCHEMA[key] = (lambda v: isinstance(v, str) and v in names, one_of(names))


def cluster_secret(conf: Mapping[str, Any]) -> bytes | None:
    """The cluster secret (``sparkstorm.cluster.secret``, else the first line of
    ``sparkstorm.cluster.secret.file``), or None when none is configured."""
    secret = conf.get(CLUSTER_SECRET)
    if secret:
        return str(secret).encode()
    path = conf.get(CLUSTER_SECRET_FILE)
    if not path:
        return None
    return read_secret_file(CLUSTER_SECRET_FILE, path, "secret").encode()


def without_credentials(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` without the cluster's own credentials (what may be recorded or shown)."""
    return {k: v for k, v in conf.items() if k not in CLUSTER_CREDENTIALS}


def num_ackers(conf: Mapping[str, Any]) -> int:
    """Acker tasks: ``topology.acker.executors``, or one per worker when it is null."""
    value = conf[TOPOLOGY_ACKER_EXECUTORS]
    return conf[TOPOLOGY_WORKERS] if value is None else value


def defaults_path() -> Path:
    """Where ``defaults.yaml`` is: the source tree's ``conf/``, or the installed copy."""
    for candidate in (
        Path(__file__).resolve().parent.parent / "conf" / "defaults.yaml",
        Path(sys.prefix) / "share" / "sparkstorm" / "defaults.yaml",
    ):
        if candidate.is_file():
            return candidate
    raise ConfigError("conf/defaults.yaml not found: is sparkstorm installed correctly?")


@lru_cache(maxsize=1)
def _defaults() -> dict[str, Any]:
    with open(defaults_path(), encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    missing = set(SCHEMA) - set(data)
    if missing:
        raise ConfigError(f"conf/defaults.yaml lacks keys: {sorted(missing)}")
    return data


def defaults() -> dict[str, Any]:
    """A fresh copy of every key's default value."""
    return dict(_defaults())


def check_value(key: str, value: Any, where: str = "config") -> None:
    """Raise :class:`ConfigError` naming ``key`` when ``value`` breaks its type rule."""
    rule = SCHEMA.get(key)
    if rule is not None and not rule[0](value):
        got = f"{REDACTED} (a {type(value).__name__})" if is_secret_key(key) else repr(value)
        raise ConfigError(f"{where}: {key} must be {rule[1]}, got {got}")


#: Namespaces of sparkstorm's own keys: an unknown key in one of them may be a typo.
KNOWN_PREFIXES = ("topology.", "storm.", "supervisor.", "nimbus.", "sparkstorm.", "ui.")
#: How alike (difflib ratio) an unknown key must be to a known one to count as a typo.
MISSPELLING_CUTOFF = 0.85


def misspelt_key(key: str) -> str | None:
    """The known key ``key`` is probably a misspelling of, or None.

    Only keys in sparkstorm's namespaces (:data:`KNOWN_PREFIXES`) are compared, so the
    user's own keys (``db.url``, ``topology.words.file``) never match unless they are
    within :data:`MISSPELLING_CUTOFF` of a known key.
    """
    if key in SCHEMA or not key.startswith(KNOWN_PREFIXES):
        return None
    close = difflib.get_close_matches(key, list(SCHEMA), n=1, cutoff=MISSPELLING_CUTOFF)
    return close[0] if close else None


def _warn_if_misspelt(key: str, where: str) -> None:
    nearest = misspelt_key(key)
    if nearest is not None:
        warnings.warn(
            f"{where}: unknown config key {key!r}: did you mean {nearest!r}? "
            "(kept as is; sparkstorm does not read it)",
            stacklevel=3,
        )


def resolve(conf: Mapping[str, Any] | None = None, where: str = "config") -> dict[str, Any]:
    """Defaults overlaid with ``conf``, every known key type-checked; an unknown key that
    looks like a misspelt known key warns (:func:`misspelt_key`), other unknown keys are
    kept silently for the components that read them."""
    merged = defaults()
    for key, value in (conf or {}).items():
        if not isinstance(key, str):
            raise ConfigError(f"{where}: config keys must be strings, got {key!r}")
        _warn_if_misspelt(key, where)
        check_value(key, value, where)
        merged[key] = value
    return merged


#: Keys that take effect when set for one component (``add_configuration``).
COMPONENT_KEYS = frozenset(
    {
        TOPOLOGY_TICK_TUPLE_FREQ_SECS,
        TOPOLOGY_MAX_SPOUT_PENDING,
        TOPOLOGY_ADAPTIVE_PENDING,
        TOPOLOGY_AUTO_PENDING,
        TOPOLOGY_DEBUG,
        TOPOLOGY_ALWAYS_TRY_SERIALIZE,
        ERRORS_RETRIES,
        ERRORS_BACKOFF_MS,
        ERRORS_BACKOFF_MAX_MS,
        ERRORS_ACTION,
    }
)


def component_conf(
    topology_conf: Mapping[str, Any], component_id: str, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The conf a component sees: the topology's, with its own overrides checked and applied.

    ``overrides`` is the component's own conf (``get_component_configuration()`` merged
    under the declarer's ``add_configuration``, see ``TopologyBuilder``).  A known key that
    only works topology-wide, or a misspelt known key, warns: the component still sees it
    (user components may read their own keys) but sparkstorm ignores it.
    """
    conf = dict(topology_conf)
    where = f"component {component_id!r}"
    for key, value in overrides.items():
        check_value(key, value, where)
        if key in SCHEMA and key not in COMPONENT_KEYS:
            warnings.warn(
                f"{where}: {key} only counts topology-wide; set it in the topology conf "
                f"(per-component keys: {', '.join(sorted(COMPONENT_KEYS))})",
                stacklevel=2,
            )
        else:
            _warn_if_misspelt(key, where)
        conf[key] = value
    return conf


class Config(dict):
    """A topology configuration: a plain dict with Storm-style setters.

    ``Config(workers=2)`` is not supported; use keys: ``Config({"topology.workers": 2})``
    or the setters below, which check the value at once (keys set directly are checked
    when the topology is submitted).  Every key and its default is in conf/defaults.yaml.

    Args:
        *args: as for ``dict``: a mapping of config keys, or nothing.
        **kwargs: as for ``dict`` (keys with dots need the mapping form).

    Example:
        >>> conf = Config({"topology.debug": False}).set_num_workers(2).set_max_spout_pending(500)
        >>> conf
        {'topology.debug': False, 'topology.workers': 2, 'topology.max.spout.pending': 500}
        >>> conf.set_message_timeout_secs(-1)
        Traceback (most recent call last):
        ...
        topology.errors.ConfigError: config: topology.message.timeout.secs must be ...
    """

    def _set(self, key: str, value: Any) -> Config:
        check_value(key, value)
        self[key] = value
        return self

    def set_num_workers(self, n: int) -> Config:
        """Set ``topology.workers``: how many worker processes run the topology.

        Args:
            n: the number of workers (1 or more).

        Returns:
            This config, so calls chain.

        Raises:
            ConfigError: the value breaks the key's rule (type or range).
        """
        return self._set(TOPOLOGY_WORKERS, n)

    def set_num_ackers(self, n: int) -> Config:
        """Set ``topology.acker.executors``: how many acker tasks track tuple trees.

        Args:
            n: the number of ackers (0 turns tracking off: every emit is acked at once).

        Returns:
            This config, so calls chain.

        Raises:
            ConfigError: the value breaks the key's rule (type or range).
        """
        return self._set(TOPOLOGY_ACKER_EXECUTORS, n)

    def set_max_spout_pending(self, n: int | None) -> Config:
        """Set ``topology.max.spout.pending``: tracked tuples a spout task may have in flight.

        Args:
            n: the limit per spout task, or None for no limit.

        Returns:
            This config, so calls chain.

        Raises:
            ConfigError: the value breaks the key's rule (type or range).
        """
        return self._set(TOPOLOGY_MAX_SPOUT_PENDING, n)

    def set_message_timeout_secs(self, secs: float) -> Config:
        """Set ``topology.message.timeout.secs``: when an unfinished tuple tree fails.

        Args:
            secs: seconds a tracked tuple may take before it is failed and replayed.

        Returns:
            This config, so calls chain.

        Raises:
            ConfigError: the value breaks the key's rule (type or range).
        """
        return self._set(TOPOLOGY_MESSAGE_TIMEOUT_SECS, secs)

    def set_debug(self, debug: bool) -> Config:
        """Set ``topology.debug``: print every emitted tuple to the worker's log (slow).

        Args:
            debug: True to log them.

        Returns:
            This config, so calls chain.

        Raises:
            ConfigError: the value breaks the key's rule (type or range).
        """
        return self._set(TOPOLOGY_DEBUG, debug)
