"""Build hook: everything about the package is in setup.cfg; this adds the C modules.

``acker._fastpath``, ``acker._ledger`` and ``topology.runtime._wire`` are optional: without a
C compiler and Python's headers the install still succeeds and the pure-Python code runs
(``acker.compiled.load``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("acker._fastpath", ["acker/_fastpath.c"], optional=True),
        Extension("acker._ledger", ["acker/_ledger.c"], optional=True),
        Extension("topology.runtime._wire", ["topology/runtime/_wire.c"], optional=True),
    ]
)
