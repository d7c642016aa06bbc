"""``TopologyBuilder``: wire spouts and bolts with groupings, then validate in one go."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from grouping import GroupingSpec

from .component_checks import component_configuration
from .components import Bolt, Component, OutputFieldsDeclarer, Spout
from .constants import DEAD_LETTER_STREAM, DEFAULT_STREAM
from .spec import ComponentKind, ComponentSpec, InputSpec, Topology
from .validation import validate


class _ComponentDeclarer:
    def __init__(self, spec: ComponentSpec) -> None:
        self._spec = spec

    def add_configuration(self, key: str, value: Any) -> _ComponentDeclarer:
        """Set a config key for this component only (e.g. ``topology.tick.tuple.freq.secs``).

        Wins over the component's ``get_component_configuration()`` and the topology conf.
        A value that breaks the key's type rule is a problem ``create_topology()`` reports.

        Args:
            key: the config key.
            value: its value for this component.

        Returns:
            This declarer, so calls chain.
        """
        self._spec.conf[key] = value
        return self

    def add_configurations(self, conf: Mapping[str, Any]) -> _ComponentDeclarer:
        """Set several config keys for this component only, as :meth:`add_configuration`.

        Args:
            conf: the keys and their values.

        Returns:
            This declarer, so calls chain.
        """
        self._spec.conf.update(conf)
        return self

    def set_num_tasks(self, num_tasks: int) -> _ComponentDeclarer:
        """Run this component as ``num_tasks`` tasks (default: its parallelism).

        Args:
            num_tasks: how many tasks; a topology can be rebalanced up to this many
                executors later.

        Returns:
            This declarer, so calls chain.
        """
        self._spec.num_tasks = num_tasks
        self._spec.num_tasks_given = True
        return self


class SpoutDeclarer(_ComponentDeclarer):
    """Returned by :meth:`TopologyBuilder.set_spout`: sets the spout's own config and tasks.

    Args:
        spec: the spout's declaration (made by the builder; not built by hand).

    Example:
        >>> from topology.testing import FeederSpout
        >>> builder = TopologyBuilder()
        >>> declarer = builder.set_spout("words", FeederSpout(["word"]), parallelism=2)
        >>> declarer.set_num_tasks(4).add_configuration("topology.max.spout.pending", 100)
        <topology.builder.SpoutDeclarer object at ...>
    """


class BoltDeclarer(_ComponentDeclarer):
    """Returned by :meth:`TopologyBuilder.set_bolt`; each grouping method subscribes the bolt.

    Every grouping method takes the source component id and an optional ``stream``
    (default ``"default"``) and returns the declarer, so calls chain.  A subscription to
    an unknown component or stream, or to fields the stream lacks, is reported by
    :meth:`TopologyBuilder.create_topology`.

    Args:
        spec: the bolt's declaration (made by the builder; not built by hand).
        dead_letter_bolts: the builder's list of bolts taking every dead letter.

    Example:
        >>> from topology.testing import CaptureBolt, FeederSpout
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("words", FeederSpout(["word"]))
        >>> _ = builder.set_spout("stops", FeederSpout(["word"]))
        >>> declarer = builder.set_bolt("count", CaptureBolt())
        >>> declarer.fields_grouping("words", ["word"]).all_grouping("stops")
        <topology.builder.BoltDeclarer object at ...>
        >>> count = builder.create_topology().components["count"]
        >>> [(i.component, i.grouping.kind) for i in count.inputs]
        [('words', 'fields'), ('stops', 'all')]
    """

    def __init__(self, spec: ComponentSpec, dead_letter_bolts: list[str]) -> None:
        super().__init__(spec)
        self._dead_letter_bolts = dead_letter_bolts

    def _subscribe(
        self, component: str, stream: str, kind: str, fields: Iterable[str] = (), custom: Any = None
    ) -> BoltDeclarer:
        if isinstance(fields, str):
            fields = [fields]
        grouping = GroupingSpec(kind, tuple(fields), custom)
        self._spec.inputs.append(InputSpec(component, stream, grouping))
        return self

    def shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Spread tuples evenly over the bolt's tasks.

        Args:
            component: the id of the component to subscribe to.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "shuffle")

    def fields_grouping(
        self, component: str, fields: Sequence[str], stream: str = DEFAULT_STREAM
    ) -> BoltDeclarer:
        """Tuples with equal values of ``fields`` go to the same task, in every process.

        Args:
            component: the id of the component to subscribe to.
            fields: the fields whose values choose the task (names of the stream's fields).
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "fields", fields)

    def all_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Every task receives a copy of every tuple.

        Args:
            component: the id of the component to subscribe to.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "all")

    def global_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Every tuple goes to the bolt's lowest task id.

        Args:
            component: the id of the component to subscribe to.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "global")

    def none_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """No preference (currently the same as shuffle).

        Args:
            component: the id of the component to subscribe to.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "none")

    def direct_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """The emitter picks the task with ``emit_direct``; ``stream`` must be declared direct.

        Args:
            component: the id of the component to subscribe to.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "direct")

    def local_or_shuffle_grouping(
        self, component: str, stream: str = DEFAULT_STREAM
    ) -> BoltDeclarer:
        """Prefer tasks in the emitter's own worker (no socket hop); shuffle otherwise.

        Args:
            component: the id of the component to subscribe to.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "local_or_shuffle")

    def partial_key_grouping(
        self, component: str, fields: Sequence[str], stream: str = DEFAULT_STREAM
    ) -> BoltDeclarer:
        """Each key goes to the less loaded of two tasks: balances skewed keys.

        Args:
            component: the id of the component to subscribe to.
            fields: the fields whose values choose the task (names of the stream's fields).
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "partial_key", fields)

    def custom_grouping(
        self, component: str, grouping: Any, stream: str = DEFAULT_STREAM
    ) -> BoltDeclarer:
        """Route with your own grouping (see :class:`~grouping.CustomGrouping`).

        Args:
            component: the id of the component to subscribe to.
            grouping: an object with ``prepare(context)`` and ``choose_tasks(values)``,
                e.g. a :class:`~grouping.CustomGrouping` subclass.
            stream: its stream to subscribe to.

        Returns:
            This declarer, so calls chain.
        """
        return self._subscribe(component, stream, "custom", custom=grouping)

    def dead_letters(self) -> BoltDeclarer:
        """Subscribe (shuffled) to the dead-letter stream of every other component of the
        topology, those declared after this call too: the inputs they gave up on, each
        with its error (fields :data:`~topology.constants.DEAD_LETTER_FIELDS`;
        docs/ERRORS.md).  The dead letters of the bolts that take every component's are
        not sent to each other (a failing one would feed itself).

        Example::

            builder.set_bolt("dead-letters", FileSink("/data/dlq")).dead_letters()

        (A ``FileSink``, a transactional sink, makes the topology checkpointed; in an acked
        topology use a :class:`~topology.connectors.BatchingSink` or a bolt of your own.)

        Returns:
            This declarer, so calls chain.
        """
        if self._spec.id not in self._dead_letter_bolts:
            self._dead_letter_bolts.append(self._spec.id)
        return self


