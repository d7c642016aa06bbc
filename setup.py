"""Build hook: everything about the package is in setup.cfg; this adds the C modules.

``acker._fastpath``, ``acker._ledger``, ``topology.runtime.net._wire``,
``topology.runtime._basic`` and ``topology.runtime._spout`` are optional (``_basic`` and
``_spout`` reach acking only through ``acker._fastpath``'s C API, ``acker/_fastpath_api.h``,
and ``_spout`` uses ``_basic``'s FastRoute): without a
C compiler and Python's headers the install still succeeds and the pure-Python code runs
(``acker.compiled.load``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "acker._fastpath",
            ["acker/_fastpath.c"],
            depends=["acker/_fastpath_api.h", "acker/_ids.h"],
            optional=True,
        ),
        Extension("acker._ledger", ["acker/_ledger.c"], depends=["acker/_ids.h"], optional=True),
        Extension(
            "topology.runtime.net._wire",
            ["topology/runtime/net/_wire.c"],
            depends=["acker/_ids.h"],
            optional=True,
        ),
        Extension(
            "topology.runtime._basic",
            ["topology/runtime/_basic.c"],
            depends=["acker/_fastpath_api.h", "topology/runtime/_route.h"],
            optional=True,
        ),
        Extension(
            "topology.runtime._spout",
            ["topology/runtime/_spout.c"],
            depends=["acker/_fastpath_api.h", "topology/runtime/_route.h"],
            optional=True,
        ),
    ]
)
