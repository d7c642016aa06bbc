"""Unit tests for grouping/: each grouping's routing guarantee, hashing, the factory."""

from __future__ import annotations

import collections
import doctest
import json
import os
import random
import re
import subprocess
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
import pytest

import grouping
import grouping.custom
from grouping import (
    GROUPING_KINDS,
    CustomGrouping,
    Grouping,
    GroupingContext,
    GroupingSpec,
    create_grouping,
    stable_hash,
)
from grouping.fields import FieldsGrouping
from grouping.hashing import KEY_CACHE_SIZE, second_hash
from grouping.partial_key import PartialKeyGrouping

pytestmark = pytest.mark.timeout(30)

REPO = Path(__file__).resolve().parents[2]
FIELDS = ("word", "count")
TARGETS = (3, 4, 7, 9, 12)


def ctx(
    targets: Sequence[int] = TARGETS,
    *,
    source_task: int = 1,
    local: Sequence[int] = (),
    key: Sequence[str] = (),
    fields: Sequence[str] = FIELDS,
) -> GroupingContext:
    return GroupingContext(
        source_component="split",
        source_task=source_task,
        stream="default",
        source_fields=tuple(fields),
        target_component="count",
        target_tasks=tuple(targets),
        local_tasks=frozenset(local),
        grouping_fields=tuple(key),
    )


def prepared(spec: GroupingSpec, context: GroupingContext) -> Grouping:
    g = create_grouping(spec)
    g.prepare(context)
    return g


def words(n: int) -> list[str]:
    return [f"w{i}-{i * 7919 % 1000}" for i in range(n)]


class ByLength(CustomGrouping):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        self.seen.append(values[0])
        return [self.target_tasks[len(str(values[0])) % len(self.target_tasks)]]


# --------------------------------------------------------------------------- hashing

HASH_KEYS: list[list[Any]] = [
    ["storm"],
    ["ünïcødé", 42],
    [b"\x00\xffbytes"],
    [1.5, -0.0, 1e300],
    [True, False, None],
    [-(2**63), 2**64 - 1, 0],
    [[1, ["nested", {"k": [None, b"v"]}]]],
    [{"a": 1, "b": [2.5, "x"]}],
    [],
]


def test_stable_hash_is_crc32_of_msgpack_and_pinned() -> None:
    for key in HASH_KEYS:
        assert stable_hash(key) == zlib.crc32(msgpack.packb(list(key), use_bin_type=True))
        assert 0 <= stable_hash(key) < 2**32
    # Pinned: a change here would re-partition every fields-grouped topology.
    assert stable_hash(["storm"]) == 2863400435
    assert stable_hash([1, "a", None, True, 2.5, b"x", [1, 2], {"k": "v"}]) == 461481841
    assert second_hash(0) == 16294208416658607535


