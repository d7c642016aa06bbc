"""Unit tests for :class:`PeerSignals`: link tokens, which signals count, what is sent."""

from __future__ import annotations

import itertools

import pytest

from topology.runtime.backpressure import (
    BACKPRESSURE_REFRESH,
    BACKPRESSURE_TTL,
    MAX_TOKENS,
    TOKEN_REFRESH,
    PeerSignals,
)
from topology.runtime.serialization import decode

pytestmark = pytest.mark.timeout(30)


def signals() -> PeerSignals:
    """Worker 0 with peers 1 and 2; its link tokens are 101 and 102."""
    counter = itertools.count(101)
    return PeerSignals(0, [1, 2], randbits=lambda bits: next(counter))


def test_only_a_signal_quoting_the_links_token_counts() -> None:
    s = signals()
    assert s.tokens == {1: 101, 2: 102}
    assert not s.receive(1, True, [], 10.0)
    assert not s.receive(1, True, [102], 10.0)  # worker 2's link, not worker 1's
    assert not s.receive(3, True, [101], 10.0)  # no link to worker 3
    assert s.throttling == {}
    assert s.receive(1, True, [7, 101], 10.0)  # among tokens others put in its name
    assert s.throttling == {1: 10.0 + BACKPRESSURE_TTL}
    assert not s.receive(1, False, [7], 11.0)  # a forged "off" lifts nothing
    s.expire(10.0 + BACKPRESSURE_TTL - 0.1)
    assert set(s.throttling) == {1}
    s.expire(10.0 + BACKPRESSURE_TTL)
    assert s.throttling == {}


def test_tokens_are_due_at_once_and_then_every_refresh() -> None:
    s = signals()
    assert [(p, decode(f)) for p, f in s.tokens_due(5.0)] == [(1, [2, 0, 101]), (2, [2, 0, 102])]
    assert list(s.tokens_due(5.0 + TOKEN_REFRESH - 0.01)) == []
    assert len(list(s.tokens_due(5.0 + TOKEN_REFRESH))) == 2


def test_signals_quote_the_most_recent_tokens_heard_and_go_to_those_peers_only() -> None:
    s = signals()
    assert list(s.signals_due(1.0, congested=True)) == []  # no token heard yet
    s.heard_token(9, 1)  # no link to worker 9: ignored
    for token in range(MAX_TOKENS + 2):
        s.heard_token(2, token)
    s.heard_token(2, 2)  # heard again: the most recent
    sent = [(p, decode(f)) for p, f in s.signals_due(1.0 + BACKPRESSURE_REFRESH, congested=True)]
    assert sent == [(2, [1, 0, True, [3, 4, 5, 2]])]
    assert list(s.signals_due(1.5 + BACKPRESSURE_REFRESH, congested=True)) == []  # not due
    sent = [decode(f) for _, f in s.signals_due(1.6 + BACKPRESSURE_REFRESH, congested=False)]
    assert sent == [[1, 0, False, [3, 4, 5, 2]]]  # the "off" at once
    assert list(s.signals_due(9.0, congested=False)) == []  # nothing while not congested
