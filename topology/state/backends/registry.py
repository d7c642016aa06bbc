"""What a state backend is, and the one registry of providers that config validation reads.

A provider adds itself with :func:`register` on its class; the class opens a backend for a
topology's state and removes that state (its classmethods ``open`` and ``remove``, see
:class:`Provider`).  Registering also makes ``topology.state.provider`` take the new name
(:func:`topology.config.register_choices`), so a provider is one module::

    @register("redis")
    class RedisBackend:
        @classmethod
        def open(cls, conf, state_id): ...
        @classmethod
        def remove(cls, conf, state_id): ...
        # and the StateBackend methods: reserve, write, complete, latest, read, close

imported by :mod:`topology.state.backends` (the built-in ones) or by the author's code.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from topology import config as cfg
from topology.errors import ConfigError

Entries = list[tuple[bytes, bytes | None]]
#: Complete checkpoints kept (older ones and what only they need are removed).
KEEP_COMPLETE = 3


class StateBackend(Protocol):
    """Durable storage of checkpoints; every method returns once what it did is durable.

    Rows are written under ``(checkpoint, epoch)``: the epoch is the recovery epoch of the
    writer (see :mod:`topology.state.checkpoint`).  :meth:`complete` commits exactly the rows
    of that pair, so a late write from before a rollback, even under a reused checkpoint
    id, is never read.
    """

    def reserve(self) -> int:
        """A new id above every id used so far, durably (a coordinator's incarnation)."""
        ...

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None: ...

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        """Commit the rows of ``(checkpoint, epoch)``; drop uncommitted rows at or below it
        and compact what only older checkpoints need."""
        ...

    def latest(self) -> int:
        """The newest complete checkpoint (0: none)."""
        ...

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        """The committed entries of ``scope`` as of ``checkpoint`` whose key ``keep`` takes."""
        ...

    def close(self) -> None: ...


class Provider(Protocol):
    """A value of ``topology.state.provider`` (a backend class, through its classmethods)."""

    def open(self, conf: Mapping[str, Any], state_id: str) -> StateBackend:
        """The backend holding the checkpoints of ``state_id`` (a topology id on a
        cluster) under ``conf``."""
        ...

    def remove(self, conf: Mapping[str, Any], state_id: str) -> None:
        """Delete every checkpoint of ``state_id`` where this process can (a killed
        LocalCluster topology's; shared stores are left to their owners)."""
        ...


#: Every registered provider by name, in the order registered (error messages list them).
PROVIDERS: dict[str, Provider] = {}

P = TypeVar("P", bound=Provider)


def register(name: str) -> Callable[[P], P]:
    """Class decorator: the provider named ``name`` (``topology.state.provider: name``)."""

    def add(provider: P) -> P:
        PROVIDERS[name] = provider
        cfg.register_choices(cfg.STATE_PROVIDER, PROVIDERS)
        return provider

    return add


def provider(conf: Mapping[str, Any]) -> Provider:
    """The provider ``topology.state.provider`` names (:class:`ConfigError` if none)."""
    name = conf.get(cfg.STATE_PROVIDER, "sqlite")
    found = PROVIDERS.get(name) if isinstance(name, str) else None
    if found is None:
        raise ConfigError(f"{cfg.STATE_PROVIDER} must be {cfg.one_of(PROVIDERS)}, got {name!r}")
    return found


def state_folder(conf: Mapping[str, Any]) -> str:
    """``topology.state.dir`` (a path or URL, no trailing ``/``), or the default under the
    temporary directory."""
    default = os.path.join(tempfile.gettempdir(), "sparkstorm-state")
    return str(conf.get(cfg.STATE_DIR) or default).rstrip("/")
