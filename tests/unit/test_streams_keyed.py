"""The running keyed operators (``top_n_by_key``, ``dedup_by_key``,
``count_distinct_by_key``, ``last_n_by_key``) against plain-Python references: their
pure per-pair functions (every emit, in order; an entry changes exactly when a result is
emitted, and only after the emit returned; a checkpoint's stored form restores to an
operator that goes on as if nothing happened), then the same through the in-process
runner, across tasks, and in checkpointed topologies whose workers restart."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_streams import Collect, Items, rows, run
from topology.runtime.inprocess import InProcessRunner
from topology.spec import describe_components
from topology.state.checkpoint import hashable
from topology.streams import PairStream, StreamBuilder
from topology.streams.keyed_operators import (
    CountDistinct,
    Dedup,
    KeyedOperator,
    LastN,
    TopN,
)
from topology.streams.steps import StreamOperatorError

pytestmark = pytest.mark.timeout(60)

Pairs = list[tuple[Any, Any]]
Emitted = list[tuple[Any, Any]]


def plain(value: Any) -> Any:
    """Tuples and lists alike (msgpack gives tuples back as lists), in dicts too."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return [plain(v) for v in value] if isinstance(value, list | tuple) else value


# -- the references: one plain loop each ---------------------------------------------------------


def top_n_reference(
    pairs: Pairs, n: int, by: Callable[[Any], Any] | None, reverse: bool
) -> tuple[Emitted, dict[Any, Any]]:
    """Sort everything a key had (stable: equal ranks in arrival order) and emit the first
    ``n`` whenever they are other values than before."""
    rank = (lambda iv: iv[1]) if by is None else (lambda iv: by(iv[1]))
    seen: dict[Any, list[tuple[int, Any]]] = defaultdict(list)
    tops: dict[Any, list[int]] = {}
    emitted = []
    for i, (key, value) in enumerate(pairs):
        seen[key].append((i, value))
        top = sorted(seen[key], key=rank, reverse=reverse)[:n]
        if [j for j, _ in top] != tops.get(key):
            tops[key] = [j for j, _ in top]
            emitted.append((key, [v for _, v in top]))
    return emitted, {k: [pairs[j][1] for j in ids] for k, ids in tops.items()}


def dedup_reference(pairs: Pairs, keep: str) -> tuple[Emitted, dict[Any, Any]]:
    kept: dict[Any, Any] = {}
    emitted = []
    for key, value in pairs:
        if keep == "last" or key not in kept:
            kept[key] = value
            emitted.append((key, value))
    return emitted, kept


def count_distinct_reference(pairs: Pairs) -> tuple[Emitted, dict[Any, Any]]:
    seen: dict[Any, set[Any]] = defaultdict(set)
    emitted = []
    for key, value in pairs:
        if hashable(value) not in seen[key]:
            seen[key].add(hashable(value))
            emitted.append((key, len(seen[key])))
    return emitted, {k: len(s) for k, s in seen.items()}


def last_n_reference(pairs: Pairs, n: int) -> tuple[Emitted, dict[Any, Any]]:
    values: dict[Any, list[Any]] = defaultdict(list)
    emitted = []
    for key, value in pairs:
        values[key].append(value)
        emitted.append((key, values[key][-n:]))
    return emitted, {k: v[-n:] for k, v in values.items()}


# -- the cases: an operator, the same on a stream, and its reference -----------------------------


def by_rank(value: Any) -> Any:
    return value[0]


def by_list_rank(value: Any) -> Any:
    return [value[0] % 3, value[1] % 2]  # a list rank: compared as a tuple


#: (a new operator, the same as a stream operator, its reference over a list of pairs)
Case = tuple[Callable[[], KeyedOperator], Callable[[PairStream[Any, Any]], Any], Any]
#: The cases whose values are ints (count_distinct: ints, strings and lists).
CASES: dict[str, Case] = {
    "top_n": (
        lambda: TopN(3),
        lambda s: s.top_n_by_key(3),
        lambda p: top_n_reference(p, 3, None, True),
    ),
    "top_n_smallest": (
        lambda: TopN(2, reverse=False),
        lambda s: s.top_n_by_key(2, reverse=False),
        lambda p: top_n_reference(p, 2, None, False),
    ),
    "top_1": (
        lambda: TopN(1),
        lambda s: s.top_n_by_key(1),
        lambda p: top_n_reference(p, 1, None, True),
    ),
    "dedup_first": (
        lambda: Dedup("first"),
        lambda s: s.dedup_by_key(),
        lambda p: dedup_reference(p, "first"),
    ),
    "dedup_last": (
        lambda: Dedup("last"),
        lambda s: s.dedup_by_key("last"),
        lambda p: dedup_reference(p, "last"),
    ),
    "count_distinct": (
        CountDistinct,
        lambda s: s.count_distinct_by_key(),
        count_distinct_reference,
    ),
    "last_n": (lambda: LastN(3), lambda s: s.last_n_by_key(3), lambda p: last_n_reference(p, 3)),
}
#: The cases whose values are [rank, id] pairs.
RANKED: dict[str, Case] = {
    "top_n_by": (
        lambda: TopN(3, by=by_rank),
        lambda s: s.top_n_by_key(3, by=by_rank),
        lambda p: top_n_reference(p, 3, by_rank, True),
    ),
    "top_n_by_smallest": (
        lambda: TopN(2, by=by_rank, reverse=False),
        lambda s: s.top_n_by_key(2, by=by_rank, reverse=False),
        lambda p: top_n_reference(p, 2, by_rank, False),
    ),
    "top_n_by_list": (
        lambda: TopN(3, by=by_list_rank),
        lambda s: s.top_n_by_key(3, by=by_list_rank),
        lambda p: top_n_reference(p, 3, by_list_rank, True),
    ),
}
ALL = {**CASES, **RANKED}

