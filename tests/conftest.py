"""Settings shared by every tier.

Property-based tests (hypothesis) run derandomized: the same examples on every run, so CI
is repeatable.  ``SPARKSTORM_HYPOTHESIS_PROFILE`` picks how many:

* ``quick`` (the default): a quarter of each test's examples (at least 10) — a developer's
  ``python3 -m pytest``;
* ``ci`` (set by ``.ci/run``): each test's own count (100 where a test names none).

``SPARKSTORM_FUZZ_EXAMPLES=N`` runs them with fresh random examples instead, ``N`` per
test (docs/SECURITY.md, "How it is checked").  docs/TESTING.md has the figures.

The suite runs in parallel (pytest-xdist, ``-n`` and ``--dist loadgroup`` in setup.cfg).
Each xdist worker is its own process with its own session fixtures (a ZooKeeper, a
redis-server, a PostgreSQL, each on a free port in a temporary directory of its own).  The
tests that share something too expensive to start once per worker, or that must run in
order, are put in one xdist group each by :func:`pytest_collection_modifyitems`, so that
one worker runs all of them (docs/TESTING.md)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.cluster.netns import LIGHT_JVM

# Every JVM the tests start (ZooKeeper, Spark, the launchers in between) compiles with C1
# only and one GC thread: they live for seconds to minutes, and on two cores a full JIT
# costs more CPU than it saves (docs/TESTING.md).  A developer's own setting wins.
os.environ.setdefault("JAVA_TOOL_OPTIONS", LIGHT_JVM)

#: Examples per property test in a longer, random run (unset: a derandomized run).
FUZZ_EXAMPLES = os.environ.get("SPARKSTORM_FUZZ_EXAMPLES")
#: ``quick`` (default) or ``ci``: how many derandomized examples (see above).
PROFILE = os.environ.get("SPARKSTORM_HYPOTHESIS_PROFILE", "quick")
#: The quick profile runs each property test's examples divided by this, at least
#: ``QUICK_MIN_EXAMPLES``.
QUICK_DIVISOR = 4
QUICK_MIN_EXAMPLES = 10

if PROFILE not in ("quick", "ci"):
    raise pytest.UsageError(f"SPARKSTORM_HYPOTHESIS_PROFILE={PROFILE!r}: use quick or ci")
settings.register_profile("ci", derandomize=True, max_examples=100, print_blob=True)
settings.register_profile("quick", settings.get_profile("ci"))
settings.register_profile(
    "long", derandomize=False, max_examples=int(FUZZ_EXAMPLES or 1000), print_blob=True
)
# Tests are decorated with the "ci" profile's settings (a test's own @settings override
# them); the quick profile scales each test's count at collection (quick_examples()).
settings.load_profile("long" if FUZZ_EXAMPLES else "ci")

#: The session fixture that starts a SparkContext (a JVM of ~1 GB taking ~20 s to start):
#: every test that uses it runs on one xdist worker, so the suite starts one, not one each.
SPARK_FIXTURE = "spark_backend"


def xdist_group(item: pytest.Item) -> str | None:
    """The xdist group ``item`` belongs to, or None when any worker may run it alone.

    * the multi-host tier: one cluster for the module, tests in order;
    * the Spark tier's tests on the session's SparkContext ("spark"), and its other tests
      ("spark-processes": ``sparkstorm local`` and nimbus processes, each starting a Spark
      and a ZooKeeper JVM of its own), so that at most two Spark tests run at once;
    * a module with a module-scoped fixture (a LocalCluster, a UI server): its tests share
      the fixture, so they run together, in order.
    """
    if item.get_closest_marker("cluster") is not None:
        return "cluster"
    fixtures = getattr(item, "fixturenames", ())
    if item.get_closest_marker("spark") is not None:
        return "spark" if SPARK_FIXTURE in fixtures else "spark-processes"
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for name in fixtures:
            defs = info.name2fixturedefs.get(name, ())
            if defs and defs[-1].scope == "module":
                return item.nodeid.split("::", 1)[0]
    return None


def quick_examples(items: list[pytest.Item]) -> None:
    """Scale each property test's examples for the quick profile: its own settings (its
    ``@settings`` or the "ci" profile's) with ``max_examples`` divided."""
    done: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        test = getattr(test, "__func__", test)  # a method's function
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is None or id(test) in done:
            continue
        done.add(id(test))
        count = max(QUICK_MIN_EXAMPLES, own.max_examples // QUICK_DIVISOR)
        test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
            own, max_examples=min(own.max_examples, count)
        )


#: The groups whose tests take longest in all (docs/TESTING.md), longest first: collected
#: first, so that xdist (``--no-loadscope-reorder`` in setup.cfg: scopes in collection
#: order) starts each on a worker of its own at once, and the rest fills the gaps.
FIRST_GROUPS = ("spark", "cluster", "spark-processes")


def group_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    return None if marker is None else str(marker.args[0] if marker.args else marker.kwargs["name"])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its xdist group (before xdist reads the marks) and put the
    longest groups first; scale property tests to the quick profile."""
    if PROFILE == "quick" and not FUZZ_EXAMPLES:
        quick_examples(items)
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    order = {group: rank for rank, group in enumerate(FIRST_GROUPS)}
    items.sort(key=lambda item: order.get(group_of(item) or "", len(FIRST_GROUPS)))
