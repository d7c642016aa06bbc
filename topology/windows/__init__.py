"""Windows over streams: event time, watermarks, triggers (the Dataflow model, Storm's API).

* :mod:`topology.windows.spec` — what a windowed bolt is configured with (checked);
* :mod:`topology.windows.watermark` — a task's low watermark over its inputs;
* :mod:`topology.windows.engine` — window assignment, firing (panes) and eviction (pure);
* :mod:`topology.windows.bolt` — :class:`WindowedBolt`, what authors subclass.

See docs/WINDOWS.md.
"""
