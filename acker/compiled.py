"""Loading sparkstorm's optional C modules, honouring ``SPARKSTORM_PURE_PYTHON``.

``pip install`` compiles ``acker/_fastpath.c``, ``acker/_ledger.c`` and the runtime's
``_wire.c``, ``_basic.c`` and ``_spout.c`` when the machine has a C compiler and Python's
headers; each module that has a compiled twin asks
:func:`load` for it and runs its pure-Python code when it gets None.  Here (not in
``topology``) so the acker, which never imports ``topology``, can use it too.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: Environment variable that turns every compiled module off (any value but "" / "0").
PURE_PYTHON_ENV = "SPARKSTORM_PURE_PYTHON"


def load(name: str) -> ModuleType | None:
    """The compiled module ``name``, or None when it was not built or pure Python is
    asked for (a worker takes its environment from the process that starts it)."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
