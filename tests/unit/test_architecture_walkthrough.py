"""docs/ARCHITECTURE.md walks a tuple and an ack hop by hop through real functions: every
dotted name its walkthrough cites must resolve, so a rename or a move that forgets the
page fails here, and every hop names at least one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.dotted_names import resolve

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "ARCHITECTURE.md"
SECTIONS = ("### A tuple\n", "### An ack\n")
#: A cited name: in backticks, dotted, rooted in one of the product's packages.
CITED = re.compile(r"`((?:topology|acker|grouping)(?:\.[A-Za-z_]\w*)+)`")
#: A hop: a numbered item of the walkthrough, up to the next one or a blank line.
HOP = re.compile(r"^\d+\. (.*?)(?=^\d+\. |\n\n)", re.M | re.S)


def walkthrough(heading: str) -> str:
    text = PAGE.read_text()
    start = text.index(heading)
    end = text.index("\n### ", start + len(heading))
    return text[start:end]


@pytest.mark.parametrize("heading", SECTIONS, ids=["tuple", "ack"])
def test_every_hop_names_functions_that_exist(heading: str) -> None:
    section = walkthrough(heading)
    hops = HOP.findall(section + "\n\n")
    assert len(hops) >= 5, hops
    for number, hop in enumerate(hops, 1):
        names = CITED.findall(hop)
        assert names, f"hop {number} of {heading.strip()} cites no function"
        for name in names:
            try:
                resolve(name)
            except (ImportError, AttributeError):
                pytest.fail(f"{heading.strip()}, hop {number}: {name} does not resolve")


def test_the_walkthrough_follows_the_acker_s_own_functions() -> None:
    """The tuple's tree starts, and the ack travels, in acker/: the page says where."""
    cited = set(CITED.findall(walkthrough(SECTIONS[0]) + walkthrough(SECTIONS[1])))
    for name in (
        "acker.spout.SpoutAcking.track",
        "acker.anchoring.BoltAcking._ack",
        "acker.outbox.AckOutbox.drain",
        "acker.task.AckerTask.receive",
        "acker.pending.PendingTrees.complete_all",
    ):
        assert name in cited, name
        assert callable(resolve(name))
