"""Exceptions raised to topology authors, each naming the component, stream or key at fault."""

from __future__ import annotations


class SparkstormError(Exception):
    """Base class of every error sparkstorm raises on purpose.

    Example:
        >>> from topology import ConfigError
        >>> issubclass(ConfigError, SparkstormError)
        True
    """


class Unavailable(SparkstormError):
    """A service the cluster keeps its state in (ZooKeeper) is not answering now: a
    passing state, worth trying again once it is back (the UI answers 503)."""


class TopologyValidationError(SparkstormError):
    """``create_topology()`` found problems; ``problems`` lists every one of them.

    Each problem is one line that starts with the component it concerns, e.g.
    ``bolt 'count': fields grouping on 'split' uses undeclared field 'wrd'``.

    Args:
        problems: the problems found, one line each.

    Example:
        >>> error = TopologyValidationError(["spout 'a': parallelism must be >= 1"])
        >>> print(error)
        invalid topology (1 problem):
          - spout 'a': parallelism must be >= 1
        >>> error.problems
        ["spout 'a': parallelism must be >= 1"]
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        n = len(self.problems)
        super().__init__(f"invalid topology ({n} problem{'s' if n != 1 else ''}):\n{lines}")


class EmitError(SparkstormError):
    """An emit that cannot be honoured: undeclared stream, wrong arity, unencodable value.

    Raised by ``emit`` / ``emit_direct`` in the task that called it; the message names the
    component, the stream and what is wrong.

    Example:
        >>> raise EmitError("component 'split' emitted 2 value(s) on stream 'default', ...")
        Traceback (most recent call last):
        ...
        topology.errors.EmitError: component 'split' emitted 2 value(s) on stream 'default', ...
    """


class MetricError(SparkstormError):
    """A user metric that cannot be registered (bad name, kind clash, too many); the
    message names the component and the metric."""


class ConfigError(SparkstormError):
    """A configuration value of the wrong type or out of range; the message names the key.

    Example:
        >>> from topology import Config
        >>> Config().set_num_workers(0)
        Traceback (most recent call last):
        ...
        topology.errors.ConfigError: config: topology.workers must be an integer ...
    """


class DataError(SparkstormError):
    """An input no attempt will ever handle: a value of the wrong type, a field missing, a
    row the database refuses.  Raised from ``execute`` / ``process`` (this class, a
    subclass, or a class a connector lists in its ``data_errors``), it makes the
    component's failure policy give up on the input at once, without the retries: the
    input goes to the dead-letter stream (docs/ERRORS.md).

    Example:
        >>> from topology import BasicBolt
        >>> class ParseAge(BasicBolt):
        ...     outputs = ["age"]
        ...     def process(self, tup):
        ...         if not tup["age"].isdigit():
        ...             raise DataError(f"age {tup['age']!r} is not a number")
        ...         self.emit([int(tup["age"])])
    """


class WindowError(DataError):
    """A tuple a windowed bolt cannot place (no such key or timestamp field, a timestamp
    that is not a number); the message names the bolt, the source and the field."""


class ComponentStartError(SparkstormError):
    """A spout's ``open`` or a bolt's ``prepare`` raised while its worker started; the
    message names the component and the task (``bolt 'count' task 3: prepare raised
    RuntimeError: ...``) and the author's exception is the ``__cause__``.

    Example: a LocalCluster raises it from ``submit_topology``; catch it to see the cause:

        >>> try:
        ...     raise ComponentStartError("bolt 'count' task 3: prepare raised ...")
        ... except SparkstormError as error:
        ...     print(error)
        bolt 'count' task 3: prepare raised ...
    """
