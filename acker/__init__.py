"""The XOR acker: tuple-tree tracking for at-least-once processing (arrives with issue 3).

Until then a topology runs without ackers: a spout tuple emitted with a ``msg_id`` is acked
as soon as it is emitted, exactly as Storm does with ``topology.acker.executors: 0``.
"""
