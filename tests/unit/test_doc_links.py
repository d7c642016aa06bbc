"""Every relative link in the README, the CHANGELOG and docs/*.md reaches something.

A page that was moved or renamed, or a heading that was reworded, leaves links that send a
reader nowhere.  This reads each page's Markdown links (``[text](target)``), leaves out
absolute URLs and mail links, and checks that the target file exists and, for a link with
``#anchor``, that the target page has a heading whose GitHub anchor is that name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: ``[text](target)`` or ``![alt](target)``, the target without spaces; an optional title.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def prose_lines(text: str) -> Iterator[str]:
    """The lines of a Markdown page outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a page's headings, numbered as GitHub numbers repeated ones."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(path.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return frozenset(out)


def links(path: Path) -> Iterator[str]:
    for line in prose_lines(path.read_text()):
        line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
        for match in LINK.finditer(line):
            yield match.group(1)


def broken(path: Path) -> list[str]:
    out = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            out.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{target}: no heading with that anchor in {dest.name}")
    return out


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    bad = broken(page)
    assert not bad, f"{page.relative_to(ROOT)} has broken links:\n" + "\n".join(bad)


def test_the_check_catches_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading: yes\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#a-code-heading-yes) [ok](#here) [web](https://x.org)\n"
        "# Here\n\n```\n[not a link](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](other.md#nope)\n"
    )
    assert broken(page) == [
        "missing.md: no such file",
        "other.md#nope: no heading with that anchor in other.md",
    ]
