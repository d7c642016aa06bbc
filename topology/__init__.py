"""sparkstorm: Apache Storm's programming model in Python.

Authors need one import::

    from topology import Spout, Bolt, BasicBolt, TopologyBuilder, LocalCluster
"""

from grouping import CustomGrouping, GroupingContext

from .builder import BoltDeclarer, SpoutDeclarer, TopologyBuilder
from .components import BasicBolt, Bolt, OutputFieldsDeclarer, Spout, Stream
from .config import Config
from .constants import DEFAULT_STREAM, TICK_STREAM
from .context import TopologyContext
from .errors import ConfigError, EmitError, SparkstormError, TopologyValidationError
from .local_cluster import ClusterError, LocalCluster
from .spec import Topology
from .tuple import Tuple

__version__ = "0.1.0"

__all__ = [
    "BasicBolt",
    "Bolt",
    "BoltDeclarer",
    "ClusterError",
    "Config",
    "ConfigError",
    "CustomGrouping",
    "DEFAULT_STREAM",
    "EmitError",
    "GroupingContext",
    "LocalCluster",
    "OutputFieldsDeclarer",
    "SparkstormError",
    "Spout",
    "SpoutDeclarer",
    "Stream",
    "TICK_STREAM",
    "Topology",
    "TopologyBuilder",
    "TopologyContext",
    "TopologyValidationError",
    "Tuple",
    "__version__",
]
