"""A stand-in for the runtime's collector that records what a component does, for tests
that drive a spout or bolt by hand (the connector tests)."""

from __future__ import annotations

from typing import Any


class Recorder:
    """Stands in for the runtime collector: records what the component does."""

    def __init__(self) -> None:
        self.emitted: list[tuple[str, list[Any], Any]] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.errors: list[Any] = []
        self.logged: list[str] = []

    def emit(self, values: Any, msg_id_or_anchors: Any = None, stream: str = "default") -> list:
        self.emitted.append((stream, list(values), msg_id_or_anchors))
        return []

    def ack(self, tup: Any) -> None:
        self.acked.append(tup)

    def fail(self, tup: Any, error: Any = None) -> None:
        self.failed.append(tup)

    def report_error(self, error: Any) -> None:
        self.errors.append(error)

    def log(self, message: str) -> None:
        self.logged.append(message)

    def on(self, stream: str = "default") -> list[list[Any]]:
        return [values for s, values, _ in self.emitted if s == stream]
