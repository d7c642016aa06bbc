"""Running a test on a compiled path and on its pure-Python twin (shared by the tests of
``topology.runtime.basic_path`` and ``topology.runtime.spout_path``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest

#: The two paths, the reference first.
PATHS = ("pure", "compiled")


class PathSwitch:
    """The two paths of ``selector`` (a module whose ``COMPILED`` says whether tasks built
    now take the compiled path); ``not_built`` is the reason a test skips with when only
    the pure side could run."""

    def __init__(self, selector: ModuleType, not_built: str) -> None:
        self.selector = selector
        self.not_built = not_built

    @contextmanager
    def on_path(self, path: str) -> Iterator[None]:
        """Tasks built inside take ``path``: "compiled" (as installed) or "pure"."""
        with pytest.MonkeyPatch.context() as patch:
            if path == "pure":
                patch.setattr(self.selector, "COMPILED", False)
            yield

    def paths(self) -> tuple[str, ...]:
        """The paths this install can run."""
        return PATHS if self.selector.COMPILED else PATHS[:1]

    def compiled_side_ran(self) -> None:
        """End of a test whose every check ran on the pure side: skip when the compiled
        one could not run (a clear reason in the report rather than a silent pass)."""
        if not self.selector.COMPILED:
            pytest.skip(self.not_built)


def compiled_and_pure(
    module: ModuleType, attribute: str, *, twins: tuple[str, ...] = (), autouse: bool = True
) -> Any:
    """An autouse fixture (assign it to a name in the test module) that runs every test of
    the module twice where ``module.attribute`` — an optional compiled module the code
    under test reads when it runs — is set: as installed, and with it None (``pure``).

    ``twins``: names of ``module`` bound to the compiled functions at import, replaced on
    the pure side by their twins ``py_<name>``; ``autouse=False``: only the tests that
    ask for the fixture by the name it is assigned to run twice."""
    params = list(PATHS) if getattr(module, attribute) is not None else [PATHS[0]]

    @pytest.fixture(autouse=autouse, params=params)
    def loops(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
        if request.param == "pure":
            monkeypatch.setattr(module, attribute, None)
            for name in twins:
                monkeypatch.setattr(module, name, getattr(module, f"py_{name}"))
        return str(request.param)

    return loops
