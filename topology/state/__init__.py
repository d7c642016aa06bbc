"""State that survives failures: key-value state, checkpoints, backends, replayable spouts.

* :mod:`topology.state.kv` — the key-value state a stateful bolt task keeps;
* :mod:`topology.state.checkpoint` — the checkpoint and recovery protocol (pure);
* :mod:`topology.state.backends` — where checkpoints are stored (memory, SQLite, a
  directory or fsspec URL);
* :mod:`topology.state.writer` — state I/O off the executor thread;
* :mod:`topology.state.merges` — the functions ``state.merge`` combines with
  (``StatefulBolt.state_merge``: ``append``, ``union``, or any associative function).

Authors use :class:`~topology.StatefulBolt` and :class:`~topology.ReplayableSpout` from
:mod:`topology`; see docs/STATE.md.
"""
