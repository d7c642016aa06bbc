"""The conf a topology's workers run with, as ``sparkstorm ui`` and the API show it (pure).

A topology's record keeps the conf it was submitted with (the defaults overlaid with its
own keys), but its workers do not reach ZooKeeper with the record's
``storm.zookeeper.*`` keys: the driver that launches them hands them its own
(:func:`topology.deploy.cluster.topology_driver.zk_conf` — ``sparkstorm local``'s
embedded ZooKeeper is on a free port, not the default 2181); nor do they run on the
record's ``spark.*`` keys alone: the driver's Spark application has the nimbus's keys
under the topology's (``spark.master`` ``local[2]``, not the default ``local[*]``).  So the
driver writes both into its node (``"zookeeper"``, credentials left out, and ``"spark"``,
secrets redacted), and :func:`effective_conf` lays them over the record's conf.  Before
a driver holds its node, the ZooKeeper keys of the client reading the record stand in: it
reads the record from the ZooKeeper the driver will read it from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topology import config as cfg
from topology.errors import ConfigError
from topology.redaction import redact

#: The ZooKeeper keys a driver hands its workers that may be shown (not the credentials).
ZOOKEEPER_KEYS = (
    cfg.ZK_SERVERS,
    cfg.ZK_PORT,
    cfg.ZK_ROOT,
    cfg.ZK_CONNECTION_TIMEOUT_SECS,
    cfg.ZK_SESSION_TIMEOUT_SECS,
    cfg.ZK_AUTH_SCHEME,
)


def shown_zookeeper(conf: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`ZOOKEEPER_KEYS` of ``conf`` (what a driver records in its node).

    >>> shown_zookeeper({"storm.zookeeper.port": 2182, "storm.zookeeper.auth.payload": "u:p"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'storm.zookeeper.servers': None, 'storm.zookeeper.port': 2182,
     'storm.zookeeper.root': None, 'storm.zookeeper.connection.timeout.secs': None,
     'storm.zookeeper.session.timeout.secs': None, 'storm.zookeeper.auth.scheme': None}
    """
    return {key: conf.get(key) for key in ZOOKEEPER_KEYS}


def shown_spark(conf: Mapping[str, Any], spark_conf: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``spark.*`` keys of a driver's Spark application (``spark_conf``; none when it
    has none), secret-looking values redacted (``conf``'s ``sparkstorm.redact.patterns``
    count): what a driver records in its node.

    >>> shown_spark({}, {"spark.master": "local[2]", "spark.authenticate.secret": "s"})
    {'spark.master': 'local[2]', 'spark.authenticate.secret': '****'}
    """
    own = {k: v for k, v in (spark_conf or {}).items() if str(k).startswith("spark.")}
    return redact(own, conf.get(cfg.REDACT_PATTERNS) or ())


def effective_conf(
    record_conf: Mapping[str, Any], driver: Any, client_conf: Mapping[str, Any]
) -> dict[str, Any]:
    """``record_conf`` with the ZooKeeper keys the workers run with: those of ``driver``'s
    node (its ``"zookeeper"`` object; only :data:`ZOOKEEPER_KEYS` are taken, and only when
    each passes its key's check), else ``client_conf``'s; and the ``spark.*`` keys of its
    node's ``"spark"`` object (strings, numbers and booleans).  Not redacted here.

    >>> effective_conf({"storm.zookeeper.port": 2181, "topology.workers": 2},
    ...                {"zookeeper": {"storm.zookeeper.port": 40123}}, {})
    {'storm.zookeeper.port': 40123, 'topology.workers': 2}
    """
    source = driver.get("zookeeper") if isinstance(driver, Mapping) else None
    if not isinstance(source, Mapping):
        source = client_conf
    out = dict(record_conf)
    for key in ZOOKEEPER_KEYS:
        if key not in source:
            continue
        try:
            cfg.check_value(key, source[key], "driver")
        except ConfigError:  # a driver node is not trusted: a bad value is not shown
            continue
        out[key] = source[key]
    spark = driver.get("spark") if isinstance(driver, Mapping) else None
    for key, value in spark.items() if isinstance(spark, Mapping) else ():
        if isinstance(key, str) and key.startswith("spark.") and len(key) <= 200:
            if isinstance(value, str | int | float | bool) and len(str(value)) <= 4096:
                out[key] = value
    return out
