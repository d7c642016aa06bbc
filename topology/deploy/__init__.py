"""Getting workers running, in four rooms.

* :mod:`.local` — :class:`~topology.deploy.local.cluster.LocalCluster`: worker processes on
  this machine, no ZooKeeper or Spark.
* :mod:`.cluster` — the real cluster: the :class:`~topology.deploy.cluster.client.Cluster`
  client, the nimbus and its planner, topology drivers, ``LocalStack``.
* :mod:`.spark` — workers as long-running Spark tasks (the only importer of ``pyspark``).
* :mod:`.zk` — ZooKeeper: the kazoo client, paths, records, an embedded server.

The modules directly in this package are shared by ``local`` and ``cluster``
(:mod:`.ops`, the operations both offer, is one of them) and import neither room.
"""
