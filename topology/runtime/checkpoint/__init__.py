"""One worker's part in checkpoints: barriers and alignment, what a task snapshots and
how it is restored, the coordinator's host, and the hooks the executor, frame reader and
transfer call."""
