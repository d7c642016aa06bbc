"""Nexmark q0-q22 as plain Python over a finite event iterable: the results the Streams
versions (``queries.py``) must equal exactly, and the one-core floor the runner measures.

Each ``qN(events)`` returns the query's result in a canonical form:

* a **row query** (every output row counts) returns the sorted list of its rows (flat
  tuples);
* an **updating query** (Flink's SQL keeps a result per key and updates it) returns the
  final state: a dict key -> row, after every event was seen.

Windows are event-time windows over ``dateTime`` (ms); every window holding an event
closes (a bounded input's end moves the watermark past every window, as Flink's
``MAX_WATERMARK`` does), and a window's rows carry its start (ms).  Ties that Nexmark
leaves arbitrary are broken on content, so results do not depend on arrival order:

====  ===============================================================================
q0    row per bid ``(auction, bidder, price, dateTime, extra)``
q1    as q0 with ``price * 0.908`` (dollars to euros, a float)
q2    ``(auction, price)`` of bids whose ``auction % 123 == 0``
q3    ``(name, city, state, auction id)``: category-10 auctions joined with their sellers
      in OR, ID or CA (regular join: every match, whichever came first)
q4    {category: average (integer, as Flink's BIGINT AVG) of its auctions' final
      prices}; an auction's final price is its highest bid with ``dateTime`` in
      ``[auction dateTime, expires]``; auctions without such a bid do not count
q5    ``(window start, auction, count)`` for the auctions with the most bids of each
      10 s window sliding every 2 s
q6    {seller: integer average of the winning prices (q9's) of their last 10 auctions,
      auctions ordered by ``expires`` then id}
q7    ``(window start, auction, price, bidder, dateTime, extra)``: the highest bids of
      each 10 s tumbling window (every bid at the maximum)
q8    ``(window start, person id, name)``: people who created an auction as seller in
      the same 10 s tumbling window as they registered
q9    {auction id: auction fields + winning bid ``(auction, bidder, price, dateTime,
      extra)``}: the highest bid in ``[dateTime, expires]``, earliest on ties (then
      the smaller bidder, then extra)
q10   ``(dt, hm, csv line)`` of every bid: the partition (``yyyy-MM-dd``, ``HH:mm`` of
      its UTC ``dateTime``) and line written (q10 writes them to partitioned files)
q11   ``(bidder, count, start, end)`` per session of a bidder (10 s gap; start = first
      bid's time, end = last bid's time + 10 s, Flink's ``SESSION_END``)
q12   ``(bidder, count, window start)`` per 10 s tumbling window: Nexmark's window is
      processing time; made deterministic as event time
q13   ``(auction, bidder, price, dateTime, value)``: bids joined with a bounded side
      input ``{k: "side-<k>"}``, k < 10,000, on ``auction % 10000``
q14   ``(auction, bidder, price * 0.908, bidTimeType, dateTime, extra, c_counts)`` for
      bids with ``1e6 < 0.908 * price < 5e7``; the type from the UTC hour
q15   {day: (total bids, bids of rank 1/2/3, distinct bidders, .. of rank 1/2/3,
      distinct auctions, .. of rank 1/2/3)}; ranks: price < 10,000 <= price <
      1,000,000 <= price
q16   {(channel, day): (max ``HH:mm``, then q15's twelve figures)}
q17   {(auction, day): (total, rank 1/2/3 bids, min, max, integer avg, sum of price)}
q18   {(bidder, auction): last bid (latest ``dateTime``; on ties the greatest bid)}
q19   {auction: its 10 highest bids, best first (price desc, then dateTime, bidder,
      extra)}
q20   bid fields + auction fields for bids joined with category-10 auctions (regular
      join)
q21   ``(auction, bidder, price, channel, channel_id)``: channel id of hot channels by
      name, of others from ``channel_id=`` in the url; bids with neither dropped
q22   ``(auction, bidder, price, channel, dir1, dir2, dir3)``: url path parts 3-5
====  ===============================================================================

Bid rows are ``(auction, bidder, price, channel, url, dateTime, extra)`` where a whole
bid is output (q18, q19, q20), auction rows Nexmark's field order.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from .generator import (
    A_CATEGORY,
    A_DESCRIPTION,
    A_EXPIRES,
    A_EXTRA,
    A_ID,
    A_INITIAL_BID,
    A_ITEM_NAME,
    A_RESERVE,
    A_SELLER,
    AUCTION,
    B_AUCTION,
    B_BIDDER,
    B_CHANNEL,
    B_EXTRA,
    B_PRICE,
    B_URL,
    BID,
    DATETIME,
    KIND,
    P_CITY,
    P_ID,
    P_NAME,
    P_STATE,
    PERSON,
)

Event = Any
WINDOW_MS = 10_000
SLIDE_MS = 2_000
SESSION_GAP_MS = 10_000
SIDE_INPUT_KEYS = 10_000
HOT_CHANNEL_IDS = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
CHANNEL_ID = re.compile(r"(&|^)channel_id=([^&]*)")


# -- row builders shared with the Streams versions ----------------------------------------


def q0_row(b: Event) -> tuple[Any, ...]:
    return (b[B_AUCTION], b[B_BIDDER], b[B_PRICE], b[DATETIME], b[B_EXTRA])


def q1_row(b: Event) -> tuple[Any, ...]:
    return (b[B_AUCTION], b[B_BIDDER], b[B_PRICE] * 0.908, b[DATETIME], b[B_EXTRA])


def q2_keep(b: Event) -> bool:
    return b[KIND] == BID and b[B_AUCTION] % 123 == 0


def q2_row(b: Event) -> tuple[Any, ...]:
    return (b[B_AUCTION], b[B_PRICE])


def bid_row(b: Event) -> tuple[Any, ...]:
    """A whole bid, Nexmark's field order."""
    return (b[B_AUCTION], b[B_BIDDER], b[B_PRICE], b[B_CHANNEL], b[B_URL], b[DATETIME], b[B_EXTRA])


