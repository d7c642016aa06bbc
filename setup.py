"""Build hook: everything about the package is in setup.cfg; this adds the one C module.

``topology._speedups`` is optional: without a C compiler and Python's headers the install
still succeeds and ``topology.speedups`` selects the pure-Python path.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("topology._speedups", ["topology/_speedups.c"], optional=True),
    ]
)
