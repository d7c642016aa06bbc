"""Options shared by commands: configuration files and ``-c key=value`` overrides."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
import yaml

from topology import config as cfg
from topology.config import ConfigError, resolve
from topology.deploy.limits import nesting_problem
from topology.names import name_problem, quoted

from .argv_secrets import conceal

#: Deepest nesting of lists and mappings a config value may have, and most items in all.
MAX_CONFIG_DEPTH = 64
MAX_CONFIG_ITEMS = 100_000

#: Quoted YAML scalars (their brackets are text: a quote opens one only where a scalar may
#: start, not inside a plain one like ``don't``) and the flow-collection brackets.
_QUOTED = re.compile(r"(?<![^\s\[{,:])(?:'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\")")
_BRACKETS = re.compile(r"[\[\]{}]")


class UsageError(click.ClickException):
    """A bad name or config value on the command line: one line, exit status 2."""

    exit_code = 2


def check_topology_name(name: str) -> str:
    """``name`` if it follows the name rule, else :class:`UsageError` saying the rule."""
    problem = name_problem("topology", name)
    if problem is not None:
        raise UsageError(problem)
    return name


def topology_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback for a NAME argument or ``--name``: the name rule, checked first."""
    return None if value is None else check_topology_name(value)


def parse_yaml(text: str, where: str) -> Any:
    """``text`` parsed as YAML, or :class:`UsageError` naming ``where`` (the key or the
    file) for invalid YAML or nesting deeper than :data:`MAX_CONFIG_DEPTH`."""
    if flow_depth(text) > MAX_CONFIG_DEPTH:  # refused before the parser recurses for seconds
        raise UsageError(f"{where}: nested deeper than {MAX_CONFIG_DEPTH} levels")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [""])[0]
        problem = problem.encode("ascii", "backslashreplace").decode()  # one printable line
        raise UsageError(f"{where}: invalid YAML{at}: {problem or type(exc).__name__}") from None
    except RecursionError:
        raise UsageError(f"{where}: nested deeper than {MAX_CONFIG_DEPTH} levels") from None
    problem = nesting_problem(value, MAX_CONFIG_DEPTH, MAX_CONFIG_ITEMS)
    if problem is not None:
        raise UsageError(f"{where}: {problem}")
    return value


def flow_depth(text: str) -> int:
    """How deep ``text``'s flow collections (``[...]``, ``{...}``) nest, counting the
    brackets outside quoted scalars: a bound checked in linear time before parsing.

    >>> flow_depth("a: [1, {b: [2]}]"), flow_depth("'[[[' ")
    (3, 0)
    """
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_QUOTED.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


@dataclass(frozen=True)
class ConfigSource:
    """Where a command's configuration comes from (the shared options, unparsed)."""

    config_file: str | None = None
    overrides: tuple[str, ...] = ()
    zookeeper: str | None = None

    def build(self) -> dict[str, Any]:
        return build_conf(self.config_file, self.overrides, self.zookeeper)


def config_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--config FILE``, ``-c key=value`` (repeatable) and ``--zookeeper HOST:PORT``;
    the command receives them as one ``config: ConfigSource`` argument."""

    @functools.wraps(fn)
    def command(
        *args: Any,
        config_file: str | None,
        overrides: tuple[str, ...],
        zookeeper: str | None,
        **kwargs: Any,
    ) -> Any:
        return fn(*args, config=ConfigSource(config_file, overrides, zookeeper), **kwargs)

    options = [
        click.option(
            "--zookeeper",
            "zookeeper",
            metavar="HOST:PORT",
            envvar="SPARKSTORM_ZOOKEEPER",
            show_envvar=True,
            default=None,
            help="ZooKeeper to use; shortcut for -c storm.zookeeper.servers=[HOST] "
            "-c storm.zookeeper.port=PORT.",
        ),
        click.option(
            "-c",
            "--conf",
            "overrides",
            multiple=True,
            metavar="KEY=VALUE",
            help="Set one config key (value parsed as YAML: 2, true, null, [a, b]). Repeatable.",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(exists=True, dir_okay=False),
            envvar="SPARKSTORM_CONFIG",
            show_envvar=True,
            help="YAML file of config keys, applied over conf/defaults.yaml.",
        ),
    ]
    for option in options:
        command = option(command)
    return command


def build_conf(
    config_file: str | None, overrides: tuple[str, ...], zookeeper: str | None = None
) -> dict[str, Any]:
    """Precedence: defaults < --config FILE < --zookeeper < -c key=value; values
    type-checked.  Secret-looking ``-c`` values leave the process list once parsed
    (:func:`cli.argv_secrets.conceal`)."""
    conf: dict[str, Any] = {}
    if config_file:
        try:
            with open(config_file, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--config {config_file}: cannot read it: {exc}") from None
        loaded = parse_yaml(text, f"--config {config_file}") or {}
        if not isinstance(loaded, dict):
            raise UsageError(f"--config {config_file}: must hold a mapping of keys to values")
        conf.update(loaded)
    if zookeeper:
        host, _, port = zookeeper.rpartition(":")
        if not host or not port.isdigit():
            raise click.BadParameter(
                f"expected HOST:PORT, got {zookeeper!r}", param_hint="--zookeeper"
            )
        conf[cfg.ZK_SERVERS] = [host]
        conf[cfg.ZK_PORT] = int(port)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-c: expected KEY=VALUE, got {quoted(item)}")
        key = key.strip()
        conf[key] = parse_yaml(raw, f"-c {key[:60]!a}") if raw.strip() else None
    try:
        resolve(conf, where="config")
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    conceal(overrides, conf.get(cfg.REDACT_PATTERNS) or ())  # off the process list from now
    return conf
