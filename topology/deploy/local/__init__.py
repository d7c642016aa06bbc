"""LocalCluster: a topology's workers as processes on this machine, no ZooKeeper or Spark."""
