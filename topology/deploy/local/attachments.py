"""What a LocalCluster keeps beside each topology it runs, in this process: attachments.

A test tool whose object stays in the test process while the workers run copies of it (a
``FeederSpout`` and its feed socket) registers an :data:`Attacher` here, once, when it is
imported (:mod:`topology.testing.feeder` does).  At submit, :class:`LocalCluster` calls
every attacher with the topology and keeps what they return; it closes those attachments
when the topology is killed, or fails to start.  So the testing kit plugs into the
deployment layer without the deployment layer importing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from topology.spec import Topology


class Attachment(Protocol):
    """Something of this process that lives as long as one running topology."""

    def close(self) -> None:
        """Release it (the topology is gone); called once."""


#: Given a topology about to be submitted, the attachments it needs (often none).
Attacher = Callable[[Topology], Iterable[Attachment]]

_attachers: list[Attacher] = []


def register_attacher(attacher: Attacher) -> None:
    """Call ``attacher`` for every topology a LocalCluster submits from now on (a function
    registered twice is called once)."""
    if attacher not in _attachers:
        _attachers.append(attacher)


def attach(topology: Topology) -> list[Attachment]:
    """Every registered attacher's attachments for ``topology``."""
    return [found for attacher in list(_attachers) for found in attacher(topology)]
