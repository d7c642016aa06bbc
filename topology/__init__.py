"""sparkstorm: Apache Storm's programming model in Python.

Authors need one import::

    from topology import Spout, Bolt, BasicBolt, TopologyBuilder, LocalCluster

Importing this package loads only the author API (components, builder, config, state,
windows).  The runtime (ZeroMQ, the worker) and the deployment layer (ZooKeeper, Spark) are
imported on first use of the names that need them (``LocalCluster``, ``Cluster``).

This module is the facade, the top layer: it re-exports from every layer below, and no
module of the product takes a name from it except the ``sparkstorm`` command's (the others
import the module that defines the name).  Importing it also registers the built-in state
providers, so ``topology.state.provider`` is checked against them wherever config is checked.

Layout:

* ``topology`` (this package): what authors touch (the core: components, builder, config...).
* :mod:`topology.runtime`: one worker (executor loop, tasks, collectors, transfer).
* :mod:`topology.deploy`: getting workers running (LocalCluster, nimbus, Spark, ZooKeeper).
* :mod:`topology.stats`: rolling statistics and the status report.
* :mod:`topology.state`, :mod:`topology.windows`, :mod:`topology.testing`: checkpointed
  state, windowed bolts, test helpers.
* :mod:`acker` (tuple-tree tracking) and :mod:`grouping` (stream groupings), below it all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from grouping import CustomGrouping, GroupingContext

from .async_bolt import AsyncBolt, AsyncMapBolt
from .builder import BoltDeclarer, SpoutDeclarer, TopologyBuilder
from .components import BasicBolt, Bolt, OutputFieldsDeclarer, Spout, Stream
from .config import Config
from .connectors.files import FileSpout
from .constants import DEAD_LETTER_FIELDS, DEAD_LETTER_STREAM, DEFAULT_STREAM, TICK_STREAM
from .context import TopologyContext
from .errors import (
    ComponentStartError,
    ConfigError,
    DataError,
    EmitError,
    SparkstormError,
    TopologyValidationError,
)
from .spec import Topology
from .state import backends as _state_backends  # noqa: F401 - the providers register
from .state.kv import KeyValueState
from .stateful import ReplayableSpout, StatefulBolt
from .streams import StreamBuilder
from .tuple import Tuple
from .windows.bolt import Count, StatefulWindowedBolt, WindowedBolt
from .windows.engine import Window
from .windows.join import JoinBolt

if TYPE_CHECKING:
    from .deploy.cluster.client import Cluster
    from .deploy.local.cluster import ClusterError, LocalCluster

__version__ = "0.1.0"

#: Public names whose modules import the runtime or deployment layer: loaded on first use.
_LAZY = {
    "Cluster": "topology.deploy.cluster.client",
    "ClusterError": "topology.deploy.local.cluster",
    "LocalCluster": "topology.deploy.local.cluster",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'topology' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AsyncBolt",
    "AsyncMapBolt",
    "BasicBolt",
    "Bolt",
    "BoltDeclarer",
    "Cluster",
    "ClusterError",
    "Config",
    "Count",
    "ComponentStartError",
    "ConfigError",
    "CustomGrouping",
    "DEAD_LETTER_FIELDS",
    "DEAD_LETTER_STREAM",
    "DataError",
    "DEFAULT_STREAM",
    "EmitError",
    "FileSpout",
    "GroupingContext",
    "KeyValueState",
    "JoinBolt",
    "LocalCluster",
    "OutputFieldsDeclarer",
    "ReplayableSpout",
    "SparkstormError",
    "Spout",
    "SpoutDeclarer",
    "StatefulBolt",
    "StatefulWindowedBolt",
    "Stream",
    "TICK_STREAM",
    "Topology",
    "TopologyBuilder",
    "TopologyContext",
    "TopologyValidationError",
    "Tuple",
    "StreamBuilder",
    "Window",
    "WindowedBolt",
    "__version__",
]
