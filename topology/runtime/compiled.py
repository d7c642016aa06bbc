"""Which of sparkstorm's optional C modules this process runs (benchmark headers, tests).

Each has a pure-Python twin, taken when the install could not build it or
``SPARKSTORM_PURE_PYTHON`` is set (``acker.compiled.load``).  Said here, in the runtime,
because the runtime sees all five: the acker's per-word steps and ledger loops, its own
frame checks, a BasicBolt task's loop and emit, and a spout's emit.
"""

from __future__ import annotations

from acker import fastpath, ledger

from . import basic_path, spout_path
from .net import codec as wire


def describe() -> str:
    """Which hot paths run compiled in this process, for benchmark headers."""
    parts = [
        f"tuple path {'compiled' if fastpath.COMPILED else 'pure Python'} (acker._fastpath)",
        f"acker ledger {'compiled' if ledger.COMPILED else 'pure Python'} (acker._ledger)",
        f"frame checks {'compiled' if wire.COMPILED else 'pure Python'}"
        " (topology.runtime.net._wire)",
        f"BasicBolt loop {'compiled' if basic_path.COMPILED else 'pure Python'}"
        " (topology.runtime._basic)",
        f"spout emit {'compiled' if spout_path.COMPILED else 'pure Python'}"
        " (topology.runtime._spout)",
    ]
    return ", ".join(parts)
