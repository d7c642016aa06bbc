"""Every setting of the Kafka, PostgreSQL and Redis connectors (and of the bases they pass
settings on to) refuses a bad value with a ``ValueError`` naming the component class and
the setting: ``"PostgresSink: batch_size must be an integer >= 1, got 0"``.  Bad values
are generated (hypothesis, derandomized so CI is repeatable) per kind of setting; no
server and no client library is needed (the constructors import none)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology.connectors.kafka import KafkaSpout
from topology.connectors.kafka_sinks import KafkaSink, KafkaTransactionalSink
from topology.connectors.postgres import PostgresSink, PostgresTransactionalSink
from topology.connectors.postgres_source import PostgresPollingSource
from topology.connectors.redis_sinks import RedisStreamSink, RedisTransactionalSink
from topology.connectors.redis_streams import RedisStreamSpout
from topology.connectors.retry import Backoff

pytestmark = pytest.mark.timeout(120)

FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

_junk = st.one_of(st.booleans(), st.text(max_size=5), st.lists(st.integers(), max_size=2))
_not_finite = st.sampled_from([math.nan, math.inf, -math.inf])

#: Kind of setting -> bad values (None is added for the settings that may not be None).
BAD: dict[str, st.SearchStrategy[Any]] = {
    "positive": st.one_of(st.floats(max_value=0), st.integers(max_value=0), _not_finite, _junk),
    "non-negative": st.one_of(
        st.floats(max_value=0, exclude_max=True), st.integers(max_value=-1), _not_finite, _junk
    ),
    "count": st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), _junk),
    "index": st.one_of(st.integers(max_value=-1), st.floats(allow_nan=True), _junk),
    "string": st.one_of(st.integers(), st.booleans(), st.lists(st.text(), max_size=2)),
    "text": st.one_of(st.just(""), st.integers(), st.booleans(), st.lists(st.text(), max_size=2)),
    "names": st.one_of(
        st.just([]),
        st.text(max_size=5),  # a lone string, where a list is wanted
        st.lists(st.integers(), min_size=1, max_size=3),
        st.text(min_size=1, max_size=5).map(lambda name: [name, name]),  # twice
        st.lists(st.text(min_size=1, max_size=3), max_size=2).map(lambda names: [*names, ""]),
        st.integers(),
    ),
    # a name, or a list of names (tables, topics): neither an empty name nor a bad list
    "name or names": st.one_of(
        st.just(""),
        st.integers(),
        st.booleans(),
        st.just([]),
        st.text(min_size=1, max_size=5).map(lambda name: [name, name]),
        st.lists(st.integers(), min_size=1, max_size=2),
    ),
    "choice": st.one_of(
        st.text(max_size=12).filter(
            lambda t: (
                t not in ("at_least_once", "exactly_once", "utf-8", "json", "bytes")
                and t not in ("earliest", "latest")
            )
        ),
        st.integers(),
    ),
    "mapping": st.one_of(st.integers(), st.text(min_size=1), st.lists(st.integers(), min_size=1)),
    "backoff": st.one_of(st.integers(), st.floats(), st.text(min_size=1), st.just({"x": 1})),
    "function": st.one_of(st.integers(), st.text()),
}

SOURCE = [
    ("guarantee", "choice", False),
    ("max_batch", "count", False),
    ("commit_interval_secs", "non-negative", False),
    ("backoff", "backoff", True),
]
TRANSACTIONAL = [
    ("batch_size", "count", False),
    ("max_retry_secs", "non-negative", True),
    ("backoff", "backoff", True),
]
BATCHING = [*TRANSACTIONAL, ("flush_interval_secs", "positive", False)]
POSTGRES = [
    ("dsn", "text", False),
    ("table", "text", False),
    ("columns", "names", False),
    ("key", "names", True),
    ("connect_timeout_secs", "positive", False),
    ("statement_timeout_secs", "positive", True),
]
KAFKA_SINK = [
    ("topic", "text", False),
    ("bootstrap_servers", "text", False),
    ("key_index", "index", True),
    ("value_index", "index", False),
    ("config", "mapping", True),
    ("timeout_secs", "positive", False),
]
REDIS_SINK = [
    ("url", "text", False),
    ("stream", "text", False),
    ("hash_prefix", "string", False),
    ("fields", "names", True),
    ("maxlen", "count", True),
]

#: (class, valid keyword arguments, [(setting, kind, may be None)]).
CASES: list[tuple[Callable[..., Any], dict[str, Any], list[tuple[str, str, bool]]]] = [
    (
        PostgresSink,
        {"dsn": "dbname=shop", "table": "t", "columns": ["id", "v"]},
        [*POSTGRES, *BATCHING],
    ),
    (
        PostgresTransactionalSink,
        {"dsn": "dbname=shop", "table": "t", "columns": ["id", "v"]},
        [*POSTGRES, ("marker_table", "text", False), *TRANSACTIONAL],
    ),
    (
        PostgresPollingSource,
        {"dsn": "dbname=shop", "table": "t", "columns": ["id"], "position_column": "id"},
        [
            *(s for s in POSTGRES if s[0] not in ("key", "table")),
            ("table", "name or names", False),
            ("position_column", "text", False),
            ("source_id", "text", True),
            ("positions_table", "text", False),
            *SOURCE,
        ],
    ),
    (
        KafkaSpout,
        {"topics": ["orders"], "bootstrap_servers": "k:9092", "group_id": "g"},
        [
            ("topics", "name or names", False),
            ("bootstrap_servers", "text", False),
            ("group_id", "text", False),
            ("value_format", "choice", False),
            ("key_format", "choice", False),
            ("start", "choice", False),
            ("config", "mapping", True),
            ("timeout_secs", "positive", False),
            ("startup_timeout_secs", "non-negative", True),
            *SOURCE,
        ],
    ),
    (KafkaSink, {"topic": "out", "bootstrap_servers": "k:9092"}, [*KAFKA_SINK, *BATCHING]),
    (
        KafkaTransactionalSink,
        {"topic": "out", "bootstrap_servers": "k:9092"},
        [
            *KAFKA_SINK,
            ("transactional_id_prefix", "text", True),
            ("marker_topic", "text", True),
            ("startup_timeout_secs", "non-negative", True),
            *TRANSACTIONAL,
        ],
    ),
    (
        RedisStreamSpout,
        {"url": "redis://r:6379/0", "streams": ["s"], "outputs": ["n"]},
        [
            ("url", "text", False),
            ("streams", "names", False),
            ("outputs", "names", False),
            ("decode", "function", True),
            ("group", "text", True),
            ("block_ms", "index", False),
            ("count", "count", False),
            ("claim_idle_ms", "index", False),
            *SOURCE,
        ],
    ),
    (RedisStreamSink, {"url": "redis://r:6379/0", "stream": "out"}, [*REDIS_SINK, *BATCHING]),
    (
        RedisTransactionalSink,
        {"url": "redis://r:6379/0", "stream": "out"},
        [*REDIS_SINK, *TRANSACTIONAL],
    ),
    (
        RedisStreamSink,
        {"url": "redis://r:6379/0", "hash_key": ["id"]},
        [("hash_key", "names", True)],  # (None: neither stream nor hash_key, see below)
    ),
]

PARAMS = [
    pytest.param(cls, valid, name, kind, optional, id=f"{cls.__name__}-{name}-{kind}")
    for cls, valid, checked in CASES
    for name, kind, optional in checked
]


@pytest.mark.parametrize(("cls", "valid"), [(cls, valid) for cls, valid, _ in CASES])
def test_the_valid_settings_are_taken(cls: Callable[..., Any], valid: dict[str, Any]) -> None:
    cls(**valid)


@pytest.mark.parametrize(("cls", "valid", "name", "kind", "optional"), PARAMS)
def test_a_bad_setting_is_refused_naming_the_class_and_the_setting(
    cls: Callable[..., Any], valid: dict[str, Any], name: str, kind: str, optional: bool
) -> None:
    bad = BAD[kind] if optional else st.one_of(BAD[kind], st.none())

    @FUZZ
    @given(value=bad)
    def refused(value: Any) -> None:
        with pytest.raises(ValueError) as refusal:
            cls(**(valid | {name: value}))
        message = str(refusal.value)
        assert message.startswith(f"{cls.__name__}: {name} must be "), message  # type: ignore[attr-defined]
        assert message.endswith(f"got {value!r}"), message

    refused()


def test_a_key_outside_the_columns_and_maxlen_without_a_stream_name_the_setting() -> None:
    with pytest.raises(ValueError, match=r"^PostgresSink: key must be columns among \['id'\]"):
        PostgresSink("dbname=shop", "t", ["id"], key=["other"])
    with pytest.raises(ValueError, match=r"^RedisStreamSink: maxlen must be None without stream"):
        RedisStreamSink("redis://r:6379/0", hash_key=["id"], maxlen=10)
    with pytest.raises(ValueError, match=r"^RedisTransactionalSink: stream must be given when"):
        RedisTransactionalSink("redis://r:6379/0", stream="s", hash_key=["id"])


@FUZZ
@given(
    name=st.sampled_from(["initial_secs", "max_secs", "factor", "max_retry_secs"]),
    value=st.one_of(st.floats(max_value=0, exclude_max=True), _not_finite, _junk),
)
def test_a_bad_backoff_names_the_setting(name: str, value: Any) -> None:
    with pytest.raises(ValueError) as refusal:
        Backoff(**{name: value})
    assert str(refusal.value).startswith(f"Backoff: {name} must be ")
