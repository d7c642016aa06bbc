"""Issue 28 (papercut 12): mypy in a user's project sees sparkstorm's types (PEP 561).

Every top-level package carries a ``py.typed`` marker and setup.cfg ships it
(``[options.package_data]``), so a wheel built from it contains the marker."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
TOP_LEVEL = ("topology", "acker", "grouping", "cli")


@pytest.mark.parametrize("package", TOP_LEVEL)
def test_every_top_level_package_has_a_py_typed_marker(package: str) -> None:
    assert (ROOT / package / "py.typed").is_file()


def test_the_build_ships_py_typed_in_every_top_level_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What setuptools' ``build_py`` would copy into a wheel, read from setup.cfg."""
    from setuptools.dist import Distribution

    monkeypatch.chdir(ROOT)
    dist = Distribution()
    dist.parse_config_files([str(ROOT / "setup.cfg")])
    build_py = dist.get_command_obj("build_py")
    build_py.ensure_finalized()
    shipped = {package: files for package, _src, _build, files in build_py.data_files}
    for package in TOP_LEVEL:
        assert "py.typed" in shipped.get(package, []), package


def test_the_build_ships_every_package_on_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-editable install has every package (a hand-kept list once missed two)."""
    from setuptools.dist import Distribution

    monkeypatch.chdir(ROOT)
    dist = Distribution()
    dist.parse_config_files([str(ROOT / "setup.cfg")])  # resolves packages = find:
    listed = set(dist.packages or [])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in TOP_LEVEL
        for init in (ROOT / top).rglob("__init__.py")
        if "static" not in init.parts
    }
    assert on_disk - listed == set()
    assert not any(p.startswith("tests") for p in listed)
