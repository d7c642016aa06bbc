"""Nexmark q0-q8 as bytewax 0.21.1 dataflows, for ``run.py``'s peer figures.

``python -m bytewax.run "bytewax_flows:build('q7', FOLDER, EVENTS, SEED, RATE)" -w 1 [-i p
-a ADDRESSES]`` (``run.py`` starts one process per worker, as ``bench/peer_cases.py``
does).  Worker *p* of *P* generates events ``p, p + P, ...`` below ``EVENTS`` with the
same generator as sparkstorm's spout, ``BATCH`` a ``next_batch``; the query follows,
written with bytewax's operators the way its docs show (``filter``/``map``,
``stateful_flat_map`` for the regular joins, ``fold_window`` / ``count_window`` /
``join_window`` with an ``EventClock`` for the windows; keys are strings, as bytewax
requires); a sink keeps the same digest as sparkstorm's :class:`~.sinks.DigestSink` and
writes it, with the worker's CPU time and wall time from its first batch to its close, to
``FOLDER/bytewax-<p>.json`` when the dataflow ends (bounded input: bytewax closes every
window at the end).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import DynamicSource, StatelessSourcePartition
from bytewax.operators.windowing import (
    EventClock,
    SlidingWindower,
    TumblingWindower,
    count_window,
    fold_window,
    join_window,
)
from bytewax.outputs import DynamicSink, StatelessSinkPartition

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nexmark import reference as ref  # noqa: E402
from nexmark.generator import (  # noqa: E402
    A_CATEGORY,
    A_EXPIRES,
    A_ID,
    A_SELLER,
    AUCTION,
    B_AUCTION,
    B_BIDDER,
    B_EXTRA,
    B_PRICE,
    BID,
    DATETIME,
    KIND,
    P_ID,
    P_NAME,
    P_STATE,
    PERSON,
    GeneratorConfig,
    generator,
)
from nexmark.sinks import MASK, canon, latest_digest, row_hash  # noqa: E402

#: Events a source partition generates per ``next_batch`` (bytewax's own sources' default).
BATCH = 1000
#: Queries written here.
FLOWS = ("q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8")
UPDATING = frozenset({"q4", "q5", "q6"})
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Event-time disorder the windows accept.  bytewax's watermark is the newest time a
#: window operator saw minus this (not the oldest over its inputs, as Flink's or
#: sparkstorm's), so it must cover the skew between workers — a second of wall-clock skew
#: at start is minutes of event time — or their events come late and are dropped: a day,
#: so windows close when the bounded input ends (bytewax closes every window at EOF).
WAIT = timedelta(days=1)


def _no_system_time() -> datetime:
    """The clocks' "system time": fixed, so the watermark follows event time only."""
    return EPOCH


def _clock(ts_getter: Any) -> EventClock:
    return EventClock(ts_getter, WAIT, now_getter=_no_system_time, to_system_utc=_never)


def _never(_: datetime) -> None:
    return None


def _publish(path: str, data: dict[str, Any]) -> None:
    with open(path + ".tmp", "w") as out:
        json.dump(data, out)
    os.replace(path + ".tmp", path)


class _Events(StatelessSourcePartition[Any]):
    def __init__(self, folder: str, index: int, count: int, events: int, config: Any) -> None:
        self.folder, self.index = folder, index
        self.next, self.step, self.events = index, count, events
        self.generator = generator(config)

    def next_batch(self) -> list[Any]:
        n = self.next
        if n >= self.events:
            raise StopIteration
        if n == self.index:
            _publish(
                os.path.join(self.folder, f"start-{self.index}.json"),
                {"cpu": time.process_time(), "at": time.time()},
            )
        stop = min(self.events, n + self.step * BATCH)
        batch = self.generator.events(n, stop, self.step)
        self.next = n + self.step * len(batch)
        return batch


class _Source(DynamicSource[Any]):
    def __init__(self, folder: str, events: int, config: Any) -> None:
        self.folder, self.events, self.config = folder, events, config

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Events:
        return _Events(self.folder, worker_index, worker_count, self.events, self.config)


