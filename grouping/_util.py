"""Validation helpers shared by the grouping implementations (called from ``prepare``)."""

from __future__ import annotations

from .base import GroupingContext


def require_targets(context: GroupingContext, kind: str) -> tuple[int, ...]:
    """``context.target_tasks``, or ValueError naming the edge when there are none."""
    if not context.target_tasks:
        raise ValueError(
            f"{kind} grouping from {context.source_component!r} to "
            f"{context.target_component!r} on stream {context.stream!r}: no target tasks"
        )
    return context.target_tasks


def key_indexes(context: GroupingContext, kind: str) -> tuple[int, ...]:
    """Positions of the key fields in the stream, or ValueError naming the bad field."""
    where = (
        f"{kind} grouping from {context.source_component!r} to "
        f"{context.target_component!r} on stream {context.stream!r}"
    )
    if not context.grouping_fields:
        raise ValueError(f"{where}: no grouping fields given")
    for field in context.grouping_fields:
        if field not in context.source_fields:
            raise ValueError(
                f"{where}: grouping field {field!r} is not one of the stream's "
                f"fields {list(context.source_fields)!r}"
            )
    return context.field_indexes()
