"""Groupings across real worker processes: each test runs a topology on 2 workers."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

from grouping import FieldsGrouping, GroupingContext, PartialKeyGrouping
from tests.integration.components import Count, Director, KeyTask, Recorder, Split
from tests.integration.helpers import CONF, WORKERS, seen_values, tasks_by_component
from topology import TopologyBuilder
from topology.testing import FeederSpout, complete_topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

VOCABULARY = [f"w{i}" for i in range(40)] + ["storm", "spark", "zeromq", "the", "a"]


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(1, 8))) for _ in range(n)]


def _numbers(n: int) -> FeederSpout:
    return FeederSpout(["n"], [[i] for i in range(n)])


def _spread_over_workers(tasks: dict[int, int]) -> bool:
    return set(tasks.values()) == set(range(WORKERS))


def test_word_count_counts_exactly_and_acks_every_sentence() -> None:
    sentences = _sentences(300, seed=1)
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["sentence"], [[s] for s in sentences]), 2)
    builder.set_bolt("split", Split(), 2).shuffle_grouping("spout")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])

    result = complete_topology(builder.create_topology(), CONF)

    expected = Counter(w for s in sentences for w in s.split())
    counts_by_word: dict[str, list[int]] = defaultdict(list)
    for word, count in result.tuples("count"):
        counts_by_word[word].append(count)
    assert {w: max(c) for w, c in counts_by_word.items()} == dict(expected)
    for word, counts in counts_by_word.items():
        # one task owns each word, and its emits reach the capture bolt in order
        assert counts == list(range(1, expected[word] + 1)), word
    assert len(result.tuples("split")) == expected.total()
    assert sorted(result.acked("spout")) == list(range(len(sentences)))
    assert result.failed("spout") == []
    assert result.errors == {}
    placement = tasks_by_component(result.status)
    for component in ("spout", "split", "count"):
        assert _spread_over_workers(placement[component]), placement


def test_fields_grouping_sends_each_key_to_one_task_in_every_process() -> None:
    sentences = _sentences(200, seed=2)
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["sentence"], [[s] for s in sentences]), 2)
    # all grouping: both split tasks (one per worker) emit every word
    builder.set_bolt("split", Split(), 2).all_grouping("spout")
    builder.set_bolt("keytask", KeyTask(), 4).fields_grouping("split", ["word"])

    result = complete_topology(builder.create_topology(), CONF)

    placement = tasks_by_component(result.status)
    split_tasks = placement["split"]
    keytask_tasks = sorted(placement["keytask"])
    assert len(keytask_tasks) == 4 and _spread_over_workers(placement["keytask"])
    assert len(split_tasks) == 2 and _spread_over_workers(split_tasks)
    assert sorted(result.results["keytask"]) == keytask_tasks

    expected = Counter(w for s in sentences for w in s.split())
    tasks_of: dict[str, set[int]] = defaultdict(set)
    sources_of: dict[str, set[int]] = defaultdict(set)
    arrivals: Counter[str] = Counter()
    for word, task, source_task in result.tuples("keytask"):
        tasks_of[word].add(task)
        sources_of[word].add(source_task)
        arrivals[word] += 1
    assert arrivals == Counter({w: 2 * n for w, n in expected.items()})
    assert all(sources == set(split_tasks) for sources in sources_of.values())

    for source_task in split_tasks:
        reference = FieldsGrouping()
        reference.prepare(
            GroupingContext(
                "split",
                source_task,
                "default",
                ("word",),
                "keytask",
                tuple(keytask_tasks),
                grouping_fields=("word",),
            )
        )
        for word, tasks in tasks_of.items():
            assert tasks == set(reference.choose_tasks([word])), word
    assert len(set().union(*tasks_of.values())) == 4  # the keys did spread over every task


def test_all_grouping_gives_every_task_a_copy_of_every_tuple() -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(300), 2)
    builder.set_bolt("rec", Recorder(), 3).all_grouping("spout")

    result = complete_topology(builder.create_topology(), CONF, capture=False)

    seen = seen_values(result.results["rec"])
    assert len(seen) == 3
    for task, values in seen.items():
        assert sorted(v[0] for v in values) == list(range(300)), task
    assert {r["worker"] for r in result.results["rec"].values()} == set(range(WORKERS))


def test_global_grouping_sends_everything_to_the_lowest_task() -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(300), 2)
    builder.set_bolt("rec", Recorder(), 3).global_grouping("spout")

    result = complete_topology(builder.create_topology(), CONF, capture=False)

    seen = seen_values(result.results["rec"])
    lowest = min(seen)
    assert len(seen) == 3
    assert sorted(v[0] for v in seen[lowest]) == list(range(300))
    assert all(values == [] for task, values in seen.items() if task != lowest)
    # both spout tasks (one per worker) fed the single task
    sources = {entry[1] for entry in result.results["rec"][lowest]["seen"]}
    placement = tasks_by_component(result.status)
    assert sources == set(placement["spout"]) and _spread_over_workers(placement["spout"])


def test_direct_grouping_delivers_to_the_task_the_emitter_chose() -> None:
    n = 300
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n), 2)
    builder.set_bolt("director", Director(), 2).shuffle_grouping("spout")
    builder.set_bolt("sink", Recorder(), 3).direct_grouping("director", "direct")
    builder.set_bolt("plain", Recorder(), 2).fields_grouping("director", ["n"])

    result = complete_topology(builder.create_topology(), CONF, capture=False)

    sink_tasks = sorted(result.results["sink"])
    returned = [r for d in result.results["director"].values() for r in d["returned"]]
    assert all(d["sink_tasks"] == sink_tasks for d in result.results["director"].values())
    assert sorted(r[0] for r in returned) == list(range(n))
    for value, target, direct, plain in returned:
        assert target == sink_tasks[value % 3]
        assert direct == [target]
        assert len(plain) == 1

    landed = []
    for task, values in seen_values(result.results["sink"]).items():
        for value, target in values:
            assert target == task, (value, target, task)
            landed.append((value, task))
    assert sorted(value for value, _ in landed) == list(range(n))  # each exactly once
    assert {task for _, task in landed} == set(sink_tasks)

    plain_landed = sorted(
        (v[0], task) for task, vs in seen_values(result.results["plain"]).items() for v in vs
    )
    # emit() returned the id of the task that then received the tuple
    assert plain_landed == sorted((r[0], r[3][0]) for r in returned)


def test_local_or_shuffle_keeps_tuples_in_the_emitting_worker() -> None:
    n = 400
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n), 2)
    builder.set_bolt("local", Recorder(), 2).local_or_shuffle_grouping("spout")

    result = complete_topology(builder.create_topology(), CONF, capture=False)

    placement = tasks_by_component(result.status)
    for worker in range(WORKERS):  # one emitter and one receiver in every worker
        assert list(placement["spout"].values()).count(worker) == 1, placement
        assert list(placement["local"].values()).count(worker) == 1, placement
    received = []
    for task, r in result.results["local"].items():
        assert r["seen"], f"task {task} received nothing"
        for _component, source_task, _stream, values in r["seen"]:
            assert source_task in r["worker_tasks"], (task, source_task, r["worker_tasks"])
            assert placement["spout"][source_task] == r["worker"]
            received.append(values[0])
    assert sorted(received) == list(range(n))


def test_partial_key_grouping_splits_a_hot_key_and_balances_load() -> None:
    rng = random.Random(3)
    n = 4000
    keys = ["hot" if rng.random() < 0.5 else f"k{rng.randrange(100)}" for _ in range(n)]
    assert 0.45 < keys.count("hot") / n < 0.55
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["key", "i"], [[k, i] for i, k in enumerate(keys)]), 2)
    builder.set_bolt("pk", Recorder(), 4).partial_key_grouping("spout", ["key"])

    result = complete_topology(builder.create_topology(), CONF, capture=False)

    seen = seen_values(result.results["pk"])
    assert len(seen) == 4
    tasks_of: dict[str, set[int]] = defaultdict(set)
    indexes = []
    for task, values in seen.items():
        for key, i in values:
            assert keys[i] == key
            tasks_of[key].add(task)
            indexes.append(i)
    assert sorted(indexes) == list(range(n))
    assert all(len(tasks) <= 2 for tasks in tasks_of.values()), tasks_of
    assert len(tasks_of["hot"]) == 2

    targets = tuple(sorted(seen))
    reference = PartialKeyGrouping()
    reference.prepare(
        GroupingContext(
            "spout", 0, "default", ("key", "i"), "pk", targets, grouping_fields=("key",)
        )
    )
    for key, tasks in tasks_of.items():
        assert tasks <= {targets[p] for p in reference.candidates([key])}, key

    loads = [len(values) for values in seen.values()]
    assert max(loads) / (n / 4) < 1.3, loads

    # the same stream under a fields grouping would not be balanced: the skew is real
    fields = FieldsGrouping()
    fields.prepare(
        GroupingContext(
            "spout", 0, "default", ("key", "i"), "pk", targets, grouping_fields=("key",)
        )
    )
    field_loads = Counter(fields.choose_tasks([k, 0])[0] for k in keys)
    assert max(field_loads.values()) / (n / 4) > 1.9
