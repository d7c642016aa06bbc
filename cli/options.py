"""Options shared by commands: configuration files and ``-c key=value`` overrides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
import yaml

from topology.config import ConfigError, resolve


def config_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--config FILE`` and ``-c key=value`` (repeatable)."""
    fn = click.option(
        "-c",
        "--conf",
        "overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help="Set one config key (value parsed as YAML: 2, true, null, [a, b]). Repeatable.",
    )(fn)
    fn = click.option(
        "--config",
        "config_file",
        type=click.Path(exists=True, dir_okay=False),
        envvar="SPARKSTORM_CONFIG",
        show_envvar=True,
        help="YAML file of config keys, applied over conf/defaults.yaml.",
    )(fn)
    return fn


def build_conf(config_file: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """Precedence: defaults < --config FILE < -c key=value; every value type-checked."""
    conf: dict[str, Any] = {}
    if config_file:
        with open(config_file, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
        if not isinstance(loaded, dict):
            raise click.BadParameter(f"{config_file} must hold a mapping of keys to values")
        conf.update(loaded)
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
