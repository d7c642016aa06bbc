"""The states of a submitted topology, one definition for every layer.

A topology's record in ZooKeeper, the ``status`` and ``monitor`` views, Prometheus and
LocalCluster's summaries all carry one of these values.  They are ``str`` (a
:class:`enum.StrEnum`), so records stay plain JSON / msgpack strings and compare equal to
the text a record read back holds.

Transitions (the nimbus drives them; see ``topology.deploy.cluster.plan``):
``SUBMITTED`` → ``ACTIVE`` or ``INACTIVE`` (the submit's initial status) ⇄ each other;
either → ``REBALANCING`` → back to the status it had; any → ``KILLED``; ``SUBMITTED`` or
a live one → ``FAILED`` when its workers cannot be placed or started.
"""

from __future__ import annotations

from enum import StrEnum


class TopologyStatus(StrEnum):
    """One topology's state, as its record and every status view spell it."""

    SUBMITTED = "SUBMITTED"
    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"
    REBALANCING = "REBALANCING"
    KILLED = "KILLED"
    FAILED = "FAILED"


#: Running (workers placed), whether its spouts are on or off.
LIVE = frozenset({TopologyStatus.ACTIVE, TopologyStatus.INACTIVE})
#: Over: nothing will run again under this topology id.
ENDED = frozenset({TopologyStatus.KILLED, TopologyStatus.FAILED})
