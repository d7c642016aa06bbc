"""The compiled batch steps of the acker ledger (``acker._ledger``) where only C can go wrong.

``test_ledger.py`` runs every ledger behaviour on both the compiled and the Python steps;
this adds: the two agree outcome for outcome on random traffic with fails, reference counts
stay put (a leak or an early free in C shows up here), and bad arguments from a caller
raise instead of crashing.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from acker import ledger as ledger_module
from acker.ledger import AckLedger, Outcome

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(ledger_module._compiled is None, reason="acker._ledger not built"),
]

TIMEOUT = 10.0


def traffic(seed: int) -> list[tuple[str, Any]]:
    """Batches of inits, combined acks and fails of 300 trees, shuffled (acks before
    inits, fails before and after), some trees left incomplete."""
    rng = random.Random(seed)
    messages: list[tuple[str, Any]] = []
    for _ in range(300):
        root, spout = rng.getrandbits(64) or 1, rng.randrange(1, 5)
        edges = [rng.getrandbits(64) for _ in range(rng.randrange(0, 4))]
        init = 0
        for e in edges:
            init ^= e
        messages.append(("init", [root, init, spout]))
        for e in edges:
            if rng.random() < 0.95:
                messages.append(("ack", (root, e)))
        if rng.random() < 0.1:
            messages.append(("fail", (root, f"reason {root % 7}")))
    rng.shuffle(messages)
    return messages


def replay(messages: list[tuple[str, Any]]) -> tuple[list[Any], int]:
    """Apply ``messages`` in batches of 9 as the acker task does; every outcome, in order,
    and the entries left."""
    ledger = AckLedger(TIMEOUT, 0.0)
    outcomes: list[Any] = []
    for i in range(0, len(messages), 9):
        batch = messages[i : i + 9]
        acks: dict[int, int] = {}
        for _, (root, value) in (m for m in batch if m[0] == "ack"):
            acks[root] = acks.get(root, 0) ^ value
        completed: dict[int, list[int]] = {}
        failed: list[Outcome] = []
        ledger.init_all([m[1] for m in batch if m[0] == "init"], completed, failed)
        ledger.ack_all(acks, completed, failed)
        for _, (root, reason) in (m for m in batch if m[0] == "fail"):
            outcome = ledger.fail(root, reason)
            if outcome is not None:
                failed.append(outcome)
        outcomes.append((completed, failed))
    return outcomes, len(ledger)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compiled_and_python_steps_give_the_same_outcomes_in_the_same_order(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = traffic(seed)
    compiled = replay(messages)
    monkeypatch.setattr(ledger_module, "_compiled", None)
    python = replay(messages)
    assert compiled == python
    assert sum(len(roots) for c, _ in compiled[0] for roots in c.values()) > 200
    assert any(f for _, f in compiled[0])  # the traffic did fail some trees


def test_reference_counts_stay_put_over_many_batches() -> None:
    spout, reason, value = 7, "boom-reason", 2**63 + 5
    root_base = 2**62
    ledger = AckLedger(TIMEOUT, 0.0)
    before = [sys.getrefcount(x) for x in (spout, reason, value, Outcome)]
    for n in range(2000):
        completed: dict[int, list[int]] = {}
        failed: list[Outcome] = []
        root = root_base + n
        ledger.ack_all({root: value}, completed, failed)  # before the init
        ledger.init_all([[root, value, spout]], completed, failed)  # completes it
        ledger.fail(root + 1, reason)  # before its init
        ledger.ack_all({root + 1: 1}, completed, failed)  # its spout is not known yet
        ledger.init_all([[root + 1, value, spout]], completed, failed)  # fails it
        ledger.init_all([[root + 2, 0, spout]], completed, failed)  # no edges: complete
        assert completed == {spout: [root, root + 2]}
        assert failed == [Outcome(root + 1, spout, reason)]
        del completed, failed
    assert len(ledger) == 0
    assert [sys.getrefcount(x) for x in (spout, reason, value, Outcome)] == before


def test_bad_arguments_from_a_caller_raise_instead_of_crashing() -> None:
    steps = ledger_module._compiled
    buckets = AckLedger(TIMEOUT, 0.0)._entries.buckets
    for call in (
        lambda: steps.ack_all(buckets, {}, {}),  # too few
        lambda: steps.ack_all([], {1: 1}, {}, [], Outcome),  # no generations
        lambda: steps.ack_all([[]], {1: 1}, {}, [], Outcome),  # a generation not a dict
        lambda: steps.ack_all(buckets, {}, [], [], Outcome),  # completed not a dict
        lambda: steps.init_all(buckets, 5, {}, [], Outcome),  # inits not a sequence
        lambda: steps.init_all(buckets, [], {}, {}, Outcome),  # failed not a list
    ):
        with pytest.raises(TypeError):
            call()
    bucket: dict[int, Any] = {9: "not an entry"}
    with pytest.raises(SystemError, match="entry"):
        steps.ack_all([bucket], {9: 1}, {}, [], Outcome)
    completed: dict[int, Any] = {4: "not a list"}
    buckets[0][1] = [0x5, 4, None]
    with pytest.raises(TypeError, match="completed"):
        steps.ack_all(buckets, {1: 0x5}, completed, [], Outcome)
