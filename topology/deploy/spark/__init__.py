"""Workers as long-running Spark tasks: the backend, and a Spark-hosted worker's entry point."""