class _Digest(StatelessSinkPartition[Any]):
    def __init__(self, folder: str, index: int, updating: bool) -> None:
        self.path = os.path.join(folder, f"bytewax-{index}.json")
        self.updating = updating
        self.count = self.total = 0
        self.latest: dict[Any, Any] = {}

    def write_batch(self, items: list[Any]) -> None:
        if self.updating:
            latest = self.latest
            for k, v in items:
                latest[canon(k)] = v
        else:
            self.count += len(items)
            self.total += sum(map(row_hash, items))

    def close(self) -> None:
        if self.updating:
            count, total = latest_digest(self.latest)
        else:
            count, total = self.count, self.total & MASK
        data = {"count": count, "sum": total, "cpu": time.process_time(), "at": time.time()}
        _publish(self.path, data)


class _Sink(DynamicSink[Any]):
    def __init__(self, folder: str, updating: bool) -> None:
        self.folder, self.updating = folder, updating

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Digest:
        return _Digest(self.folder, worker_index, self.updating)


def _is_bid(e: Any) -> bool:
    return e[KIND] == BID


def _when(e: Any) -> datetime:
    return EPOCH + timedelta(milliseconds=e[DATETIME])


def _bids(events: Any) -> Any:
    return op.filter("bids", events, _is_bid)


# -- the queries ---------------------------------------------------------------------------


def q0(events: Any) -> Any:
    return op.map("q0", _bids(events), ref.q0_row)


def q1(events: Any) -> Any:
    return op.map("q1", _bids(events), ref.q1_row)


def q2(events: Any) -> Any:
    return op.map("q2", op.filter("keep", events, ref.q2_keep), ref.q2_row)


def _q3_join(state: Any, v: Any) -> tuple[Any, list[Any]]:
    """Regular join of a seller's person and auctions: rows for every match once."""
    person, waiting = state or (None, [])
    if v[KIND] == PERSON:
        rows = [(v[P_NAME], v[ref.P_CITY], v[P_STATE], aid) for aid in waiting]
        return (v, []), rows
    if person is not None:
        return (person, waiting), [(person[P_NAME], person[ref.P_CITY], person[P_STATE], v[A_ID])]
    return (None, [*waiting, v[A_ID]]), []


def _q3_keep(e: Any) -> bool:
    if e[KIND] == PERSON:
        return e[P_STATE] in ("OR", "ID", "CA")
    return e[KIND] == AUCTION and e[A_CATEGORY] == 10


def _q3_key(e: Any) -> str:
    return str(e[P_ID] if e[KIND] == PERSON else e[A_SELLER])


def q3(events: Any) -> Any:
    keyed = op.key_on("seller", op.filter("keep", events, _q3_keep), _q3_key)
    joined = op.stateful_flat_map("join", keyed, _q3_join)
    return op.map("rows", joined, lambda kv: kv[1])


def _auction_or_bid(e: Any) -> bool:
    return e[KIND] == AUCTION or e[KIND] == BID


def _auction_key(e: Any) -> str:
    return str(e[A_ID] if e[KIND] == AUCTION else e[B_AUCTION])


def _winner_join(state: Any, v: Any) -> tuple[Any, list[Any]]:
    """Per auction: the auction, bids seen before it, and the best bid in its time so
    far; emits ``(auction, best)`` whenever the best changes."""
    auction, early, best = state or (None, [], None)
    if v[KIND] == AUCTION:
        auction, candidates = v, early
        early = []
    elif auction is None:
        return (None, [*early, v], None), []
    else:
        candidates = [v]
    changed = False
    for b in candidates:
        if auction[DATETIME] <= b[DATETIME] <= auction[A_EXPIRES]:
            row = (b[B_AUCTION], b[B_BIDDER], b[B_PRICE], b[DATETIME], b[B_EXTRA])
            if best is None or ref.q9_order(row) < ref.q9_order(best):
                best, changed = row, True
    return (auction, early, best), [(auction, best)] if changed else []


def _winners(events: Any) -> Any:
    keyed = op.key_on("auction", op.filter("auctions-bids", events, _auction_or_bid), _auction_key)
    return op.stateful_flat_map("winners", keyed, _winner_join)


def _set_final(finals: Any, v: Any) -> tuple[Any, int]:
    finals = finals or {}
    finals[v[0]] = v[1]
    return finals, sum(finals.values()) // len(finals)


