"""Live views of an auction site with the Streams API's joins, top-N and window bounds.

    sparkstorm local examples/auctions_streams.py:topology --duration 15

One spout replays a small, fixed auction site in event-time order: ``PEOPLE`` people,
``AUCTIONS`` auctions (each opened by a seller), and bids placed up to 30 s after their
auction opened (Nexmark's events in miniature; ``bench/nexmark/`` has the real thing).
Four views of it, each a component whose rows ``verify`` checks against the same
computation in plain Python:

* ``sellers`` — every auction with its seller's name: ``people.join(auctions)``, a
  regular join on keyed state (each side stored under the person's id; a row as the later
  of the two arrives, whichever that is).
* ``early-bids`` — the bids placed within 10 s of their auction opening:
  ``auctions.interval_join(bids, 0, 10, time=...)`` (Flink's interval join: state kept
  only until the watermark passes what a value can still match).
* ``top-bids`` — each auction's three highest bids, updated live: ``top_n_by_key(3)``.
* ``best-per-minute`` — the highest bid of each minute of event time, with the minute it
  belongs to: ``window(tumbling(seconds=60).event_time(...)).with_bounds().reduce(...)``
  gives ``(start, end, bid)``.  A minute closes when the watermark (the latest bid time
  less ``LAG``) passes its end, so the last minute or two stay open at the end of input:
  their bids wait in the window, and when the run ends they are the spout's ``failed``
  (a window's inputs are acked when it fires).
"""

from __future__ import annotations

import random
from typing import Any

from topology import BasicBolt, Spout
from topology.streams import StreamBuilder, tumbling

PEOPLE = 50
AUCTIONS = 200
BIDS = 3_000
#: Seconds the event-time watermark trails the latest bid.
LAG = 5.0
START = 1_700_000_000.0


def site(seed: int = 7) -> list[dict[str, Any]]:
    """The auction site's events, in event-time order (the same for a seed)."""
    rng = random.Random(seed)
    people = [
        {"kind": "person", "id": i, "ts": START + i, "name": f"user-{i}"} for i in range(PEOPLE)
    ]
    auctions = []
    for a in range(AUCTIONS):
        opened = START + 10 + a * 3.0
        auctions.append({"kind": "auction", "id": a, "ts": opened, "seller": rng.randrange(PEOPLE)})
    bids = []
    for b in range(BIDS):
        auction = auctions[rng.randrange(AUCTIONS)]
        ts = auction["ts"] + rng.randrange(0, 3000) / 100  # up to 30 s after it opened
        bids.append(
            {
                "kind": "bid",
                "id": b,
                "ts": ts,
                "auction": auction["id"],
                "price": rng.randrange(1, 10_000),
            }
        )
    return sorted(people + auctions + bids, key=lambda e: (e["ts"], e["kind"], e["id"]))


class SiteSpout(Spout):
    """Emits :func:`site`'s events once, each tracked (replayed when it fails)."""

    outputs = ["event"]

    def open(self, conf, context):
        self.events = site()
        self.next = 0
        self.again: list[int] = []

    def next_tuple(self):
        if self.again:
            i = self.again.pop()
        elif self.next < len(self.events):
            i, self.next = self.next, self.next + 1
        else:
            return
        self.emit([self.events[i]], msg_id=i)

    def fail(self, msg_id):
        self.again.append(msg_id)


class Rows(BasicBolt):
    """Keeps every row it receives (the views ``verify`` reads)."""

    def prepare(self, conf, context):
        self.rows: list[Any] = []

    def process(self, tup):
        self.rows.append(tup.as_dict())

    def collect_results(self):
        return {"rows": self.rows}


def _kind(kind: str):
    return lambda e: e["kind"] == kind


sb = StreamBuilder()
events = sb.new_stream(SiteSpout(), name="site")
people = events.filter(_kind("person")).map_to_pair(lambda p: (p["id"], p["name"]))
auctions = events.filter(_kind("auction"))
bids = events.filter(_kind("bid"))

