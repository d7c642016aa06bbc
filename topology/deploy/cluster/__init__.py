"""The cluster: the ``Cluster`` client over ZooKeeper, the nimbus and its planner, the
topology drivers, and ``LocalStack`` (all of it on this machine)."""