def auction_row(a: Event) -> tuple[Any, ...]:
    """A whole auction, Nexmark's field order."""
    return (a[A_ID], a[A_ITEM_NAME], a[A_DESCRIPTION], a[A_INITIAL_BID], a[A_RESERVE],
            a[DATETIME], a[A_EXPIRES], a[A_SELLER], a[A_CATEGORY], a[A_EXTRA])  # fmt: skip


def day(ms: int) -> str:
    """``yyyy-MM-dd`` of a UTC time in ms."""
    return _day(ms // 86_400_000)


def hour_minute(ms: int) -> str:
    """``HH:mm`` of a UTC time in ms."""
    return _minute(ms // 60_000 % 1440)


@lru_cache(maxsize=1024)
def _day(days: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(days * 86_400))


@lru_cache(maxsize=1440)
def _minute(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def q10_row(b: Event) -> tuple[str, str, str]:
    line = f"{b[B_AUCTION]},{b[B_BIDDER]},{b[B_PRICE]},{b[DATETIME]},{b[B_EXTRA]}"
    return (day(b[DATETIME]), hour_minute(b[DATETIME]), line)


def side_input() -> dict[int, str]:
    """q13's bounded side input."""
    return {k: f"side-{k}" for k in range(SIDE_INPUT_KEYS)}


def q14_row(b: Event) -> tuple[Any, ...] | None:
    price = 0.908 * b[B_PRICE]
    if not 1_000_000 < price < 50_000_000:
        return None
    hour = b[DATETIME] // 3_600_000 % 24
    kind = "dayTime" if 8 <= hour <= 18 else "nightTime" if hour <= 6 or hour >= 20 else "otherTime"
    extra = b[B_EXTRA]
    return (b[B_AUCTION], b[B_BIDDER], price, kind, b[DATETIME], extra, extra.count("c"))


def q21_row(b: Event) -> tuple[Any, ...] | None:
    channel = b[B_CHANNEL]
    cid = HOT_CHANNEL_IDS.get(channel.lower())
    if cid is None:
        found = CHANNEL_ID.search(b[B_URL])
        if found is None:
            return None
        cid = found.group(2)
    return (b[B_AUCTION], b[B_BIDDER], b[B_PRICE], channel, cid)


def q22_row(b: Event) -> tuple[Any, ...]:
    parts = b[B_URL].split("/")
    dirs = [parts[i] if i < len(parts) else None for i in (3, 4, 5)]
    return (b[B_AUCTION], b[B_BIDDER], b[B_PRICE], b[B_CHANNEL], *dirs)


def rank(price: int) -> int:
    return 1 if price < 10_000 else 2 if price < 1_000_000 else 3


class DayStats:
    """q15/q16's figures over bids: counts and distinct bidders / auctions, per rank."""

    __slots__ = ("bids", "bidders", "auctions", "minute", "minutes")

    def __init__(self, minutes: bool = False) -> None:
        self.bids = [0, 0, 0, 0]
        self.bidders: list[set[int]] = [set(), set(), set(), set()]
        self.auctions: list[set[int]] = [set(), set(), set(), set()]
        self.minutes = minutes  # keep the latest HH:mm (q16)
        self.minute = ""

    def add(self, b: Event) -> DayStats:
        r = rank(b[B_PRICE])
        self.bids[0] += 1
        self.bids[r] += 1
        bidder, auction = b[B_BIDDER], b[B_AUCTION]
        self.bidders[0].add(bidder)
        self.bidders[r].add(bidder)
        self.auctions[0].add(auction)
        self.auctions[r].add(auction)
        if self.minutes:
            minute = hour_minute(b[DATETIME])
            if minute > self.minute:
                self.minute = minute
        return self

    def figures(self) -> tuple[int, ...]:
        return (*self.bids, *map(len, self.bidders), *map(len, self.auctions))


class AuctionDay:
    """q17's figures of an (auction, day)."""

    __slots__ = ("bids", "low", "high", "total")

    def __init__(self) -> None:
        self.bids = [0, 0, 0, 0]
        self.low: int | None = None
        self.high = 0
        self.total = 0

    def add(self, b: Event) -> AuctionDay:
        price = b[B_PRICE]
        self.bids[0] += 1
        self.bids[rank(price)] += 1
        self.low = price if self.low is None or price < self.low else self.low
        self.high = price if price > self.high else self.high
        self.total += price
        return self

    def figures(self) -> tuple[int, ...]:
        return (*self.bids, self.low or 0, self.high, self.total // self.bids[0], self.total)


def q18_better(a: Event, b: Event) -> Event:
    """The later of two bids of a (bidder, auction): latest dateTime, then greatest bid."""
    return b if (b[DATETIME], bid_row(b)) > (a[DATETIME], bid_row(a)) else a


def q19_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Sort key of q19's bid rows: highest price first, then earliest, bidder, extra."""
    return (-row[2], row[5], row[1], row[3], row[4], row[6])


def q9_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Sort key of q9's candidate bids ``(auction, bidder, price, dateTime, extra)``."""
    return (-row[2], row[3], row[1], row[4])


# -- the queries ---------------------------------------------------------------------------


#: Row queries sort their rows (the canonical form); the runner's loop turns it off.
SORTED = True


def _done(rows: Iterable[Any]) -> list[Any]:
    return sorted(rows) if SORTED else list(rows)


def _bids(events: Iterable[Event]) -> Iterable[Event]:
    return (e for e in events if e[KIND] == BID)


def q0(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    return _done(q0_row(b) for b in _bids(events))


def q1(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    return _done(q1_row(b) for b in _bids(events))


def q2(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    return _done(q2_row(e) for e in events if q2_keep(e))


def q3(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    people: dict[int, Event] = {}
    auctions: dict[int, list[int]] = defaultdict(list)
    for e in events:
        if e[KIND] == PERSON and e[P_STATE] in ("OR", "ID", "CA"):
            people[e[P_ID]] = e
        elif e[KIND] == AUCTION and e[A_CATEGORY] == 10:
            auctions[e[A_SELLER]].append(e[A_ID])
    return _done(
        (p[P_NAME], p[P_CITY], p[P_STATE], aid)
        for seller, ids in auctions.items()
        if (p := people.get(seller)) is not None
        for aid in ids
    )


def _auction_bids(events: Iterable[Event]) -> tuple[dict[int, Event], dict[int, list[Event]]]:
    """Every auction, and the bids in each auction's ``[dateTime, expires]``."""
    auctions: dict[int, Event] = {}
    bids: dict[int, list[Event]] = defaultdict(list)
    for e in events:
        if e[KIND] == AUCTION:
            auctions[e[A_ID]] = e
        elif e[KIND] == BID:
            bids[e[B_AUCTION]].append(e)
    return auctions, {
        aid: inside
        for aid, a in auctions.items()
        if (inside := [b for b in bids.get(aid, ()) if a[DATETIME] <= b[DATETIME] <= a[A_EXPIRES]])
    }


def q4(events: Iterable[Event]) -> dict[int, int]:
    auctions, bids = _auction_bids(events)
    finals: dict[int, list[int]] = defaultdict(list)
    for aid, inside in bids.items():
        finals[auctions[aid][A_CATEGORY]].append(max(b[B_PRICE] for b in inside))
    return {category: sum(p) // len(p) for category, p in finals.items()}


def winning_bid(bids: Iterable[Event]) -> tuple[Any, ...]:
    """q9's winner ``(auction, bidder, price, dateTime, extra)`` of an auction's bids."""
    return min(
        ((b[B_AUCTION], b[B_BIDDER], b[B_PRICE], b[DATETIME], b[B_EXTRA]) for b in bids),
        key=q9_order,
    )


def q9(events: Iterable[Event]) -> dict[int, tuple[Any, ...]]:
    auctions, bids = _auction_bids(events)
    return {aid: auction_row(auctions[aid]) + winning_bid(inside) for aid, inside in bids.items()}


def q6(events: Iterable[Event]) -> dict[int, int]:
    auctions, bids = _auction_bids(events)
    closed = [auctions[aid] for aid in bids]
    closed.sort(key=lambda a: (a[A_EXPIRES], a[A_ID]))
    last: dict[int, list[int]] = defaultdict(list)
    for a in closed:
        prices = last[a[A_SELLER]]
        prices.append(winning_bid(bids[a[A_ID]])[2])
        del prices[:-10]
    return {seller: sum(p) // len(p) for seller, p in last.items()}


def _window(ms: int) -> int:
    return ms - ms % WINDOW_MS


def q5(events: Iterable[Event]) -> list[tuple[int, int, int]]:
    counts: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for b in _bids(events):
        t = b[DATETIME]
        last = t - t % SLIDE_MS
        for start in range(last, t - WINDOW_MS, -SLIDE_MS):
            counts[start][b[B_AUCTION]] += 1
    rows = []
    for start, per_auction in counts.items():
        top = max(per_auction.values())
        rows.extend((start, auction, n) for auction, n in per_auction.items() if n == top)
    return _done(rows)


def q7(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    best: dict[int, list[Event]] = {}
    for b in _bids(events):
        start = _window(b[DATETIME])
        found = best.get(start)
        if found is None or b[B_PRICE] > found[0][B_PRICE]:
            best[start] = [b]
        elif b[B_PRICE] == found[0][B_PRICE]:
            found.append(b)
    return _done(q7_row(b) for bids in best.values() for b in bids)


def q7_row(b: Event) -> tuple[Any, ...]:
    return (_window(b[DATETIME]), b[B_AUCTION], b[B_PRICE], b[B_BIDDER], b[DATETIME], b[B_EXTRA])


def q8(events: Iterable[Event]) -> list[tuple[int, int, str]]:
    people: dict[tuple[int, int], str] = {}
    sellers: set[tuple[int, int]] = set()
    for e in events:
        if e[KIND] == PERSON:
            people[(_window(e[DATETIME]), e[P_ID])] = e[P_NAME]
        elif e[KIND] == AUCTION:
            sellers.add((_window(e[DATETIME]), e[A_SELLER]))
    return _done((s, pid, name) for (s, pid), name in people.items() if (s, pid) in sellers)


def q10(events: Iterable[Event]) -> list[tuple[str, str, str]]:
    return _done(q10_row(b) for b in _bids(events))


def q11(events: Iterable[Event]) -> list[tuple[int, int, int, int]]:
    times: dict[int, list[int]] = defaultdict(list)
    for b in _bids(events):
        times[b[B_BIDDER]].append(b[DATETIME])
    rows = []
    for bidder, ts in times.items():
        ts.sort()
        first = prev = ts[0]
        count = 0
        for t in ts:
            if t - prev >= SESSION_GAP_MS:
                rows.append((bidder, count, first, prev + SESSION_GAP_MS))
                first, count = t, 0
            prev = t
            count += 1
        rows.append((bidder, count, first, prev + SESSION_GAP_MS))
    return _done(rows)


def q12(events: Iterable[Event]) -> list[tuple[int, int, int]]:
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for b in _bids(events):
        counts[(b[B_BIDDER], _window(b[DATETIME]))] += 1
    return _done((bidder, n, start) for (bidder, start), n in counts.items())


def q13_row(b: Event, side: dict[int, str]) -> tuple[Any, ...]:
    value = side[b[B_AUCTION] % SIDE_INPUT_KEYS]
    return (b[B_AUCTION], b[B_BIDDER], b[B_PRICE], b[DATETIME], value)


def q13(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    side = side_input()
    return _done(q13_row(b, side) for b in _bids(events))


def _rows(events: Iterable[Event], fn: Callable[[Event], Any]) -> list[Any]:
    return _done(row for b in _bids(events) if (row := fn(b)) is not None)


def q14(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    return _rows(events, q14_row)


def q15(events: Iterable[Event]) -> dict[str, tuple[int, ...]]:
    stats: dict[str, DayStats] = defaultdict(DayStats)
    for b in _bids(events):
        stats[day(b[DATETIME])].add(b)
    return {d: s.figures() for d, s in stats.items()}


def q16(events: Iterable[Event]) -> dict[tuple[str, str], tuple[Any, ...]]:
    stats: dict[tuple[str, str], DayStats] = defaultdict(lambda: DayStats(minutes=True))
    for b in _bids(events):
        stats[(b[B_CHANNEL], day(b[DATETIME]))].add(b)
    return {k: (s.minute, *s.figures()) for k, s in stats.items()}


def q17(events: Iterable[Event]) -> dict[tuple[int, str], tuple[int, ...]]:
    stats: dict[tuple[int, str], AuctionDay] = defaultdict(AuctionDay)
    for b in _bids(events):
        stats[(b[B_AUCTION], day(b[DATETIME]))].add(b)
    return {k: s.figures() for k, s in stats.items()}


def q18(events: Iterable[Event]) -> dict[tuple[int, int], tuple[Any, ...]]:
    last: dict[tuple[int, int], Event] = {}
    for b in _bids(events):
        key = (b[B_BIDDER], b[B_AUCTION])
        found = last.get(key)
        last[key] = b if found is None else q18_better(found, b)
    return {k: bid_row(b) for k, b in last.items()}


def q19(events: Iterable[Event]) -> dict[int, list[tuple[Any, ...]]]:
    per: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for b in _bids(events):
        per[b[B_AUCTION]].append(bid_row(b))
    return {aid: sorted(rows, key=q19_order)[:10] for aid, rows in per.items()}


def q20(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    auctions: dict[int, Event] = {}
    bids: dict[int, list[Event]] = defaultdict(list)
    for e in events:
        if e[KIND] == AUCTION and e[A_CATEGORY] == 10:
            auctions[e[A_ID]] = e
        elif e[KIND] == BID:
            bids[e[B_AUCTION]].append(e)
    return _done(
        bid_row(b) + auction_row(a)[1:] for aid, a in auctions.items() for b in bids.get(aid, ())
    )


def q21(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    return _rows(events, q21_row)


def q22(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    return _done(q22_row(b) for b in _bids(events))


QUERIES: dict[str, Callable[[Iterable[Event]], Any]] = {
    f"q{i}": globals()[f"q{i}"] for i in range(23)
}
