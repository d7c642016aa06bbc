"""Running tasks: the executor loop, the wrappers around the author's instances, their
collectors and routes, failed inputs, async inputs, tick tuples and spout waits."""
