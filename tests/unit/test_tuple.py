"""Unit tests for topology.tuple: field access, errors, ticks, as_dict."""

from __future__ import annotations

import pytest

from topology.constants import SYSTEM_COMPONENT, SYSTEM_TASK_ID, TICK_STREAM
from topology.runtime.tasks.task import TICK_SOURCE
from topology.tuple import Tuple, TupleSource

pytestmark = pytest.mark.timeout(30)

SOURCE = TupleSource("split", 7, "words", ("word", "count", "lang"))


def make(values: list | None = None, source: TupleSource = SOURCE) -> Tuple:
    return Tuple(["storm", 3, "en"] if values is None else values, source)


def test_access_by_name_and_index() -> None:
    t = make()
    assert t["word"] == "storm"
    assert t["count"] == 3
    assert t["lang"] == "en"
    assert t[0] == "storm" and t[1] == 3 and t[2] == "en"
    assert t[-1] == "en"
    assert t[0:2] == ["storm", 3]


def test_index_out_of_range() -> None:
    with pytest.raises(IndexError):
        make()[3]


def test_unknown_field_message_names_field_stream_and_component() -> None:
    with pytest.raises(KeyError) as info:
        make()["wrod"]
    message = info.value.args[0]
    assert "'wrod'" in message
    assert "'words'" in message  # the stream
    assert "'split'" in message  # the component
    assert "['word', 'count', 'lang']" in message  # the fields it does have
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_get_with_default() -> None:
    t = make()
    assert t.get("count") == 3
    assert t.get("missing") is None
    assert t.get("missing", 42) == 42
    assert t.get("word", "fallback") == "storm"


def test_get_returns_falsy_values_not_the_default() -> None:
    t = make(["", 0, None])
    assert t.get("word", "d") == ""
    assert t.get("count", "d") == 0
    assert t.get("lang", "d") is None


def test_origin_properties() -> None:
    t = Tuple(["a", 1, "x"], SOURCE, id=123, anchors={5: 6})
    assert t.source_component == "split"
    assert t.source_task == 7
    assert t.stream == "words"
    assert t.fields == ("word", "count", "lang")
    assert t.id == 123
    assert t.anchors == {5: 6}
    assert Tuple(["a"], SOURCE).id is None


def test_as_dict() -> None:
    assert make().as_dict() == {"word": "storm", "count": 3, "lang": "en"}


def test_len_iter_and_repr() -> None:
    t = make()
    assert len(t) == 3
    assert list(t) == ["storm", 3, "en"]
    word, count, lang = t
    assert (word, count, lang) == ("storm", 3, "en")
    text = repr(t)
    assert "'storm'" in text and "split:7" in text and "'words'" in text


def test_is_tick() -> None:
    assert not make().is_tick()
    tick = Tuple([5.0], TICK_SOURCE)
    assert tick.is_tick()
    assert tick["freq"] == 5.0
    assert tick.source_component == SYSTEM_COMPONENT
    assert tick.source_task == SYSTEM_TASK_ID
    assert tick.stream == TICK_STREAM


def test_tick_stream_from_another_component_is_not_a_tick() -> None:
    # only the system component's tick stream counts, not a user stream that shares the name
    assert not Tuple([1], TupleSource("split", 3, TICK_STREAM, ("freq",))).is_tick()
    assert not Tuple([1], TupleSource(SYSTEM_COMPONENT, -1, "default", ("freq",))).is_tick()


def test_tuples_share_their_source() -> None:
    a, b = make(), make(["flink", 1, "de"])
    assert a.source is b.source
    assert b["word"] == "flink"
    assert SOURCE.index == {"word": 0, "count": 1, "lang": 2}


def test_tuple_has_no_instance_dict() -> None:
    with pytest.raises(AttributeError):
        make().extra = 1  # type: ignore[attr-defined]


def test_tuple_is_a_sequence() -> None:
    # the compiled storage reads tup[i] through both protocols, as a Python __getitem__ did
    import bisect

    t = Tuple([1, 2, 3], TupleSource("a", 1, "default", ("x", "y", "z")))
    assert list(reversed(t)) == [3, 2, 1]
    assert bisect.bisect_left(t, 2) == 1
    assert t[-1] == 3 and list(t) == [1, 2, 3] and len(t) == 3
