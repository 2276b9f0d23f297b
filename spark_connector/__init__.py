"""The PySpark Python Data Source of the `kraft` format.

Owns batch and streaming reads (offset planning, fetching offset ranges into Arrow batches) and
batch and streaming writes (an idempotent producer per task) of a kraft cluster's topics,
with the options and row schema of Spark's built-in Kafka source. Talks to the cluster through
`net` only. `register(spark)` makes the format known to a SparkSession.
"""

from pyspark.sql import SparkSession

from spark_connector.data_source import FORMAT, KraftDataSource

__all__ = ["FORMAT", "KraftDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Register the `kraft` format with `spark` (registration is per session)."""
    spark.dataSource.register(KraftDataSource)