keys = st.sampled_from(["a", "b", "c"])
ints = st.lists(st.tuples(keys, st.integers(0, 6)), max_size=40)
ranked = st.lists(st.tuples(keys, st.tuples(st.integers(0, 4), st.integers(0, 99))), max_size=40)
mixed = st.lists(  # count_distinct: numbers, strings and lists alike
    st.tuples(
        keys,
        st.one_of(
            st.integers(0, 4), st.sampled_from(["x", "y"]), st.lists(st.integers(0, 2), max_size=2)
        ),
    ),
    max_size=40,
)


def pairs_for(case: str) -> st.SearchStrategy[Pairs]:
    if case in RANKED:
        return ranked
    return mixed if case == "count_distinct" else ints


def checked_run(operator: KeyedOperator, entries: dict[Any, Any], pairs: Pairs) -> Emitted:
    """Each pair run twice: first with an ``out`` that raises (the entries must not have
    changed when it did; when nothing was emitted they must not have changed at all),
    then for real."""
    emitted: Emitted = []

    def failing(pair: tuple[Any, Any]) -> None:
        raise RuntimeError("the operator after it failed")

    first, real = operator.runner(entries, failing), operator.runner(entries, emitted.append)
    for key, value in pairs:
        before = {k: plain(operator.stored(e)) for k, e in entries.items()}
        try:
            first(key, value)
        except RuntimeError:
            assert {k: plain(operator.stored(e)) for k, e in entries.items()} == before
            real(key, value)
        else:
            assert {k: plain(operator.stored(e)) for k, e in entries.items()} == before
    return emitted


def results(operator: KeyedOperator, entries: dict[Any, Any]) -> dict[Any, Any]:
    return {k: plain(operator.result(e)) for k, e in entries.items()}


@pytest.mark.parametrize("case", sorted(ALL))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_operator_emits_what_its_reference_does(case: str, data: st.DataObject) -> None:
    pairs = data.draw(pairs_for(case))
    make, _, reference = ALL[case]
    operator, entries = make(), {}
    emitted = checked_run(operator, entries, pairs)
    expected, finals = reference(pairs)
    assert plain(emitted) == plain(expected)
    assert results(operator, entries) == plain(finals)


@pytest.mark.parametrize("case", sorted(ALL))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_an_operator_restored_from_its_stored_entries_goes_on_as_before(
    case: str, data: st.DataObject
) -> None:
    """Stored as a checkpoint stores them (msgpack), read back, the entries give the same
    results for the rest of the pairs as entries that were never stored."""
    pairs = data.draw(pairs_for(case))
    cut = data.draw(st.integers(0, len(pairs)))
    make, _, reference = ALL[case]
    operator, entries = make(), {}
    emitted = checked_run(operator, entries, pairs[:cut])
    stored = {k: msgpack.packb(operator.stored(e), use_bin_type=True) for k, e in entries.items()}
    restored = make()
    entries = {k: restored.restored(msgpack.unpackb(v, raw=False)) for k, v in stored.items()}
    emitted += checked_run(restored, entries, pairs[cut:])
    expected, finals = reference(pairs)
    assert plain(emitted) == plain(expected)
    assert results(restored, entries) == plain(finals)


def test_a_value_count_distinct_cannot_hash_is_refused_naming_the_operator() -> None:
    run_pair = CountDistinct().runner({}, lambda pair: None)
    run_pair("k", 1)
    for bad in ({"a": 1}, [1, {"b": 2}]):
        with pytest.raises(
            StreamOperatorError, match="count_distinct_by_key: values must be hashable"
        ):
            run_pair("k", bad)
        with pytest.raises(StreamOperatorError, match="count_distinct_by_key"):
            run_pair("new key", bad)