class TopologyBuilder:
    """Declares components and their subscriptions; :meth:`create_topology` validates.

    Nothing is checked while declaring: :meth:`create_topology` checks everything at once
    and reports every problem in one error.

    Example:
        >>> from topology import BasicBolt, Spout
        >>> class Sentences(Spout):
        ...     outputs = ["sentence"]
        ...     def next_tuple(self):
        ...         self.emit(["to be or not to be"])
        >>> class Split(BasicBolt):
        ...     outputs = ["word"]
        ...     def process(self, tup):
        ...         for word in tup["sentence"].split():
        ...             self.emit([word])
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("sentences", Sentences(), parallelism=2)
        >>> _ = builder.set_bolt("split", Split(), parallelism=2).shuffle_grouping("sentences")
        >>> topology = builder.create_topology()
        >>> sorted(topology.components)
        ['sentences', 'split']

        A mistake is reported when the topology is created, not when it runs:

        >>> _ = builder.set_bolt("count", Split()).fields_grouping("split", ["wrod"])
        >>> builder.create_topology()
        Traceback (most recent call last):
        ...
        topology.errors.TopologyValidationError: ...'wrod'...
    """

    def __init__(self) -> None:
        self._components: list[ComponentSpec] = []
        self._problems: list[str] = []
        #: Bolts subscribed to every component's dead letters (``dead_letters()``).
        self._dead_letter_bolts: list[str] = []

    def set_spout(
        self,
        component_id: str,
        spout: Spout,
        parallelism: int = 1,
        num_tasks: int | None = None,
        config: Mapping[str, Any] | None = None,
        uid: str | None = None,
    ) -> SpoutDeclarer:
        """Add a spout.

        Args:
            component_id: the spout's id, unique in the topology; bolts subscribe to it.
            spout: the spout instance (copied once per task in the workers).
            parallelism: how many executors run it.
            num_tasks: how many tasks (default: ``parallelism``).
            config: config keys for this spout only (over its own and the topology's).
            uid: the stable id its positions are kept under across versions (default:
                ``component_id``; give the old id when renaming it, so a savepoint
                restores into it).

        Returns:
            A :class:`SpoutDeclarer`, to set more of the spout's config.
        """
        return SpoutDeclarer(
            self._add("spout", Spout, component_id, spout, parallelism, num_tasks, config, uid)
        )

    def set_bolt(
        self,
        component_id: str,
        bolt: Bolt,
        parallelism: int = 1,
        num_tasks: int | None = None,
        config: Mapping[str, Any] | None = None,
        uid: str | None = None,
    ) -> BoltDeclarer:
        """Add a bolt; then subscribe it with the returned declarer's groupings.

        Args:
            component_id: the bolt's id, unique in the topology.
            bolt: the bolt instance (copied once per task in the workers).
            parallelism: how many executors run it.
            num_tasks: how many tasks (default: ``parallelism``).
            config: config keys for this bolt only (over its own and the topology's).
            uid: the stable id its state is kept under across versions (default:
                ``component_id``; give the old id when renaming it, so a savepoint
                restores into it).

        Returns:
            A :class:`BoltDeclarer`, whose grouping methods subscribe the bolt.
        """
        return BoltDeclarer(
            self._add("bolt", Bolt, component_id, bolt, parallelism, num_tasks, config, uid),
            self._dead_letter_bolts,
        )

    def _add(
        self,
        kind: ComponentKind,
        base: type,
        component_id: str,
        instance: Any,
        parallelism: int,
        num_tasks: int | None,
        config: Mapping[str, Any] | None,
        uid: str | None = None,
    ) -> ComponentSpec:
        streams = {}
        own_conf: dict[str, Any] = {}
        if not isinstance(instance, base):
            self._problems.append(
                f"{kind} {component_id!r}: expected an instance of {base.__name__}, got "
                f"{type(instance).__name__}"
                + (" (a class: instantiate it)" if isinstance(instance, type) else "")
            )
        elif isinstance(instance, Component):
            declarer = OutputFieldsDeclarer()
            try:
                instance.declare_output_fields(declarer)
                streams = declarer.streams
            except Exception as exc:  # the author's declaration code
                self._problems.append(f"{kind} {component_id!r}: declaring outputs failed: {exc}")
            own_conf, problems = component_configuration(kind, component_id, instance)
            self._problems.extend(problems)
        spec = ComponentSpec(
            id=component_id,
            kind=kind,
            instance=instance,
            parallelism=parallelism,
            num_tasks=parallelism if num_tasks is None else num_tasks,
            num_tasks_given=num_tasks is not None,
            streams=streams,
            conf={**own_conf, **(config or {})},  # the declarer's config wins
            uid=uid,
        )
        self._components.append(spec)
        return spec

    def create_topology(self) -> Topology:
        """Validate everything declared and return the topology.

        Returns:
            The validated :class:`~topology.spec.Topology`, ready to submit.

        Raises:
            TopologyValidationError: one error listing every problem found (unknown
                components or streams, missing fields, bad parallelism or config...).
        """
        return validate(self._with_dead_letter_inputs(), self._problems)

    def _with_dead_letter_inputs(self) -> list[ComponentSpec]:
        """The components, the bolts of ``dead_letters()`` subscribed to the dead-letter
        stream of every component but themselves (copies: the builder's stay as declared)."""
        takers = set(self._dead_letter_bolts)
        if not takers:
            return self._components
        sources = [c.id for c in self._components if c.id not in takers]
        shuffle = GroupingSpec("shuffle")
        return [
            replace(
                c, inputs=[*c.inputs, *(InputSpec(s, DEAD_LETTER_STREAM, shuffle) for s in sources)]
            )
            if c.id in takers
            else c
            for c in self._components
        ]
