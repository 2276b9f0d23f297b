"""Spark connector benchmark: batch write and batch read of the `kraft` format, with a plain
confluent-kafka consumer reading the same records as the baseline.

    python -m bench.spark [--count 1000000] [--size 100] [--partitions 2] [--runs 3]

One fresh `kraft serve` node on 127.0.0.1 and a local[2] SparkSession. Each run writes
`--count` records of `--size` bytes to a new topic of `--partitions` partitions with
`df.write.format("kraft")`, counts them with `spark.read.format("kraft")...count()`, and
reads them with a confluent-kafka consumer assigned to every partition; a small write and read
warm the session up first. Prints one JSON line:
rows per second of each, per run and their medians, and the read ratio (Spark / consumer,
target >= 0.5). The node is killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

import spark_connector
from bench.cluster import Cluster


def spark_session() -> SparkSession:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kraft-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark_connector.register(session)
    return session


def create_topic(admin: AdminClient, cluster: Cluster, topic: str, partitions: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)

    def led() -> bool:
        found = admin.list_topics(topic, timeout=5).topics[topic].partitions
        return len(found) == partitions and all(p.leader >= 0 for p in found.values())

    cluster.wait_for(f"{topic} led", led)


def spark_write(spark: SparkSession, bootstrap: str, topic: str, count: int, size: int) -> float:
    frame = spark.range(count, numPartitions=2).select(
        F.lpad(F.col("id").cast("string"), size, "x").cast("binary").alias("value")
    )
    started = time.perf_counter()
    (
        frame.write.format("kraft")
        .option("kraft.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    return count / (time.perf_counter() - started)


def spark_read(spark: SparkSession, bootstrap: str, topic: str, count: int) -> float:
    started = time.perf_counter()
    counted = (
        spark.read.format("kraft")
        .option("kraft.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .count()
    )
    seconds = time.perf_counter() - started
    if counted != count:
        raise RuntimeError(f"Spark counted {counted} of {count}")
    return count / seconds


def confluent_read(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    client = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-spark",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 10,
        }
    )
    client.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received = 0
    started = time.perf_counter()
    deadline = started + 300
    while received < count and time.perf_counter() < deadline:
        for message in client.consume(10_000, 1.0):
            if message.error() is None:
                received += 1
    seconds = time.perf_counter() - started
    client.close()
    if received != count:
        raise RuntimeError(f"consumed {received} of {count}")
    return count / seconds


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    cluster = Cluster.combined(root, 1)
    cluster.start_all()
    spark = None
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced, 60.0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        spark = spark_session()
        # The first jobs of a session start the JVM's code paths and Spark's Python workers
        # (~20 s here): a small write and read first, not measured.
        create_topic(admin, cluster, "warm-up", args.partitions)
        spark_write(spark, cluster.bootstrap, "warm-up", 10_000, args.size)
        spark_read(spark, cluster.bootstrap, "warm-up", 10_000)
        rates: dict[str, list[float]] = {"spark_write": [], "spark_read": [], "consumer_read": []}
        for run_index in range(args.runs):
            topic = f"bench-{run_index}"
            create_topic(admin, cluster, topic, args.partitions)
            rates["spark_write"].append(
                spark_write(spark, cluster.bootstrap, topic, args.count, args.size)
            )
            rates["spark_read"].append(spark_read(spark, cluster.bootstrap, topic, args.count))
            rates["consumer_read"].append(
                confluent_read(cluster.bootstrap, topic, args.partitions, args.count)
            )
        medians = {name: statistics.median(values) for name, values in rates.items()}
        return {
            "bench": "spark",
            "count": args.count,
            "size": args.size,
            "partitions": args.partitions,
            "runs": args.runs,
            "rows_per_s": {
                name: {"median": round(medians[name]), "runs": [round(v) for v in values]}
                for name, values in rates.items()
            },
            "read_ratio": round(medians["spark_read"] / medians["consumer_read"], 3),
        }
    finally:
        if spark is not None:
            spark.stop()
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as directory:
        result = run(args, Path(directory))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