# -- on the in-process runner ---------------------------------------------------------------


def keyed_topology(
    case: str, pairs: Pairs, parallelism: int = 1, checkpointed: bool = False
) -> StreamBuilder:
    sb = StreamBuilder()
    stream = sb.new_stream(Items(pairs, ["k", "v"]), name="pairs")
    keyed: PairStream[Any, Any] = stream.map_to_pair(lambda row: (row["k"], row["v"]))
    if parallelism > 1:
        keyed = keyed.repartition(parallelism)  # type: ignore[assignment]
    ALL[case][1](keyed).named("op").to(Collect(), name="collect")
    if checkpointed:
        keyed.update_state_by_key(lambda n, v: (n or 0) + 1).named("seen")
    return sb


def operator_results(runner: InProcessRunner) -> dict[Any, Any]:
    """Every task's ``collect_results()``, checked to hold each key in one task only."""
    finals: dict[Any, Any] = {}
    for task in range(runner.topology.components["op"].num_tasks):
        found = runner.instance("op", task).collect_results()
        assert not set(found) & set(finals)
        finals.update(found)
    return plain(finals)


def per_key(emitted: list[Any]) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = defaultdict(list)
    for key, value in emitted:
        out[key].append(plain(value))
    return dict(out)


@pytest.mark.parametrize("case", sorted(ALL))
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_each_operator_on_a_stream_emits_its_references_results_per_key(
    case: str, data: st.DataObject
) -> None:
    """Through tasks on two workers (values through msgpack: tuples arrive as lists)."""
    pairs = data.draw(pairs_for(case))
    runner = run(keyed_topology(case, pairs), turns=40)
    expected, finals = ALL[case][2](pairs)
    assert per_key(rows(runner)) == per_key(expected)
    assert operator_results(runner) == plain(finals)
    assert not runner.errors


@pytest.mark.parametrize("case", ["top_n_by", "dedup_first", "count_distinct"])
def test_keys_spread_over_tasks_and_each_key_has_one(case: str) -> None:
    """Across three tasks, fed in any order: the results that do not depend on the order
    (distinct ranks for top-N) match the reference's."""
    pairs: Pairs = {
        "top_n_by": [(f"k{i % 7}", [i * 7919 % 101, i]) for i in range(120)],  # distinct ranks
        "dedup_first": [(f"k{i % 7}", i % 7) for i in range(120)],  # a key's values alike
        "count_distinct": [(f"k{i % 7}", i * 7919 % 11) for i in range(120)],
    }[case]
    runner = run(keyed_topology(case, pairs, parallelism=3), turns=60)
    assert runner.topology.components["op"].num_tasks == 3
    assert operator_results(runner) == plain(ALL[case][2](pairs)[1])
    assert len({task for task in range(3) if runner.instance("op", task).collect_results()}) > 1


#: Bids whose prices differ within an auction (the top-N does not depend on the order two
#: spout tasks interleave them in).
BIDS = [
    {"auction": i * 7 % 5, "bidder": i * 11 % 4, "price": i * 7919 % 97, "seq": i}
    for i in range(200)
]


@pytest.mark.parametrize("checkpointed", [False, True], ids=["memory", "checkpointed"])
def test_nexmark_shaped_queries_with_dict_values_tuple_keys_and_operators_after(
    checkpointed: bool,
) -> None:
    """q19 (the top 3 bids by price per auction), q18 (each bidder's last bid per
    auction: a tuple key) and a distinct count, each with an operator fused after it."""
    sb = StreamBuilder()
    bids = sb.new_stream(Items(BIDS), parallelism=2, name="bids")
    top = bids.key_by(lambda b: b["auction"]).top_n_by_key(3, by=lambda b: b["price"])
    top.map_values(lambda top: [b["seq"] for b in top]).named("q19").to(Collect(), name="c19")
    last = bids.key_by(lambda b: (b["bidder"], b["auction"])).dedup_by_key("last")
    last.map_values(lambda b: b["seq"]).named("q18").to(Collect(), name="c18")
    bids.map_to_pair(lambda b: (b["auction"], b["bidder"])).count_distinct_by_key().named("q16")
    if checkpointed:
        bids.key_by(lambda b: b["auction"]).update_state_by_key(lambda n, b: (n or 0) + 1)
    runner = run(sb, turns=80, workers=2)
    assert not runner.errors
    by_auction: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for bid in BIDS:
        by_auction[bid["auction"]].append(bid)
    q19 = {a: sorted(bs, key=lambda b: (-b["price"], b["seq"]))[:3] for a, bs in by_auction.items()}
    finals = {}
    for task in range(runner.topology.components["top_n_by_key-q19"].num_tasks):
        finals.update(runner.instance("top_n_by_key-q19", task).collect_results())
    assert {a: [b["seq"] for b in top] for a, top in finals.items()} == {
        a: [b["seq"] for b in top] for a, top in q19.items()
    }
    last_rows = {hashable(k): seq for k, seq in rows(runner, "c18")}
    assert set(last_rows) == {(b["bidder"], b["auction"]) for b in BIDS}
    distinct = {}
    for task in range(runner.topology.components["q16"].num_tasks):
        distinct.update(runner.instance("q16", task).collect_results())
    expected = {a: len({b["bidder"] for b in bs}) for a, bs in by_auction.items()}
    assert distinct == expected