def test_stable_hash_same_in_process_with_other_hash_seed() -> None:
    code = (
        "import json, sys, msgpack\n"
        "from grouping.hashing import stable_hash, second_hash\n"
        "keys = msgpack.unpackb(bytes.fromhex(sys.stdin.read()), raw=False)\n"
        "print(json.dumps([[stable_hash(k), second_hash(stable_hash(k))] for k in keys]))\n"
    )
    # str and bytes keys are the ones whose built-in hash() differs between seeds.
    keys = HASH_KEYS + [[w] for w in words(50)] + [[w.encode()] for w in words(50)]
    env = {**os.environ, "PYTHONHASHSEED": "123", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=msgpack.packb(keys, use_bin_type=True).hex(),
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    theirs = json.loads(out.stdout)
    assert theirs == [[stable_hash(k), second_hash(stable_hash(k))] for k in keys]
    assert len({h for h, _ in theirs}) == len(keys)


def test_stable_hash_compares_encodings_not_python_equality() -> None:
    assert stable_hash([1]) != stable_hash([1.0]) != stable_hash([True])
    assert stable_hash(["a"]) != stable_hash([b"a"])
    assert stable_hash([(1, 2)]) == stable_hash([[1, 2]])
    assert stable_hash(("a", 1)) == stable_hash(["a", 1])


def test_stable_hash_rejects_unencodable_keys() -> None:
    with pytest.raises(TypeError, match="cannot be hashed"):
        stable_hash([{1, 2}])
    with pytest.raises(TypeError, match="cannot be hashed"):
        stable_hash([2**70])


def test_second_hash_is_deterministic_and_mixes() -> None:
    hs = [stable_hash([w]) for w in words(2000)]
    seconds = [second_hash(h) for h in hs]
    assert seconds == [second_hash(h) for h in hs]
    assert len(set(seconds)) == len(set(hs))
    # The second choice is not a function of the first choice: for keys sharing
    # h % 4, second_hash % 4 still takes every value.
    same_first = [s % 4 for h, s in zip(hs, seconds, strict=True) if h % 4 == 0]
    assert set(same_first) == {0, 1, 2, 3}


def test_no_builtin_hash_calls_in_grouping_package() -> None:
    for path in (REPO / "grouping").glob("*.py"):
        assert not re.search(r"\bhash\(", path.read_text()), path


# --------------------------------------------------------------------------- shuffle


@pytest.mark.parametrize("kind", ["shuffle", "none"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_shuffle_spreads_evenly(kind: str, n: int) -> None:
    targets = tuple(range(10, 10 + n))
    for source_task in (0, 1, 17):
        g = prepared(GroupingSpec(kind), ctx(targets, source_task=source_task))
        counts = collections.Counter({t: 0 for t in targets})
        for i in range(1, 7 * n + 1):
            (task,) = g.choose_tasks(["x", i])
            counts[task] += 1
            assert max(counts.values()) - min(counts.values()) <= 1
        assert set(counts) == set(targets)
        assert all(c == 7 for c in counts.values())


def test_shuffle_returns_prebuilt_lists_and_sources_start_differently() -> None:
    g = prepared(GroupingSpec("shuffle"), ctx())
    first_round = [g.choose_tasks(["x", 0]) for _ in TARGETS]
    second_round = [g.choose_tasks(["x", 0]) for _ in TARGETS]
    assert all(a is b for a, b in zip(first_round, second_round, strict=True))
    firsts = {
        prepared(GroupingSpec("shuffle"), ctx(source_task=s)).choose_tasks(["x", 0])[0]
        for s in range(20)
    }
    assert len(firsts) >= 3


# --------------------------------------------------------------------------- fields


def test_fields_same_key_same_task_across_source_tasks() -> None:
    spec = GroupingSpec("fields", ("word",))
    gs = [prepared(spec, ctx(key=("word",), source_task=s)) for s in range(4)]
    for w in words(500):
        chosen = {tuple(g.choose_tasks([w, i])) for i, g in enumerate(gs)}
        again = {tuple(g.choose_tasks([w, 99])) for g in gs}  # cached path
        assert len(chosen) == 1 and chosen == again
        assert chosen == {(TARGETS[stable_hash([w]) % len(TARGETS)],)}


def test_fields_different_keys_spread_over_all_tasks() -> None:
    g = prepared(GroupingSpec("fields", ("word",)), ctx(key=("word",)))
    counts = collections.Counter(g.choose_tasks([w, 1])[0] for w in words(5000))
    assert set(counts) == set(TARGETS)
    mean = 5000 / len(TARGETS)
    assert min(counts.values()) > 0.8 * mean and max(counts.values()) < 1.2 * mean


def test_fields_multi_field_and_uncacheable_keys() -> None:
    g = prepared(GroupingSpec("fields", ("count", "word")), ctx(key=("count", "word")))
    for value in ["a", 1, 2.5, None, True, [1, "x"], {"k": [1]}, b"b"]:
        for w in words(20):
            expected = TARGETS[stable_hash([value, w]) % len(TARGETS)]
            assert g.choose_tasks([w, value]) == [expected]
            assert g.choose_tasks([w, value]) == [expected]
    single = prepared(GroupingSpec("fields", ("count",)), ctx(key=("count",)))
    for value in [[1, 2], {"a": 1}, 2.5, (1, 2)]:
        assert single.choose_tasks(["w", value]) == [TARGETS[stable_hash([value]) % 5]]


def test_fields_cache_does_not_conflate_equal_values_of_other_types() -> None:
    # 1 == 1.0 == True in Python but they are different keys: the task chosen for
    # each must not depend on which of them this source task saw first.
    targets = tuple(range(100, 164))
    keys: list[Any] = [1, 1.0, True, 0, 0.0, -0.0, False, (1, "a"), (True, "a")]
    expected = {repr(k): targets[stable_hash([k]) % len(targets)] for k in keys}
    assert len(set(expected.values())) > 3  # the test can tell the keys apart
    for order in (keys, keys[::-1]):
        g = prepared(GroupingSpec("fields", ("count",)), ctx(targets, key=("count",)))
        for k in order * 2:
            assert g.choose_tasks(["w", k]) == [expected[repr(k)]], k


def test_fields_cache_is_bounded() -> None:
    g = FieldsGrouping()
    g.prepare(ctx(key=("word",)))
    for i in range(KEY_CACHE_SIZE + 10):
        g.choose_tasks([i, 0])
    assert 0 < len(g._cache) <= KEY_CACHE_SIZE
    assert g.choose_tasks([5, 0]) == [TARGETS[stable_hash([5]) % len(TARGETS)]]


# --------------------------------------------------------------------------- all / global / direct


def test_all_sends_to_every_task() -> None:
    g = prepared(GroupingSpec("all"), ctx())
    assert g.choose_tasks(["a", 1]) == list(TARGETS)
    assert g.choose_tasks(["b", 2]) == list(TARGETS)


def test_global_picks_lowest_task() -> None:
    assert prepared(GroupingSpec("global"), ctx()).choose_tasks(["a", 1]) == [3]
    unsorted = prepared(GroupingSpec("global"), ctx((10, 3, 7), source_task=9))
    assert all(unsorted.choose_tasks([w, 1]) == [3] for w in words(50))


def test_direct_never_routes() -> None:
    g = prepared(GroupingSpec("direct"), ctx())
    assert g.choose_tasks(["a", 1]) == []


# --------------------------------------------------------------------------- local_or_shuffle


def test_local_or_shuffle_prefers_local_tasks() -> None:
    g = prepared(GroupingSpec("local_or_shuffle"), ctx(local=(4, 9, 999)))
    counts = collections.Counter(g.choose_tasks(["a", i])[0] for i in range(100))
    assert counts == {4: 50, 9: 50}


def test_local_or_shuffle_falls_back_to_all_tasks() -> None:
    for local in [(), (999,)]:
        g = prepared(GroupingSpec("local_or_shuffle"), ctx(local=local))
        counts = collections.Counter(g.choose_tasks(["a", i])[0] for i in range(50))
        assert counts == {t: 10 for t in TARGETS}


# --------------------------------------------------------------------------- partial_key


def test_partial_key_candidates_distinct_and_key_on_at_most_two_tasks() -> None:
    for n in (2, 3, 4, 8):
        targets = tuple(range(n))
        g = prepared(GroupingSpec("partial_key", ("word",)), ctx(targets, key=("word",)))
        assert isinstance(g, PartialKeyGrouping)
        tasks_per_key: dict[str, set[int]] = collections.defaultdict(set)
        for rnd in range(30):
            for w in words(200):
                a, b = g.candidates([w])
                assert a != b
                tasks_per_key[w].add(g.choose_tasks([w, rnd])[0])
        assert all(1 <= len(s) <= 2 for s in tasks_per_key.values())
        # A key sent repeatedly alternates between exactly its two candidates.
        hot = {g.choose_tasks(["hot", i])[0] for i in range(10)}
        assert hot == {targets[c] for c in g.candidates(["hot"])}
    one = prepared(GroupingSpec("partial_key", ("word",)), ctx((5,), key=("word",)))
    assert {one.choose_tasks([w, 0])[0] for w in words(20)} == {5}


def test_partial_key_candidates_same_in_every_source_task() -> None:
    spec = GroupingSpec("partial_key", ("word",))
    gs = [prepared(spec, ctx(key=("word",), source_task=s)) for s in range(3)]
    seen: dict[str, set[int]] = collections.defaultdict(set)
    for i in range(20):
        for g in gs:
            for w in words(100):
                seen[w].add(g.choose_tasks([w, i])[0])
    assert all(len(s) <= 2 for s in seen.values())


def test_partial_key_multi_field_and_equal_values_of_other_types() -> None:
    targets = tuple(range(100, 164))
    keys: list[Any] = [1, 1.0, True, 0, -0.0, False, "a", b"a", [1, "x"], {"k": 2}]
    for key_fields in [("count",), ("count", "word")]:
        for order in (keys, keys[::-1]):
            g = prepared(GroupingSpec("partial_key", key_fields), ctx(targets, key=key_fields))
            assert isinstance(g, PartialKeyGrouping)
            for k in order * 3:
                values = ["w", k]
                key = [values[FIELDS.index(f)] for f in key_fields]
                allowed = {targets[c] for c in g.candidates(key)}
                assert len(allowed) == 2
                assert g.choose_tasks(values)[0] in allowed, (key_fields, k)


def skewed_stream(total: int = 20_000) -> list[list[Any]]:
    """One key is half the stream, the rest Zipf-like over 500 keys."""
    tail = words(500)
    weights = [1 / (rank + 1) for rank in range(len(tail))]
    scale = (total // 2) / sum(weights)
    stream: list[list[Any]] = [["hot", 1]] * (total // 2)
    for w, weight in zip(tail, weights, strict=True):
        stream += [[w, 1]] * max(1, round(weight * scale))
    random.Random(7).shuffle(stream)  # deterministic interleaving
    return stream


def max_over_mean(kind: str, stream: list[list[Any]]) -> float:
    targets = (1, 2, 3, 4)
    g = prepared(GroupingSpec(kind, ("word",)), ctx(targets, key=("word",)))
    counts = collections.Counter({t: 0 for t in targets})
    for values in stream:
        for task in g.choose_tasks(values):
            counts[task] += 1
    return max(counts.values()) / (sum(counts.values()) / len(targets))


def test_partial_key_balances_skewed_load_far_better_than_fields() -> None:
    stream = skewed_stream()
    pkg = max_over_mean("partial_key", stream)
    fields = max_over_mean("fields", stream)
    assert fields >= 2.0  # the hot key alone is half the stream on one of 4 tasks
    assert pkg < 1.25
    assert fields - pkg > 0.8


# --------------------------------------------------------------------------- custom


def test_custom_grouping_is_deepcopied_per_create_grouping() -> None:
    original = ByLength()
    spec = GroupingSpec("custom", custom=original)
    g1, g2 = create_grouping(spec), create_grouping(spec)
    assert isinstance(g1, ByLength) and isinstance(g2, ByLength)
    assert g1 is not original and g2 is not original and g1 is not g2
    g1.prepare(ctx())
    g2.prepare(ctx((20, 21)))
    assert g1.choose_tasks(["storm", 1]) == [TARGETS[5 % 5]]
    assert g2.choose_tasks(["storm", 1]) == [21]
    assert g1.seen == ["storm"] and g2.seen == ["storm"] and original.seen == []
    assert g1.target_tasks == TARGETS and g1.context.target_component == "count"


def test_custom_docstring_example_runs() -> None:
    result = doctest.testmod(grouping.custom)
    assert result.attempted > 0 and result.failed == 0


def test_custom_base_requires_override_and_spec_requires_instance() -> None:
    g = CustomGrouping()
    g.prepare(ctx())
    with pytest.raises(NotImplementedError, match="CustomGrouping"):
        g.choose_tasks(["a", 1])
    for bad in [None, "not a grouping", ByLength]:
        with pytest.raises(TypeError, match="custom"):
            create_grouping(GroupingSpec("custom", custom=bad))


# --------------------------------------------------------------------------- factory / contract


def test_grouping_kinds() -> None:
    assert set(GROUPING_KINDS) == {
        "shuffle",
        "fields",
        "all",
        "global",
        "none",
        "direct",
        "local_or_shuffle",
        "partial_key",
        "custom",
    }


def test_unknown_kind_error_names_it() -> None:
    with pytest.raises(ValueError, match="'bogus_kind'"):
        create_grouping(GroupingSpec("bogus_kind"))


@pytest.mark.parametrize("kind", ["fields", "partial_key"])
def test_keyed_kinds_need_fields(kind: str) -> None:
    with pytest.raises(ValueError, match=kind):
        create_grouping(GroupingSpec(kind))
    g = create_grouping(GroupingSpec(kind, ("wrd",)))
    with pytest.raises(ValueError, match="'wrd'"):
        g.prepare(ctx(key=("wrd",)))


@pytest.mark.parametrize("kind", [k for k in GROUPING_KINDS if k not in ("direct", "custom")])
def test_no_target_tasks_is_an_error(kind: str) -> None:
    g = create_grouping(GroupingSpec(kind, ("word",)))
    with pytest.raises(ValueError, match="no target tasks"):
        g.prepare(ctx(()))


def spec_for(kind: str) -> GroupingSpec:
    if kind == "custom":
        return GroupingSpec(kind, custom=ByLength())
    return GroupingSpec(kind, ("word",) if kind in grouping.KEYED_KINDS else ())


@pytest.mark.parametrize("kind", GROUPING_KINDS)
def test_choices_are_subsets_of_targets_and_instances_fresh(kind: str) -> None:
    spec = spec_for(kind)
    a, b = create_grouping(spec), create_grouping(spec)
    assert a is not b and isinstance(a, Grouping)
    a.prepare(ctx(key=spec.fields, local=(7, 12)))
    values: list[list[Any]] = [[w, i] for i, w in enumerate(words(300))]
    values += [[[1, 2], 0], [{"k": "v"}, 1], [None, 2], [2.5, 3], [b"x", 4]]
    for v in values:
        chosen = a.choose_tasks(v)
        assert set(chosen) <= set(TARGETS)
        assert len(chosen) == len(set(chosen))
        if kind not in ("all", "direct"):
            assert len(chosen) == 1
