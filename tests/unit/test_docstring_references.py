"""Docstrings and docs that name the code name code that exists.

A docstring or page that cites ``topology.stats.status_report`` or ``cluster.status()``
after the code moved sends a newcomer looking for something that is not there.  Every
dotted name under one of the product's packages that a docstring, ``docs/*.md`` or the
README mentions must import (a module) or resolve (an attribute of one).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.dotted_names import resolves

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("topology", "acker", "grouping", "cli")
#: A dotted name rooted in one of the product's packages, e.g. ``topology.runtime.net.codec.fits``.
DOTTED = re.compile(r"(?<![\w./-])((?:{})(?:\.[A-Za-z_]\w*)+)".format("|".join(PACKAGES)))
#: Configuration keys share the ``topology.`` prefix; they are names, not code.
CONFIG_KEYS = set(yaml.safe_load((ROOT / "conf" / "defaults.yaml").read_text()))
#: Made-up keys the docs use as examples of a user's own (or misspelt) key.
EXAMPLE_KEYS = {"topology.words.file"}


def docstrings() -> Iterator[tuple[str, str]]:
    """(where, text) of every module, class and function docstring of the product."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            rel = path.relative_to(ROOT).as_posix()
            for node in [tree, *ast.walk(tree)]:
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
                    text = ast.get_docstring(node, clean=False)
                    if text:
                        yield f"{rel}:{getattr(node, 'name', '<module>')}", text


def pages() -> Iterator[tuple[str, str]]:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield path.relative_to(ROOT).as_posix(), path.read_text()


def unresolved(sources: Iterator[tuple[str, str]]) -> list[str]:
    missing = []
    for where, text in sources:
        for name in sorted(set(DOTTED.findall(text))):
            name = name.rstrip(".")
            if name.endswith((".py", ".md", ".yaml", ".c")) or name in CONFIG_KEYS | EXAMPLE_KEYS:
                continue
            if not resolves(name):
                missing.append(f"{where}: {name}")
    return missing


def test_every_dotted_name_a_docstring_cites_exists() -> None:
    missing = unresolved(docstrings())
    assert not missing, "names that do not resolve:\n" + "\n".join(missing)


def test_every_dotted_name_the_docs_cite_exists() -> None:
    missing = unresolved(pages())
    assert not missing, "names that do not resolve:\n" + "\n".join(missing)


def test_the_check_catches_a_moved_name() -> None:
    assert resolves("topology.runtime.net.codec")
    assert resolves("topology.errors.TopologyError") or resolves("topology.errors")
    assert not resolves("topology.stats.no_such_module")
    assert unresolved(iter([("x", "see ``topology.status_report`` for that")]))
