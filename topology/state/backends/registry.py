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
        # and the StateBackend methods: reserve, write, complete, latest, read, scopes,
        # read_all, pin, unpin, info, close

imported by :mod:`topology.state.backends` (the built-in ones) or by the author's code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, TypeVar

from topology import config as cfg
from topology import user_dirs
from topology.errors import ConfigError, SparkstormError

Entries = list[tuple[bytes, bytes | None]]
#: Complete checkpoints kept when ``topology.state.checkpoints.retained`` is not given (older
#: ones, unless pinned, and what only they need are removed).
KEEP_COMPLETE = 3


class CheckpointGone(SparkstormError):
    """A checkpoint asked for (to pin, or its info) is not, or no longer, a complete
    checkpoint the backend keeps."""

    def __init__(self, checkpoint: int, latest: int) -> None:
        super().__init__(
            f"checkpoint {checkpoint} is not a complete checkpoint the state backend keeps "
            f"(the newest is {latest}): take a newer one"
        )
        self.checkpoint = checkpoint


class CorruptCheckpoint(SparkstormError):
    """Stored checkpoint data a provider cannot read as it wrote it (hostile or damaged);
    the message names the file or row and what is wrong.  A restore reports it as the
    component's error and goes on without that scope's entries."""


def retained(conf: Mapping[str, Any]) -> int:
    """``topology.state.checkpoints.retained``: how many complete checkpoints a backend
    opened under ``conf`` keeps."""
    value = conf.get(cfg.CHECKPOINTS_RETAINED)
    return value if isinstance(value, int) and value >= 1 else KEEP_COMPLETE


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
        and compact what only older checkpoints need: the newest
        ``topology.state.checkpoints.retained`` complete checkpoints (:func:`retained`) and
        the pinned ones stay restorable."""
        ...

    def latest(self) -> int:
        """The newest complete checkpoint (0: none)."""
        ...

    def scopes(self) -> list[str]:
        """Every scope with committed rows, sorted."""
        ...

    def pin(self, checkpoint: int) -> None:
        """Keep complete checkpoint ``checkpoint`` and every row it needs through compaction
        until :meth:`unpin` (in this and every other process opening the same store: a
        savepoint pins while the workers go on checkpointing).  Raises
        :class:`CheckpointGone` when it is not, or no longer, a kept complete checkpoint.
        Pinning a checkpoint this process holds again renews the pin; a pin whose process
        is gone, or that was not renewed for :data:`.pins.LEASE_SECS`, is dropped by the
        next compaction (a client killed while it copied)."""
        ...

    def unpin(self, checkpoint: int) -> None:
        """Let ``checkpoint`` be compacted again (nothing if it is not pinned)."""
        ...

    def info(self, checkpoint: int) -> dict[str, Any]:
        """The ``info`` that :meth:`complete` recorded for a kept complete checkpoint
        (:class:`CheckpointGone` for any other)."""
        ...

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        """The committed entries of ``scope`` as of ``checkpoint`` whose key ``keep`` takes."""
        ...

    def read_all(self, checkpoint: int, scope: str) -> Iterator[tuple[bytes, bytes]]:
        """Every committed entry of ``scope`` as of ``checkpoint``, in no set order; streamed
        from the store where it can (a savepoint of a scope larger than memory)."""
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
    """``topology.state.dir`` (a path or URL, no trailing ``/``), or this user's default,
    ``<tmp>/sparkstorm-<uid>/state`` (:mod:`topology.user_dirs`; nothing is made)."""
    return str(conf.get(cfg.STATE_DIR) or user_dirs.default_dir(cfg.STATE_DIR)).rstrip("/")


def local_state_folder(conf: Mapping[str, Any], *parts: str) -> str | None:
    """:func:`state_folder` as a local path, with ``parts`` below it, made and checked
    (:func:`topology.user_dirs.ensure_dir`: the default private to this user, a configured
    one not writable by everyone without the sticky bit, each of ``parts`` this user's
    alone); None for a URL of another filesystem.  Raises
    :class:`~topology.user_dirs.LocalDirError` (one line)."""
    folder = state_folder(conf).removeprefix("file://")
    if "://" in folder:
        return None
    return str(user_dirs.ensure_dir(conf, cfg.STATE_DIR, *parts))
