"""Dotted names the docs cite (``package.module.Class.method``), resolved by import: the
tests that keep the docs' names true share this."""

from __future__ import annotations

import importlib


def resolve(name: str) -> object:
    """The object ``name`` names: the longest importable prefix, then attributes.

    Raises:
        ImportError: no prefix of ``name`` is an importable module.
        AttributeError: an attribute after the module is missing.
    """
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            target = getattr(target, attr)
        return target
    raise ImportError(name)


def resolves(name: str) -> bool:
    """Whether ``name`` is an importable module or an attribute path inside one."""
    try:
        resolve(name)
    except (ImportError, AttributeError):
        return False
    return True
