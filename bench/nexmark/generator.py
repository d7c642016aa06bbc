"""Nexmark's event generator in plain Python, deterministic from ``(seed, event number)``.

The model and its rules are those of the nexmark/nexmark project's generator
(``nexmark-flink/.../generator/``: ``GeneratorConfig``, ``NexmarkGenerator`` and
``model/{Person,Auction,Bid,Price,Strings}Generator``), itself Apache Beam's:

* event number *n* is a person, an auction or a bid by ``n % 50`` (1 : 3 : 46 per 50
  events: ``personProportion``, ``auctionProportion``, ``bidProportion``);
* ids: person ``n // 50 + 1000`` (``FIRST_PERSON_ID``), auction ``3 * (n // 50) + k +
  1000`` (``FIRST_AUCTION_ID``), categories ``10..14`` (``FIRST_CATEGORY_ID``, 5 of them);
* a bid is for the *hot* auction (the first of the last 100 auctions) with probability
  ``1 - 1/hot_auction_ratio``, else for one of the last ``num_in_flight_auctions`` (plus
  10 not yet created); its bidder is the hot bidder (the second of the last 100 people)
  with probability ``1 - 1/hot_bidders_ratio``, else one of the last
  ``num_active_people`` (plus 10); an auction's seller likewise (the first of the last 100
  people, ``hot_sellers_ratio``);
* prices ``round(10 ** (6u) * 100)`` for uniform *u* (cents, 100 to 10^8); an auction's
  reserve is its initial bid plus another price;
* a bid's channel is one of the 4 hot channels (Google, Facebook, Baidu, Apple, each with
  its url) with probability 1/2, else ``channel-i`` of 10,000, whose url carries
  ``&channel_id=...`` 9 times in 10;
* strings: names from Nexmark's lists, random strings of 3 to ``max`` letters with a
  space 1 in 13 (trimmed), and ``extra`` padding each event to its average size (person
  200, auction 500, bid 100 bytes, +-20 %);
* event time: ``base_time_ms + int(n * 1e6 / first_event_rate) // 1000`` (Nexmark's
  ``timestampForEvent`` with one generator), **integer milliseconds**; an auction expires
  ``1 + randint(2 * horizon)`` ms after its time, the horizon being the time until
  ``num_in_flight_auctions`` more auctions are created.

Defaults are nexmark-flink's ``NexmarkConfiguration`` (rate 10,000 events/s of event time,
ratios 2 / 4 / 4, 100 auctions in flight, 1,000 active people).

What differs, on purpose:

* **Determinism per event.**  Nexmark draws from one ``SplittableRandom`` per generator in
  sequence; here each event's draws come from its own random bits, a function of
  ``(seed, n)`` alone (simple tabulation hashing: the XOR of four table entries picked by
  the bytes of *n*, tables of 256 random words made from the seed — 3-wise
  independent, Pătrașcu and Thorup's "The power of simple tabulation hashing"), so any task
  generates any share of the events and a replay regenerates an event exactly.  Each draw
  takes its own bits of the event's words (no bit serves two draws).
* **A bid's draws are lookups.**  Its price, channel, ``extra`` and (once 100 auctions and
  1,000 people exist) which auction and bidder are rows of tables drawn from the seed with
  Nexmark's rules (2^18 prices, 4,096 extras and offset pairs), picked by its bits: a few
  operations instead of a dozen draws, on the hot path of every query.
* **One timeline.**  Nexmark splits the id space between parallel generators
  (``GeneratorConfig.split``); here task *i* of *k* generates events ``i, i+k, ...`` of one
  global sequence, so the events (and every query's result) do not depend on *k*.
* **Strings by slicing.**  A random string is a slice of a seeded 64 KiB pool of the same
  alphabet (``extra`` likewise of a pool of letters, as Nexmark's
  ``REUSABLE_EXTRA_STRING``), with Nexmark's length distributions.
* The bidder id is offset by ``FIRST_PERSON_ID`` once (Beam's rule; nexmark-flink's
  ``BidGenerator`` adds it twice, so its bidders never match a person).

Events are **tuples** (the cheapest value to build, index and serialise: a tuple of eight
items costs a third of a dict of the same fields to make, and msgpack packs it without
keys), kind first and event time second in every kind, so one function reads any event's
time (:func:`event_time`).  Across components a tuple arrives as a list; the ``P_*``,
``A_*`` and ``B_*`` indexes work on both.

* Person  ``(0, dateTime, id, name, emailAddress, creditCard, city, state, extra)``
* Auction ``(1, dateTime, id, itemName, description, initialBid, reserve, expires, seller,
  category, extra)``
* Bid     ``(2, dateTime, auction, bidder, price, channel, url, extra)``

Example:
    >>> gen = Generator(GeneratorConfig(seed=1))
    >>> [e[KIND] for e in gen.events(0, 6)]
    [0, 1, 1, 1, 2, 2]
    >>> gen.event(4) == Generator(GeneratorConfig(seed=1)).event(4)
    True
    >>> gen.event(0)[P_ID], gen.event(1)[A_ID], gen.event(3)[A_ID]
    (1000, 1000, 1002)
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Event kinds (item 0 of every event); END marks the end of a spout task's events.
PERSON, AUCTION, BID, END = 0, 1, 2, 3
KIND, DATETIME = 0, 1
# Person fields.
P_ID, P_NAME, P_EMAIL, P_CREDIT_CARD, P_CITY, P_STATE, P_EXTRA = 2, 3, 4, 5, 6, 7, 8
# Auction fields.
A_ID, A_ITEM_NAME, A_DESCRIPTION, A_INITIAL_BID, A_RESERVE = 2, 3, 4, 5, 6
A_EXPIRES, A_SELLER, A_CATEGORY, A_EXTRA = 7, 8, 9, 10
# Bid fields.
B_AUCTION, B_BIDDER, B_PRICE, B_CHANNEL, B_URL, B_EXTRA = 2, 3, 4, 5, 6, 7

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
#: The hot seller / bidder / auction is the first (bidder: second) of each batch this big.
HOT_BATCH = 100
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
CHANNELS_NUMBER = 10_000
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = (
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
)
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah")
FIRST_NAMES += ("Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones")
LAST_NAMES += ("Noris",)

_POOL = 1 << 16  # characters in each string pool
_PRICE_BITS = 18  # 2^18 prices drawn for the bids' lookups
_PRICE_MASK = (1 << _PRICE_BITS) - 1
_ROWS = 1 << 12  # rows of a bid's route and extra tables
_ROW_MASK = _ROWS - 1


@dataclass(frozen=True)
class GeneratorConfig:
    """What the events depend on (with the seed, nothing else).

    Args:
        seed: the random seed.
        first_event_rate: events per second of event time (Nexmark's ``firstEventRate``).
        base_time_ms: event time of event 0, ms since the epoch (fixed, unlike Nexmark's
            wall clock at start, so results are reproducible).
        person_proportion, auction_proportion, bid_proportion: events of each kind per
            ``total`` events.
        avg_person_bytes, avg_auction_bytes, avg_bid_bytes: average event sizes.
        hot_auction_ratio, hot_sellers_ratio, hot_bidders_ratio: 1 in this many bids
            (auctions) is *not* for the hot auction (bidder, seller).
        num_in_flight_auctions: how far back a random auction id reaches.
        num_active_people: how far back a random person id reaches.
    """

    seed: int = 0
    first_event_rate: int = 10_000
    base_time_ms: int = 1_700_000_000_000
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def timestamp(self, n: int) -> int:
        """Event time of event ``n`` in ms (Nexmark's ``timestampForEvent``)."""
        return self.base_time_ms + int(n * (1_000_000.0 / self.first_event_rate)) // 1000


def event_time(event: Any) -> float:
    """Event time of any event in seconds (what windows take)."""
    return event[DATETIME] / 1000


#: Event time of the end marker: far past every event (31 years after the base time).
END_AFTER_MS = 10**12


#: Nexmark's person names (a first and a last name) and credit card groups, made once.
_NAMES = tuple(f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES)
_CARDS = tuple(f"{i:04d}" for i in range(10_000))


def end_marker(config: GeneratorConfig) -> tuple[Any, ...]:
    """The event a spout task emits after its last one (Flink's final ``MAX_WATERMARK``):
    its time moves every event-time window's watermark past every real window.  Shaped so
    that reading any person, auction or bid field of it works (ids -1, numbers 0);
    queries keep it only on the way to an event-time window, and it lands in a window that
    never closes."""
    t = config.base_time_ms + END_AFTER_MS
    return (END, t, -1, -1, 0, "", "", 0, -1, -1, "")


def _cold(ratio: int) -> int:
    """The threshold below which 8 random bits mean "not hot" (probability 1/ratio)."""
    return 256 // ratio


def _price(u: float) -> int:
    """Nexmark's ``nextPrice`` for uniform ``u``: cents, 100 to 10^8, log-uniform."""
    return int(10.0 ** (u * 6.0) * 100.0 + 0.5)


class Generator:
    """Events of one configuration: :meth:`event` (one), :meth:`events` (a range).

    Each event has 256 random bits, :meth:`bits`, and 62 more, :meth:`small_bits` (functions
    of the seed and ``n``).  People and auctions compute their draws from the first, one by
    one.  A bid's draws are lookups its small bits pick, each by its own bits: a price (of
    2^18 drawn from Nexmark's distribution), a channel (hot 1/2 of the time, else one of
    10,000) with its url, an ``extra`` (of 4,096) and, once the first 100 auctions and 1,000
    people exist (``num_in_flight_auctions``, ``num_active_people``: from event 49,950 with
    the defaults), an ``(auction, bidder)`` offset pair (hot, or which of the last ones; of
    4,096 drawn with Nexmark's rules).  Before that its auction and bidder are computed
    from :meth:`bits`.  Small tables stay in the CPU's caches: the lookups are the cheap
    part.

    Args:
        config: the configuration (seed included).

    Raises:
        ValueError: an event number outside ``0 .. 2^32 - 1``.
    """

    def __init__(self, config: GeneratorConfig | None = None) -> None:
        self.config = c = config or GeneratorConfig()
        rng = random.Random(c.seed)
        # Tabulation tables: four of 256 words, one per byte of n (small: they stay in
        # cache); 256-bit words for people, auctions and a bid's first draws, 62-bit ones
        # for a bid's lookups (:meth:`small_bits`).
        self._big = [[rng.getrandbits(256) for _ in range(256)] for _ in range(4)]
        self._small = [[rng.getrandbits(62) for _ in range(256)] for _ in range(4)]
        letters = "abcdefghijklmnopqrstuvwxyz"
        # nextString's alphabet: a letter, or the special character 1 time in 13.
        self._text = "".join(
            " " if rng.randrange(13) == 0 else rng.choice(letters) for _ in range(_POOL)
        )
        self._extra_pool = "".join(rng.choice(letters) for _ in range(_POOL))
        self._hot_urls = tuple(self._base_url(rng) for _ in HOT_CHANNELS)
        channels = []
        for i in range(CHANNELS_NUMBER):
            url = self._base_url(rng)
            if rng.randrange(10) > 0:
                url += f"&channel_id={abs(_reverse32(i))}"
            channels.append((f"channel-{i}", url))
        self._channels = tuple(channels)
        self._bid_rows(rng)
        # The first epoch (of ``total_proportion`` events) whose bids are in steady state.
        p, a = c.person_proportion, c.auction_proportion
        self._steady_epoch = max(
            0, -(-(c.num_in_flight_auctions - a + 1) // a), -(-(c.num_active_people - p) // p)
        )
        # Event time: an integer formula when the delay is a whole number of microseconds.
        delay = 1_000_000 / c.first_event_rate
        self._delay_us = int(delay) if delay == int(delay) else None

    @staticmethod
    def _base_url(rng: random.Random) -> str:
        def part() -> str:
            length = 3 + rng.randrange(2)
            chars = "".join(
                "_" if rng.randrange(13) == 0 else chr(97 + rng.randrange(26))
                for _ in range(length)
            )
            return chars.strip()

        return f"https://www.nexmark.com/{part()}/{part()}/{part()}/item.htm?query=1"

    def _bid_rows(self, rng: random.Random) -> None:
        """The rows a bid's small bits pick: 2^18 prices, 4,096 ``extra`` strings and, for
        the steady state, 4,096 ``(auction offset, bidder offset)`` pairs (-1: the hot
        one), each drawn with Nexmark's rules."""
        c = self.config
        prices = array("q")
        for i in range(1 << _PRICE_BITS):
            prices.append(_price((i + rng.random()) / (1 << _PRICE_BITS)))
        self._prices = prices
        self._extras = tuple(
            self._extra(rng.getrandbits(36), 32, c.avg_bid_bytes) for _ in range(_ROWS)
        )
        hot = tuple(zip(HOT_CHANNELS, self._hot_urls))
        # 15 bits -> a channel: odd, one of the 4 hot ones; even, one of the 10,000 others
        self._channel_of = tuple(
            hot[(i >> 1) & 3] if i & 1 else self._channels[(i >> 1) * CHANNELS_NUMBER >> 14]
            for i in range(1 << 15)
        )
        auctions = c.num_in_flight_auctions + 1 + AUCTION_ID_LEAD
        people = c.num_active_people + PERSON_ID_LEAD
        self._routes = tuple(
            (
                -1 if rng.randrange(c.hot_auction_ratio) > 0 else rng.randrange(auctions),
                -1 if rng.randrange(c.hot_bidders_ratio) > 0 else rng.randrange(people),
            )
            for _ in range(_ROWS)
        )

    # -- draws ---------------------------------------------------------------------------

    def bits(self, n: int) -> int:
        """The 256 random bits of event ``n``: a function of the seed and ``n`` alone."""
        if not 0 <= n < 1 << 32:
            raise ValueError(f"event number {n} outside 0 .. 2^32 - 1")
        t0, t1, t2, t3 = self._big
        return t0[n & 255] ^ t1[(n >> 8) & 255] ^ t2[(n >> 16) & 255] ^ t3[n >> 24]

    def small_bits(self, n: int) -> int:
        """62 more random bits of event ``n`` (a bid's lookups)."""
        if not 0 <= n < 1 << 32:
            raise ValueError(f"event number {n} outside 0 .. 2^32 - 1")
        t0, t1, t2, t3 = self._small
        return t0[n & 255] ^ t1[(n >> 8) & 255] ^ t2[(n >> 16) & 255] ^ t3[n >> 24]

    def _string(self, bits: int, max_length: int) -> str:
        """Nexmark's ``nextString``: 3 to ``max_length - 1`` characters (28 bits)."""
        length = 3 + (((bits & 0xFF) * (max_length - 3)) >> 8)
        at = ((bits >> 8) & 0xFFFFF) * (_POOL - length) >> 20
        return self._text[at : at + length].strip()

    def _extra(self, bits: int, current: int, average: int) -> str:
        """Nexmark's ``nextExtra``: pads ``current`` bytes to ``average`` +-20 % (36 bits)."""
        if current > average:
            return ""
        desired = average - current
        delta = int(desired * 0.2 + 0.5)
        size = desired - delta + (((bits & 0xFFFF) * 2 * delta) >> 16)
        at = ((bits >> 16) & 0xFFFFF) * (_POOL - size) >> 20
        return self._extra_pool[at : at + size]

    def _last_person(self, n: int) -> int:
        c = self.config
        epoch, offset = divmod(n, c.total_proportion)
        return epoch * c.person_proportion + min(offset, c.person_proportion - 1)

    def _last_auction(self, n: int) -> int:
        c = self.config
        epoch, offset = divmod(n, c.total_proportion)
        if offset < c.person_proportion:
            epoch, offset = epoch - 1, c.auction_proportion - 1
        elif offset >= c.person_proportion + c.auction_proportion:
            offset = c.auction_proportion - 1
        else:
            offset -= c.person_proportion
        return epoch * c.auction_proportion + offset

    def _random_person(self, n: int, bits: int) -> int:
        """Nexmark's ``nextBase0PersonId`` (24 bits)."""
        people = self._last_person(n) + 1
        active = min(people, self.config.num_active_people)
        return people - active + ((bits * (active + PERSON_ID_LEAD)) >> 24)

    def _random_auction(self, n: int, bits: int) -> int:
        """Nexmark's ``nextBase0AuctionId`` (24 bits)."""
        last = self._last_auction(n)
        first = max(last - self.config.num_in_flight_auctions, 0)
        return first + ((bits * (last - first + 1 + AUCTION_ID_LEAD)) >> 24)

    def timestamp(self, n: int) -> int:
        """Event time of event ``n`` in ms."""
        if self._delay_us is not None:
            return self.config.base_time_ms + n * self._delay_us // 1000
        return self.config.timestamp(n)

    # -- events --------------------------------------------------------------------------

    def person(self, n: int) -> tuple[Any, ...]:
        """The person of event ``n`` (which must be a person's)."""
        c = self.config
        z = self.bits(n)
        name = _NAMES[((z & 0xFFFF) * len(_NAMES)) >> 16]
        email = f"{self._string(z >> 16, 7)}@{self._string(z >> 44, 5)}.com"
        card = " ".join([_CARDS[((z >> s) & 0x3FFF) * 10_000 >> 14] for s in (72, 86, 100, 114)])
        city = US_CITIES[((z >> 128) & 0xFF) * len(US_CITIES) >> 8]
        state = US_STATES[((z >> 136) & 0xFF) * len(US_STATES) >> 8]
        size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
        extra = self._extra(z >> 144, size, c.avg_person_bytes)
        pid = self._last_person(n) + FIRST_PERSON_ID
        return (PERSON, self.timestamp(n), pid, name, email, card, city, state, extra)

    def auction(self, n: int) -> tuple[Any, ...]:
        """The auction of event ``n`` (which must be an auction's)."""
        c = self.config
        z = self.bits(n)
        ts = self.timestamp(n)
        if (z & 0xFF) >= _cold(c.hot_sellers_ratio):
            seller = self._last_person(n) // HOT_BATCH * HOT_BATCH
        else:
            seller = self._random_person(n, (z >> 8) & 0xFFFFFF)
        category = FIRST_CATEGORY_ID + (((z >> 32) & 0xFF) * NUM_CATEGORIES >> 8)
        initial = _price(((z >> 40) & 0xFFFFFFFF) / (1 << 32))
        reserve = initial + _price(((z >> 72) & 0xFFFFFFFF) / (1 << 32))
        ahead = c.num_in_flight_auctions * c.total_proportion // c.auction_proportion
        horizon = self.timestamp(n + ahead) - ts
        expires = ts + 1 + (((z >> 104) & 0xFFFFFF) * max(horizon * 2, 1) >> 24)
        name = self._string(z >> 128, 20)
        description = self._string(z >> 156, 100)
        extra = self._extra(z >> 184, 48 + len(name) + len(description), c.avg_auction_bytes)
        aid = self._last_auction(n) + FIRST_AUCTION_ID
        seller += FIRST_PERSON_ID
        return (AUCTION, ts, aid, name, description, initial, reserve, expires, seller,
                category, extra)  # fmt: skip

    def bid(self, n: int) -> tuple[Any, ...]:
        """The bid of event ``n`` (which must be a bid's), draw by draw: what :meth:`events`
        gives faster."""
        c = self.config
        y = self.small_bits(n)
        if n // c.total_proportion >= self._steady_epoch:
            a, b = self._routes[y & _ROW_MASK]
            last = self._last_auction(n)
            hot_a = last // HOT_BATCH * HOT_BATCH
            auction = hot_a if a < 0 else last - c.num_in_flight_auctions + a
            people = self._last_person(n) + 1
            hot_b = (people - 1) // HOT_BATCH * HOT_BATCH + 1
            bidder = hot_b if b < 0 else people - c.num_active_people + b
        else:
            z = self.bits(n)
            if (z & 0xFF) >= _cold(c.hot_auction_ratio):
                auction = self._last_auction(n) // HOT_BATCH * HOT_BATCH
            else:
                auction = self._random_auction(n, (z >> 8) & 0xFFFFFF)
            if ((z >> 32) & 0xFF) >= _cold(c.hot_bidders_ratio):
                bidder = self._last_person(n) // HOT_BATCH * HOT_BATCH + 1
            else:
                bidder = self._random_person(n, (z >> 40) & 0xFFFFFF)
        price = self._prices[(y >> 12) & _PRICE_MASK]
        channel, url = self._channel_of[(y >> 30) & 0x7FFF]
        extra = self._extras[(y >> 45) & _ROW_MASK]
        return (BID, self.timestamp(n), auction + FIRST_AUCTION_ID, bidder + FIRST_PERSON_ID,
                price, channel, url, extra)  # fmt: skip

    def event(self, n: int) -> tuple[Any, ...]:
        """Event number ``n`` (0-based)."""
        c = self.config
        offset = n % c.total_proportion
        if offset < c.person_proportion:
            return self.person(n)
        if offset < c.person_proportion + c.auction_proportion:
            return self.auction(n)
        return self.bid(n)

    def events(self, start: int, stop: int, step: int = 1) -> list[tuple[Any, ...]]:
        """Events ``start, start + step, ...`` below ``stop`` (equal to :meth:`event` of
        each, faster: the bids of a steady epoch share its ids and look their draws up)."""
        if start < 0 or stop > 1 << 32 or step < 1:
            raise ValueError(
                f"events({start}, {stop}, {step}): 0 <= start, stop <= 2^32, 1 <= step"
            )
        c = self.config
        total, first_bid = c.total_proportion, c.person_proportion + c.auction_proportion
        persons, auctions = c.person_proportion, c.auction_proportion
        in_flight, active = c.num_in_flight_auctions, c.num_active_people
        t0, t1, t2, t3 = self._small
        routes, prices, channel_of, extras = (
            self._routes,
            self._prices,
            self._channel_of,
            self._extras,
        )
        delay, base = self._delay_us, c.base_time_ms
        event = self.event
        out: list[tuple[Any, ...]] = []
        append = out.append
        n = start
        while n < stop:
            epoch = n // total
            at = epoch * total
            end = min(at + total, stop)
            first = max(n, at + first_bid)
            for m in range(n, min(first, end), step):  # people and auctions
                append(event(m))
            first = n + -(-(first - n) // step) * step  # the first bid of ours
            if epoch < self._steady_epoch or delay is None:
                for m in range(first, end, step):
                    append(event(m))
            else:
                last_auction = epoch * auctions + auctions - 1
                hot_auction = last_auction // HOT_BATCH * HOT_BATCH + FIRST_AUCTION_ID
                low_auction = last_auction - in_flight + FIRST_AUCTION_ID
                people = epoch * persons + persons
                hot_bidder = (people - 1) // HOT_BATCH * HOT_BATCH + 1 + FIRST_PERSON_ID
                low_bidder = people - active + FIRST_PERSON_ID
                for m in range(first, end, step):
                    y = t0[m & 255] ^ t1[(m >> 8) & 255] ^ t2[(m >> 16) & 255] ^ t3[m >> 24]
                    a, b = routes[y & 0xFFF]
                    channel, url = channel_of[(y >> 30) & 0x7FFF]
                    append(
                        (
                            BID,
                            base + m * delay // 1000,
                            hot_auction if a < 0 else low_auction + a,
                            hot_bidder if b < 0 else low_bidder + b,
                            prices[(y >> 12) & 0x3FFFF],
                            channel,
                            url,
                            extras[(y >> 45) & 0xFFF],
                        )
                    )
            n = end + (start - end) % step
        return out

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        n = 0
        while True:
            yield from self.events(n, n + 10_000)
            n += 10_000


def _reverse32(i: int) -> int:
    """Java's ``Integer.reverse``: the 32 bits of ``i`` reversed, as a signed int."""
    r = int(f"{i & 0xFFFFFFFF:032b}"[::-1], 2)
    return r - (1 << 32) if r >= 1 << 31 else r


_CACHE: dict[GeneratorConfig, Generator] = {}


def generator(config: GeneratorConfig | None = None) -> Generator:
    """The generator of ``config``, made once per process (its tables take most of a
    second to draw)."""
    config = config or GeneratorConfig()
    found = _CACHE.get(config)
    if found is None:
        found = _CACHE[config] = Generator(config)
    return found


def generate(events: int, config: GeneratorConfig | None = None) -> list[tuple[Any, ...]]:
    """Events ``0 .. events - 1`` of ``config``."""
    return generator(config).events(0, events)