def q4(events: Any) -> Any:
    def by_category(kv: Any) -> tuple[str, Any]:
        auction, best = kv[1]
        return (str(auction[A_CATEGORY]), (auction[A_ID], best[2]))

    per_category = op.map("by-category", _winners(events), by_category)
    averages = op.stateful_map("average", per_category, _set_final)
    return op.map("int-keys", averages, lambda kv: (int(kv[0]), kv[1]))


def _set_closed(closed: Any, v: Any) -> tuple[Any, int]:
    closed = closed or {}
    closed[v[0]] = (v[1], v[2])
    last = sorted((expires, aid, price) for aid, (expires, price) in closed.items())[-10:]
    return closed, sum(p for _, _, p in last) // len(last)


def q6(events: Any) -> Any:
    def by_seller(kv: Any) -> tuple[str, Any]:
        auction, best = kv[1]
        return (str(auction[A_SELLER]), (auction[A_ID], auction[A_EXPIRES], best[2]))

    per_seller = op.map("by-seller", _winners(events), by_seller)
    averages = op.stateful_map("last10", per_seller, _set_closed)
    return op.map("int-keys", averages, lambda kv: (int(kv[0]), kv[1]))


def q5(events: Any) -> Any:
    clock = _clock(_when)
    hop = SlidingWindower(timedelta(seconds=10), timedelta(seconds=2), align_to=EPOCH)
    counts = count_window("count", _bids(events), clock, hop, lambda b: str(b[B_AUCTION]))

    def by_window(kv: Any) -> tuple[str, Any]:
        auction, (window, count) = kv
        return (str(window), (int(auction), count))

    def top(state: Any, v: Any) -> tuple[Any, Any]:
        if state is None or v[1] > state[0]:
            state = (v[1], [v[0]])
        elif v[1] == state[0]:
            state[1].append(v[0])
        return state, (state[0], sorted(state[1]))

    tops = op.stateful_map("top", op.map("by-window", counts.down, by_window), top)
    # window id -> its start in ms (windows start every 2 s from the epoch)
    return op.map("start", tops, lambda kv: (int(kv[0]) * ref.SLIDE_MS, kv[1]))


def _wrap(b: Any) -> list[Any]:
    return [b]


def _highest(best: list[Any], b: Any) -> list[Any]:
    if not best or b[B_PRICE] > best[0][B_PRICE]:
        return [b]
    if b[B_PRICE] == best[0][B_PRICE]:
        best.append(b)
    return best


def _merge_highest(a: list[Any], b: list[Any]) -> list[Any]:
    for x in b:
        a = _highest(a, x)
    return a


def q7(events: Any) -> Any:
    clock = _clock(_when)
    per_window = TumblingWindower(timedelta(seconds=10), align_to=EPOCH)
    keyed = op.key_on("all", _bids(events), lambda b: "all")
    best = fold_window("highest", keyed, clock, per_window, list, _highest, _merge_highest)
    return op.flat_map("rows", best.down, lambda kv: [ref.q7_row(b) for b in kv[1][1]])


def q8(events: Any) -> Any:
    clock = _clock(lambda v: EPOCH + timedelta(milliseconds=v[1]))
    per_window = TumblingWindower(timedelta(seconds=10), align_to=EPOCH)
    people = op.filter_map(
        "people",
        events,
        lambda e: (str(e[P_ID]), (e[P_NAME], e[DATETIME])) if e[KIND] == PERSON else None,
    )
    sellers = op.filter_map(
        "sellers",
        events,
        lambda e: (str(e[A_SELLER]), ("", e[DATETIME])) if e[KIND] == AUCTION else None,
    )
    joined = join_window("join", clock, per_window, people, sellers, insert_mode="first")

    def row(kv: Any) -> list[Any]:
        pid, (_, (person, seller)) = kv
        if person is None or seller is None:
            return []
        return [(person[1] - person[1] % ref.WINDOW_MS, int(pid), person[0])]

    return op.flat_map("rows", joined.down, row)


def build(name: str, folder: str, events: int, seed: int, rate: int) -> Dataflow:
    """The dataflow of query ``name`` over ``events`` events of that seed and rate."""
    config = GeneratorConfig(seed=seed, first_event_rate=rate)
    flow = Dataflow(f"nexmark_{name}")
    stream = op.input("events", flow, _Source(folder, events, config))
    out = globals()[name](stream)
    op.output("digest", out, _Sink(folder, name in UPDATING))
    return flow
