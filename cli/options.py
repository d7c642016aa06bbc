"""Options shared by commands: configuration files and ``-c key=value`` overrides."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
import yaml

from topology import config as cfg
from topology.config import ConfigError, resolve


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
    """Precedence: defaults < --config FILE < --zookeeper < -c key=value; values type-checked."""
    conf: dict[str, Any] = {}
    if config_file:
        with open(config_file, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
        if not isinstance(loaded, dict):
            raise click.BadParameter(f"{config_file} must hold a mapping of keys to values")
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
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="-c")
        conf[key.strip()] = yaml.safe_load(raw) if raw.strip() else None
    try:
        resolve(conf, where="config")
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    return conf
