"""Event-time sessions per user, with out-of-order and late clicks.

    sparkstorm local examples/sessions.py:topology

clicks (spout: 8,000 clicks of 30 users over 80 s of event time, played 16x faster than
real time, up to 1 s out of order; 1 % held back 30 s) --fields["user"]--> sessions
(WindowedBolt: a session per user ends after 3 s without a click; the watermark trails
the newest click by 2 s) --> report (sessions and late clicks)

A click 1 s out of order still lands in its session (the watermark waits 2 s for it); a
click held back 30 s arrives after its session was closed and goes to the ``late`` stream
instead of opening a wrong one.  ``verify`` recomputes every session from the clicks that
were on time and checks the bolt found exactly those, and that every held-back click was
reported late.  At the end the spout emits one click per user far in the future (not
tracked by acking) so the watermark passes every open session: a bounded source's "end
of input".
"""

from __future__ import annotations

import random
import time

from topology import Bolt, Spout, TopologyBuilder, WindowedBolt

CLICKS = 8_000
USERS = 30
STEP = 0.01  # seconds of event time between clicks
JITTER = 1.0  # clicks come up to this much out of order ...
LAG = 2.0  # ... and the watermark waits this long for them
GAP = 3.0  # a session ends after this long without a click
HOLD_BACK = 3_000  # a late click is emitted this many clicks (30 s) after its time
SPEEDUP = 16  # event time runs this much faster than the wall clock
END = 1e9


def click(i: int) -> tuple[int, str, float] | None:
    """Click ``i``: (id, user, timestamp), or None when no user is active then.  Users
    are active 10 s of every 25 s (each at its own phase), so sessions begin and end."""
    rng = random.Random(i)
    t = i * STEP
    active = [u for u in range(USERS) if (t + u * 3.7) % 25.0 < 10.0]
    if not active:
        return None
    return i, f"user{rng.choice(active)}", round(t + rng.uniform(0, JITTER), 3)


def held_back(i: int) -> bool:
    """Whether click ``i`` is emitted late (only where it is sure to miss its session)."""
    return i < CLICKS - HOLD_BACK and random.Random(-i).random() < 0.01


class ClickSpout(Spout):
    outputs = ["id", "user", "ts"]

    def open(self, conf, context):
        self.opened = time.monotonic()
        self.i = 0
        self.held: list[tuple[int, tuple]] = []  # (emit at click index, click)
        self.ended = False

    def next_tuple(self):
        due = int((time.monotonic() - self.opened) * SPEEDUP / STEP)  # clicks by now
        for _ in range(max(0, min(20, due - self.i + 1))):
            if self.held and self.held[0][0] <= self.i:
                _, late = self.held.pop(0)
                self.emit(list(late), msg_id=late[0])
            elif self.i < CLICKS:
                found = click(self.i)
                if found is not None and held_back(self.i):
                    self.held.append((self.i + HOLD_BACK, found))
                elif found is not None:
                    self.emit(list(found), msg_id=found[0])
                self.i += 1
            elif not self.ended and not self.held:
                for user in range(USERS):  # end of input: moves every watermark past all
                    self.emit([-1, f"user{user}", END])
                self.ended = True

    def collect_results(self):
        return {"emitted_up_to": self.i, "ended": self.ended}


class SessionBolt(WindowedBolt):
    outputs = ["user", "start", "end", "clicks"]

    def execute(self, window):
        user = window.key[0]
        if window.start < END:
            self.emit([user, window.start, window.end, len(window.tuples)])


class ReportBolt(Bolt):
    def prepare(self, conf, context):
        self.sessions: list[list] = []
        self.late: list[int] = []

    def execute(self, tup):
        if tup.stream == "late":
            self.late.append(tup.values[0]["id"])
        else:
            self.sessions.append(list(tup.values))
        self.ack(tup)

    def collect_results(self):
        return {"sessions": self.sessions, "late": self.late}


sessions = (
    SessionBolt()
    .with_session_window(gap_seconds=GAP)
    .with_timestamp_field("ts")
    .with_key("user")
    .with_lag(LAG)
    .with_watermark_interval(0.05)  # 0.8 s of event time at 16x
    .with_late_tuple_stream("late")
)
builder = TopologyBuilder()
builder.set_spout("clicks", ClickSpout())
builder.set_bolt("sessions", sessions, parallelism=2).fields_grouping("clicks", ["user"])
report = builder.set_bolt("report", ReportBolt())
report.shuffle_grouping("sessions").shuffle_grouping("sessions", "late")
topology = builder.create_topology()


def expected_sessions() -> set[tuple[str, float, float, int]]:
    """Sessions computed offline from the clicks that were on time."""
    by_user: dict[str, list[float]] = {}
    for i in range(CLICKS):
        found = click(i)
        if found is not None and not held_back(i):
            by_user.setdefault(found[1], []).append(found[2])
    out = set()
    for user, stamps in by_user.items():
        stamps.sort()
        start = last = stamps[0]
        count = 1
        for ts in stamps[1:]:
            if ts >= last + GAP:
                out.add((user, start, last + GAP, count))
                start, count = ts, 0
            last = ts
            count += 1
        out.add((user, start, last + GAP, count))
    return out


def verify(results: dict) -> str:
    [spout] = results["clicks"].values()
    assert spout["ended"], f"the spout did not finish ({spout['emitted_up_to']} clicks read)"
    [report] = results["report"].values()
    got = {(u, round(s, 3), round(e, 3), n) for u, s, e, n in report["sessions"]}
    want = {(u, round(s, 3), round(e, 3), n) for u, s, e, n in expected_sessions()}
    assert got == want, (
        f"{len(want - got)} session(s) missing, e.g. {sorted(want - got)[:2]}; "
        f"{len(got - want)} unexpected, e.g. {sorted(got - want)[:2]}"
    )
    late = sorted(i for i in range(CLICKS) if held_back(i) and click(i) is not None)
    assert sorted(report["late"]) == late, f"late clicks {sorted(report['late'])} != {late}"
    clicks = sum(n for *_, n in got)
    return f"{len(got)} sessions of {clicks:,} clicks exact; {len(late)} late clicks reported"
