"""Storm habits that just work (issue 13): component classes written Storm-style are
rejected when the topology is built, naming the component, its class and the fix; and
``get_component_configuration()`` is honoured, between the topology conf and the
declarer's ``add_configuration``."""

from __future__ import annotations

from typing import Any

import pytest

from topology import (
    BasicBolt,
    Bolt,
    Spout,
    StatefulBolt,
    TopologyBuilder,
    TopologyValidationError,
    Tuple,
    Window,
    WindowedBolt,
)
from topology.runtime.inprocess import InProcessRunner
from topology.testing import FeederSpout

pytestmark = pytest.mark.timeout(30)


def numbers(limit: int = 12) -> FeederSpout:
    """Emits 0 .. limit-1 once each, tracked (msg id = the number)."""
    return FeederSpout(["n"], [[i] for i in range(limit)])


class Sink(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def problems_of(bolt: Any = None, spout: Any = None) -> list[str]:
    """The validation problems of a topology with ``spout`` and ``bolt`` (none: [])."""
    builder = TopologyBuilder()
    builder.set_spout("source", spout if spout is not None else numbers())
    if bolt is not None:
        builder.set_bolt("work", bolt).shuffle_grouping("source")
    try:
        builder.create_topology()
    except TopologyValidationError as exc:
        return exc.problems
    return []


# -- Storm-style methods rejected at create_topology() -----------------------------------


class StormStyleBasic(BasicBolt):
    def execute(self, tup: Tuple) -> None:
        self.emit([tup[0]])


class BasicWithBoth(BasicBolt):
    def process(self, tup: Tuple) -> None:
        pass

    def execute(self, tup: Tuple) -> None:
        pass


class EmptyBasic(BasicBolt):
    pass


class BoltWithProcess(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


class EmptyBolt(Bolt):
    pass


class EmptyStatefulBolt(StatefulBolt):
    pass


class EmptySpout(Spout):
    outputs = ["n"]


class CamelSpout(Spout):
    outputs = ["n"]

    def nextTuple(self) -> None:  # noqa: N802 (the habit under test)
        pass


class CamelDeclare(Bolt):
    def declareOutputFields(self, declarer: Any) -> None:  # noqa: N802
        declarer.declare(["n"])

    def execute(self, tup: Tuple) -> None:
        pass


class WindowWithProcess(WindowedBolt):
    def process(self, window: Window) -> None:
        pass


class EmptyWindow(WindowedBolt):
    pass


@pytest.mark.parametrize(
    ("bolt", "spout", "expected"),
    [
        (StormStyleBasic(), None, "bolt 'work' (StormStyleBasic): "),
        (StormStyleBasic(), None, "rename execute to process"),
        (BasicWithBoth(), None, "execute() is never called"),
        (EmptyBasic(), None, "must implement process(tup)"),
        (BoltWithProcess(), None, "rename process to execute"),
        (EmptyBolt(), None, "implement execute(tup)"),
        (EmptyStatefulBolt(), None, "implement execute(tup)"),
        (None, EmptySpout(), "spout 'source' (EmptySpout): a Spout must implement next_tuple()"),
        (None, CamelSpout(), "defines nextTuple(), which nothing calls: rename it to next_tuple()"),
        (CamelDeclare(), None, "rename it to declare_output_fields()"),
        (WindowWithProcess().with_tumbling_window(count=2), None, "rename process to execute"),
        (EmptyWindow().with_tumbling_window(count=2), None, "implement execute(window)"),
    ],
)
def test_storm_style_components_are_rejected_naming_id_class_and_fix(
    bolt: Any, spout: Any, expected: str
) -> None:
    problems = problems_of(bolt, spout)
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_every_trap_is_listed_at_once() -> None:
    builder = TopologyBuilder()
    builder.set_spout("source", EmptySpout())
    builder.set_bolt("a", StormStyleBasic()).shuffle_grouping("source")
    builder.set_bolt("b", EmptyBolt()).shuffle_grouping("source")
    with pytest.raises(TopologyValidationError) as info:
        builder.create_topology()
    assert [p.split(":")[0] for p in info.value.problems] == [
        "spout 'source' (EmptySpout)",
        "bolt 'a' (StormStyleBasic)",
        "bolt 'b' (EmptyBolt)",
    ]


def test_components_written_the_sparkstorm_way_pass() -> None:
    class Split(BasicBolt):
        def process(self, tup: Tuple) -> None:
            pass

    class Windows(WindowedBolt):
        def execute(self, window: Window) -> None:
            pass

    assert problems_of(Split()) == []
    assert problems_of(Sink()) == []
    assert problems_of(Windows().with_tumbling_window(count=2)) == []


def test_a_basic_bolt_subclass_inherits_process_from_its_own_base() -> None:
    class Base(BasicBolt):
        def process(self, tup: Tuple) -> None:
            pass

    class Derived(Base):
        pass

    assert problems_of(Derived()) == []


# -- get_component_configuration() -------------------------------------------------------


class SeesConf(Bolt):
    """Keeps the conf it was prepared with; configures itself Storm-style."""

    def __init__(self, own: Any) -> None:
        self.own = own

    def get_component_configuration(self) -> Any:
        return self.own

    def prepare(self, conf: Any, context: Any) -> None:
        self.conf = dict(conf)

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_component_configuration_sits_between_topology_conf_and_declarer() -> None:
    own = {"my.a": "component", "my.b": "component", "topology.tick.tuple.freq.secs": 5}
    builder = TopologyBuilder()
    builder.set_spout("source", numbers())
    builder.set_bolt("work", SeesConf(own)).shuffle_grouping("source").add_configuration(
        "my.b", "declarer"
    )
    topology = builder.create_topology()
    conf = {"my.a": "topology", "my.b": "topology", "my.c": "topology"}
    runner = InProcessRunner(topology, conf)
    seen = runner.instance("work").conf
    assert (seen["my.a"], seen["my.b"], seen["my.c"]) == ("component", "declarer", "topology")
    assert seen["topology.tick.tuple.freq.secs"] == 5


def test_set_bolt_config_argument_also_wins_over_the_component() -> None:
    builder = TopologyBuilder()
    builder.set_spout("source", numbers())
    builder.set_bolt("work", SeesConf({"my.a": 1}), config={"my.a": 2}).shuffle_grouping("source")
    assert builder.create_topology().components["work"].conf == {"my.a": 2}


@pytest.mark.parametrize(
    ("own", "expected"),
    [
        ({"topology.tick.tuple.freq.secs": "5"}, "topology.tick.tuple.freq.secs must be"),
        ({"topology.debug": "on"}, "topology.debug must be true or false"),
        ({1: 2}, "config keys must be strings"),
        (["topology.debug", True], "must return a dict of config keys, got list"),
    ],
)
def test_component_configuration_is_checked_naming_component_and_key(
    own: Any, expected: str
) -> None:
    problems = problems_of(SeesConf(own))
    assert len(problems) == 1, problems
    assert problems[0].startswith("bolt 'work' (SeesConf) get_component_configuration()")
    assert expected in problems[0]


def test_component_configuration_that_raises_is_a_problem() -> None:
    class Broken(Sink):
        def get_component_configuration(self) -> Any:
            raise KeyError("db.url")

    problems = problems_of(Broken())
    assert problems == [
        "bolt 'work' (Broken) get_component_configuration() raised KeyError: 'db.url'"
    ]


def test_declared_configuration_is_checked_when_the_topology_is_built() -> None:
    """``add_configuration`` and ``config=`` are checked at build, like the component's own
    ``get_component_configuration()`` (they used to fail only at submit)."""
    builder = TopologyBuilder()
    builder.set_spout("source", numbers(), config={"topology.max.spout.pending": 0})
    builder.set_bolt("work", Sink()).shuffle_grouping("source").add_configuration(
        "topology.tick.tuple.freq.secs", "5"
    ).add_configurations({7: True})
    with pytest.raises(TopologyValidationError) as failed:
        builder.create_topology()
    problems = failed.value.problems
    assert len(problems) == 3, problems
    assert any(
        p.startswith("spout 'source' configuration: topology.max.spout.pending must be")
        for p in problems
    )
    assert any(
        p.startswith("bolt 'work' configuration: topology.tick.tuple.freq.secs must be")
        and "got '5'" in p
        for p in problems
    )
    assert "bolt 'work' configuration: config keys must be strings, got 7" in problems
