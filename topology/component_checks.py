"""Checks of the author's component classes, run when the topology is built.

Storm habits that would otherwise fail every tuple at run time: a :class:`BasicBolt` that
overrides ``execute`` (the runtime calls ``process``), a bolt or spout without its one
required method, Storm's camelCase names (``nextTuple``) that nothing calls, an
``execute_batch`` on a bolt whose tuples go elsewhere.  Each problem is one line naming
the component, its class and the fix.

``get_component_configuration()`` (Storm's ``getComponentConfiguration``) is read here too,
once per component, with its keys checked like any other config.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .async_bolt import AsyncBolt
from .components import BasicBolt, Bolt, Component, Spout
from .config import check_value
from .errors import ConfigError

#: ``check(where, cls)`` -> the problems with a component class's methods.
ClassCheck = Callable[[str, type], list[str]]

#: Storm's camelCase names of the callbacks sparkstorm calls: their PEP 8 names, and the
#: class that defines the PEP 8 name.
CAMEL_CASE: dict[str, tuple[str, type]] = {
    "nextTuple": ("next_tuple", Spout),
    "declareOutputFields": ("declare_output_fields", Component),
    "getComponentConfiguration": ("get_component_configuration", Component),
}


#: The rules of base classes defined above this layer (``WindowedBolt``'s, registered by
#: :mod:`topology.windows.bolt`): base class -> its check.  See :func:`register_class_check`.
CLASS_CHECKS: dict[type, ClassCheck] = {}


def register_class_check(base: type, check: ClassCheck) -> None:
    """Check subclasses of ``base`` with ``check`` instead of the :class:`Bolt` rules (a
    base class that calls other methods than ``execute`` registers the rule for them; the
    most specific registered base of a class is the one that counts)."""
    CLASS_CHECKS[base] = check


def overrides(cls: type, name: str, base: type) -> bool:
    """Does ``cls`` define ``name`` other than ``base`` does (or ``base`` has none)?"""
    mine = getattr(cls, name, None)
    return callable(mine) and mine is not getattr(base, name, None)


def _registered_check(cls: type) -> ClassCheck | None:
    return next((CLASS_CHECKS[b] for b in cls.__mro__ if b in CLASS_CHECKS), None)


def _where(kind: str, component_id: str, instance: object) -> str:
    return f"{kind} {component_id!r} ({type(instance).__name__})"


def method_problems(kind: str, component_id: str, instance: Component) -> list[str]:
    """Problems with the methods ``instance``'s class defines (empty when it will run).

    The rules, by the most specific base class:

    * :class:`Spout` needs ``next_tuple``;
    * a class with a registered base (:data:`CLASS_CHECKS`; ``WindowedBolt`` needs
      ``execute(window)``, not ``process``) follows that base's rule;
    * :class:`BasicBolt` needs ``process``; ``execute`` is never called on it;
    * :class:`Bolt` needs ``execute`` (or ``execute_batch``); ``process`` alone is never
      called;
    * only a plain :class:`Bolt` (or :class:`~topology.stateful.StatefulBolt`) may define
      ``execute_batch``: a BasicBolt's tuples go to ``process``, an AsyncBolt's to
      ``process_async``, a WindowedBolt's (its registered rule says so) to its windows;
    * no class defines a camelCase callback of :data:`CAMEL_CASE` (nothing calls it).
    """
    where = _where(kind, component_id, instance)
    cls = type(instance)
    out = [
        f"{where}: defines {camel}(), which nothing calls: rename it to {snake}()"
        for camel, (snake, base) in CAMEL_CASE.items()
        if callable(getattr(cls, camel, None)) and not overrides(cls, snake, base)
    ]
    if isinstance(instance, Spout):
        if not overrides(cls, "next_tuple", Spout) and not hasattr(cls, "nextTuple"):
            out.append(f"{where}: a Spout must implement next_tuple() (emit what is ready)")
    elif (registered := _registered_check(cls)) is not None:
        out.extend(registered(where, cls))
    elif isinstance(instance, BasicBolt):
        out.extend(_basic_bolt_problems(where, cls))
    elif isinstance(instance, Bolt) and not (
        overrides(cls, "execute", Bolt) or overrides(cls, "execute_batch", Bolt)
    ):
        fix = (
            "rename process to execute and ack each tuple, or subclass BasicBolt to keep process"
            if overrides(cls, "process", Bolt)
            else "implement execute(tup) (or execute_batch(tuples))"
        )
        out.append(f"{where}: a Bolt's tuples go to execute(tup): {fix}")
    if isinstance(instance, AsyncBolt) and overrides(cls, "execute_batch", Bolt):
        out.append(
            f"{where}: an AsyncBolt's tuples go to process_async(tup), one call each, so "
            "execute_batch() is never called: remove it, or subclass Bolt to take batches"
        )
    return out


def _basic_bolt_problems(where: str, cls: type) -> list[str]:
    out = _process_problems(where, cls)
    if overrides(cls, "execute_batch", Bolt):
        out.append(
            f"{where}: a BasicBolt's tuples go to process(tup) one at a time (anchored and "
            "acked for you), so execute_batch() is never called: remove it, or subclass "
            "Bolt and ack each tuple of the batch yourself"
        )
    return out


def _process_problems(where: str, cls: type) -> list[str]:
    has_process = overrides(cls, "process", BasicBolt)
    has_execute = overrides(cls, "execute", BasicBolt)
    if has_process and has_execute:
        return [
            f"{where}: a BasicBolt's execute() is never called (the runtime calls process() "
            "and acks for you): remove execute, or subclass Bolt and ack yourself"
        ]
    if has_execute:
        return [
            f"{where}: a BasicBolt's tuples go to process(tup), not execute(tup): rename "
            "execute to process (or subclass Bolt to keep execute and ack yourself)"
        ]
    if not has_process:
        return [f"{where}: a BasicBolt must implement process(tup)"]
    return []


def component_configuration(
    kind: str, component_id: str, instance: Component
) -> tuple[dict[str, Any], list[str]]:
    """``instance.get_component_configuration()`` as a dict, and the problems with it.

    A method that raises, a result that is not a mapping, a key that is not a string or
    a value that breaks its key's type rule is one problem each (naming the component and
    the key); the dict then holds only the keys that passed.
    """
    where = f"{_where(kind, component_id, instance)} get_component_configuration()"
    try:
        conf = instance.get_component_configuration()
    except Exception as exc:  # the author's code
        return {}, [f"{where} raised {type(exc).__name__}: {exc}"]
    if conf is None:
        return {}, []
    if not isinstance(conf, Mapping):
        return {}, [f"{where} must return a dict of config keys, got {type(conf).__name__}"]
    return _checked_conf(conf, where)


def declared_configuration_problems(kind: str, component_id: str, conf: Mapping) -> list[str]:
    """The problems with a component's conf as declared on the builder (``config=`` of
    ``set_spout`` / ``set_bolt``, ``add_configuration(s)``): one per key that is not a
    string or whose value breaks the key's type rule, naming the component and the key."""
    return _checked_conf(conf, f"{kind} {component_id!r} configuration")[1]


def _checked_conf(conf: Mapping, where: str) -> tuple[dict[str, Any], list[str]]:
    """The entries of ``conf`` that pass their key's type rule, and a problem per other."""
    good: dict[str, Any] = {}
    problems = []
    for key, value in conf.items():
        if not isinstance(key, str):
            problems.append(f"{where}: config keys must be strings, got {key!r}")
            continue
        try:
            check_value(key, value, where)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        good[key] = value
    return good, problems