by_seller = auctions.map_to_pair(lambda a: (a["seller"], a["id"]))
people.join(by_seller).to(Rows(), name="sellers")  # (seller, (name, auction))

opened = auctions.map_to_pair(lambda a: (a["id"], a["ts"]))
placed = bids.map_to_pair(lambda b: (b["auction"], (b["ts"], b["id"])))
(
    opened.interval_join(
        placed, 0, 10, time=lambda ts: ts, other_time=lambda bid: bid[0], lag=LAG
    ).to(Rows(), name="early-bids")  # (auction, (opened, (ts, bid)))
)

prices = bids.map_to_pair(lambda b: (b["auction"], (b["price"], b["id"])))
prices.top_n_by_key(3).to(Rows(), name="top-bids")  # (auction, [(price, bid), ...])

best = bids.map(lambda b: (b["price"], b["id"], b["ts"]))
minutes = tumbling(seconds=60).event_time(lambda bid: bid[2], lag=LAG)
best.window(minutes).with_bounds().reduce(max).to(Rows(), name="best-per-minute")
topology = sb


def expected() -> dict[str, Any]:
    """Each view computed in plain Python from the same events."""
    events = site()
    names = {e["id"]: e["name"] for e in events if e["kind"] == "person"}
    auctions = [e for e in events if e["kind"] == "auction"]
    bids = [e for e in events if e["kind"] == "bid"]
    opened = {a["id"]: a["ts"] for a in auctions}
    top: dict[int, list[tuple[int, int]]] = {}
    for b in bids:
        top[b["auction"]] = sorted(
            [*top.get(b["auction"], []), (b["price"], b["id"])], reverse=True
        )[:3]
    best: dict[float, tuple[int, int, float]] = {}
    for b in bids:
        start = b["ts"] // 60 * 60
        best[start] = max(best.get(start, (0, 0, 0.0)), (b["price"], b["id"], b["ts"]))
    closed = max(b["ts"] for b in bids) - LAG
    return {
        "sellers": sorted((a["seller"], names[a["seller"]], a["id"]) for a in auctions),
        "early-bids": sorted(
            (b["auction"], b["id"]) for b in bids if b["ts"] <= opened[b["auction"]] + 10
        ),
        "top-bids": top,
        "best-per-minute": {s: best[s] for s in best if s + 60 <= closed},
    }


def rows(results: dict[str, dict[int, Any]], view: str) -> list[dict[str, Any]]:
    return [row for task in results.get(view, {}).values() for row in task["rows"]]


def verify(results: dict[str, dict[int, Any]]) -> str:
    """Compare every view with :func:`expected`; a line saying what matched."""
    want = expected()
    sellers = sorted((r["key"], r["value"][0], r["value"][1]) for r in rows(results, "sellers"))
    early = sorted((r["key"], r["value"][1][1]) for r in rows(results, "early-bids"))
    top: dict[int, list[tuple[int, int]]] = {}
    for r in rows(results, "top-bids"):  # the latest list per auction is its top 3
        top[r["key"]] = [tuple(pb) for pb in r["value"]]
    fired = {r["value"][0]: tuple(r["value"][2]) for r in rows(results, "best-per-minute")}
    minutes = {s: fired.get(s) for s in want["best-per-minute"]}
    problems = [
        name
        for name, ok in (
            ("sellers", sellers == want["sellers"]),
            ("early-bids", early == want["early-bids"]),
            ("top-bids", top == want["top-bids"]),
            ("best-per-minute", minutes == want["best-per-minute"]),
        )
        if not ok
    ]
    if problems:
        return f"MISMATCH in {', '.join(problems)}"
    return (
        f"every view exact: {len(sellers):,} auctions with their sellers, {len(early):,} early "
        f"bids, top 3 of {len(top):,} auctions, the best bid of {len(minutes):,} closed minutes"
    )