def test_the_operators_are_named_grouped_by_key_and_checkpointed_when_the_topology_is() -> None:
    described = describe_components(keyed_topology("top_n_by", []).build())
    assert described["op"]["operators"] == ["top_n_by_key(op)"]
    assert described["op"]["inputs"][0]["grouping"] == "fields"
    sb = StreamBuilder()
    keyed = sb.new_stream(Items([]), name="n").key_by(len)
    keyed.top_n_by_key(2, by=len)
    keyed.dedup_by_key("last")
    keyed.count_distinct_by_key()
    keyed.last_n_by_key(4)
    described = describe_components(sb.build())
    assert [
        described[c]["operators"]
        for c in ("len-2", "dedup_by_key", "count_distinct_by_key", "last_n_by_key")
    ] == [
        ["top_n_by_key(len-2)"],
        ["dedup_by_key"],
        ["count_distinct_by_key"],
        ["last_n_by_key"],
    ]
    plain_topology = keyed_topology("last_n", []).build()
    assert type(plain_topology.components["op"].instance).__name__ == "KeyedOperatorBolt"
    checkpointed = keyed_topology("last_n", [], checkpointed=True).build()
    assert type(checkpointed.components["op"].instance).__name__ == "CheckpointedKeyedOperatorBolt"


def test_bad_arguments_are_refused_naming_the_operator() -> None:
    sb = StreamBuilder()
    keyed = sb.new_stream(Items([]), name="n").key_by(len)
    for bad in (0, -1, 2.5, "3", True, None):
        with pytest.raises(ValueError, match="top_n_by_key\\(n=...\\) must be an int >= 1"):
            keyed.top_n_by_key(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="last_n_by_key\\(n=...\\) must be an int >= 1"):
            keyed.last_n_by_key(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="top_n_by_key\\(by=...\\) must be a function, got 'price'"):
        keyed.top_n_by_key(3, by="price")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dedup_by_key\\(keep=...\\) must be 'first' or 'last'"):
        keyed.dedup_by_key("latest")
    assert [n.kind for n in sb.nodes] == ["spout", "key_by"]  # nothing was added


# -- checkpointed: entries survive a restore ------------------------------------------------------

CHECKPOINTED = {
    "topology.workers": 2,
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
    "topology.max.spout.pending": 40,  # (msg ids are acked at checkpoints: a pace)
}


def restarted_run(sb: StreamBuilder, items: int) -> InProcessRunner:
    """Run, restarting the operator's worker then the other one while the spout emits,
    until the spout has emitted every item and checkpoints went on past it."""
    runner = InProcessRunner(sb.build(), CHECKPOINTED)
    runner.activate()
    home = runner.assignment.worker_of()[runner.task("op").task_id]

    def turns(count: int) -> None:
        for _ in range(count):
            runner.clock.advance(0.005)  # type: ignore[attr-defined]
            runner.turn()

    for victim in (home, 1 - home):
        turns(40)
        assert runner.instance("pairs").next < items  # (still emitting: the restart matters)
        runner.restart_worker(victim)
    runner.run_until(lambda: runner.instance("pairs").next >= items, advance=0.005)
    turns(100)
    return runner


@pytest.mark.parametrize("case", sorted(ALL))
def test_checkpointed_entries_survive_worker_restarts_exactly_once(case: str) -> None:
    """A checkpointed topology: the operator's entries come back from the last checkpoint
    after its worker restarts, and the spout's replay from there applies each pair once."""
    if case in RANKED:
        pairs: Pairs = [(f"k{i % 5}", [i * 7919 % 13, i]) for i in range(600)]
    else:
        pairs = [
            (f"k{i % 5}", i * 7919 % (9 if case != "count_distinct" else 200)) for i in range(600)
        ]
    runner = restarted_run(keyed_topology(case, pairs, checkpointed=True), len(pairs))
    assert type(runner.instance("op")).__name__ == "CheckpointedKeyedOperatorBolt"
    assert operator_results(runner) == plain(ALL[case][2](pairs)[1])
    stored = dict(runner.instance("op").state.items())
    assert stored and set(stored) <= set(operator_results(runner))
