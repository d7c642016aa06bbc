"""Building a checkpointed worker's checkpoint agent: its state backend, its writer, and
the live state its stateful bolts keep (``topology.state.backend``)."""

from __future__ import annotations

from collections.abc import Callable

from topology.state.backends import open_backend
from topology.state.live import LiveState
from topology.state.live.factory import open_live_state
from topology.state.writer import InlineWriter, ThreadWriter

from ..net.transfer import Transfer
from ..settings import WorkerSetup
from ..tasks.collector import ErrorReport
from .hooks import RecoveryEpoch
from .worker import WorkerCheckpoints


def checkpoint_agent(
    setup: WorkerSetup,
    transfer: Transfer,
    epoch: RecoveryEpoch,
    report: ErrorReport,
    now: float,
    clock: Callable[[], float],
    wall_clock: Callable[[], float],
) -> WorkerCheckpoints:
    """The checkpoint agent of a checkpointed topology's worker (before its tasks).  Its
    stateful bolts' live state is the backend ``topology.state.backend`` names, expiring
    keys by ``wall_clock`` (TTL times are stored in checkpoints, so any host's clock reads
    them); ``clock`` is topology time (checkpoint intervals)."""
    settings = setup.settings
    state_id = setup.state_id or setup.topology_name

    def new_state(name: str, single_field: bool) -> LiveState:
        return open_live_state(
            setup.conf,
            location=f"{state_id}/{name}",
            key_groups=settings.key_groups,
            clock=wall_clock,
            single_field=single_field,
        )

    return WorkerCheckpoints(
        worker_index=setup.worker_index,
        topology=setup.topology,
        assignment=setup.assignment,
        transfer=transfer,
        epoch=epoch,
        backend=open_backend(setup.conf, state_id),
        writer=InlineWriter() if settings.state_provider == "memory" else ThreadWriter(),
        report=report,
        settings=settings,
        now=now,
        clock=clock,
        new_state=new_state,
        wall_clock=wall_clock,
    )
