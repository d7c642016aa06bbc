"""The web UI and REST API: what Storm UI and its logviewer give, live (docs/UI.md).

:mod:`topology.ui.server` serves :func:`topology.ui.app.create_app` (starlette on uvicorn,
the ``ui`` extra) over anything implementing :class:`topology.ui.source.ClusterView`: the
REST API under ``/api/v1/``, server-sent events of one shared snapshot per publish
interval (:mod:`topology.ui.hub`), and the pages in ``static/``.  Nothing here imports
``topology.deploy``: the adapters that make a ``LocalCluster`` or a ``Cluster`` a
``ClusterView`` live beside them.  This ``__init__`` imports nothing, so reading
:mod:`topology.ui.source` needs neither starlette nor uvicorn.
"""
