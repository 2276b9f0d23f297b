"""Streaming reads through Spark against a real node: availableNow with a restart from the
checkpoint, read limits, a stream that keeps up with a producer, partitions and topics that
appear, and topics deleted under a running query."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from bench.cluster import Cluster
from tests.spark_connector.helpers import new_topic, produce, stream_reader

pytestmark = pytest.mark.timeout(240)


def wait_until(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def values(count: int, prefix: str, partitions: int) -> list[dict[str, object]]:
    return [{"partition": i % partitions, "value": f"{prefix}{i}".encode()} for i in range(count)]


def memory_rows(spark: SparkSession, name: str) -> list[tuple[str, int, int]]:
    return [
        (row.topic, row.partition, row.offset)
        for row in spark.sql(f"select topic, partition, offset from {name}").collect()
    ]


def test_available_now_to_parquet_reads_each_record_once_across_restarts(
    spark: SparkSession, node: Cluster, tmp_path: Path
) -> None:
    topic = new_topic(node, "once", 2)
    produce(node, topic, values(40, "a", 2))
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> StreamingQuery:
        query = (
            stream_reader(
                spark, node, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="15"
            )
            .load()
            .selectExpr("cast(value as string) as value", "partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(90)
        assert query.exception() is None
        return query

    first = run()
    sizes = [progress["numInputRows"] for progress in first.recentProgress]
    # maxOffsetsPerTrigger bounds every micro-batch; all 40 arrive.
    assert max(sizes) <= 15
    assert sum(sizes) == 40
    # The offset as the checkpoint stores it: canonical JSON, keys sorted.
    last = first.lastProgress
    assert last is not None
    assert last["sources"][0]["endOffset"] == f'{{"{topic}": {{"0": 20, "1": 20}}}}'

    produce(node, topic, values(25, "b", 2))
    second = run()
    assert sum(progress["numInputRows"] for progress in second.recentProgress) == 25

    rows = spark.read.parquet(str(output)).collect()
    assert len(rows) == 65
    assert sorted(row.value for row in rows) == sorted(
        [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(25)]
    )
    assert len({(row.partition, row.offset) for row in rows}) == 65


def test_processing_time_stream_keeps_up_with_a_producer(
    spark: SparkSession, node: Cluster, tmp_path: Path
) -> None:
    topic = new_topic(node, "live", 2)
    query = (
        stream_reader(spark, node, subscribe=topic, startingOffsets="earliest")
        .load()
        .writeStream.format("memory")
        .queryName("live_rows")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:
        produce(node, topic, values(20, "first-", 2))
        wait_until("the query running", lambda: len(memory_rows(spark, "live_rows")) == 20)

        def write() -> None:
            for round_number in range(15):
                produce(node, topic, values(20, f"r{round_number}-", 2))
                time.sleep(0.2)

        producer = threading.Thread(target=write)
        producer.start()
        # While the producer writes, micro-batches already bring its records in.
        wait_until(
            "records read while the producer writes",
            lambda: len(memory_rows(spark, "live_rows")) > 20,
        )
        assert producer.is_alive()
        producer.join(60)
        # Keeping up: the last records arrive within a few triggers of the last write.
        wait_until(
            "every record read", lambda: len(memory_rows(spark, "live_rows")) >= 320, timeout=10
        )
        rows = memory_rows(spark, "live_rows")
        assert len(rows) == len(set(rows)) == 320
        assert query.exception() is None
    finally:
        query.stop()


def test_new_partitions_and_new_topics_of_a_pattern_are_read(
    spark: SparkSession, node: Cluster, admin: AdminClient, tmp_path: Path
) -> None:
    first = new_topic(node, "grow-x", 1)
    produce(node, first, values(5, "first", 1))
    query = (
        stream_reader(spark, node, subscribePattern="grow-x-.*", startingOffsets="earliest")
        .load()
        .writeStream.format("memory")
        .queryName("grow_rows")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:
        wait_until("the first topic read", lambda: len(memory_rows(spark, "grow_rows")) == 5)
        second = new_topic(node, "grow-x", 1)
        produce(node, second, values(4, "second", 1))
        admin.create_partitions([NewPartitions(first, 2)])[first].result(30)
        node.wait_for(
            "the new partition led",
            lambda: len(admin.list_topics(first, timeout=5).topics[first].partitions) == 2,
        )
        produce(node, first, [{"partition": 1, "value": b"new-partition"}] * 3)
        wait_until("all read", lambda: len(memory_rows(spark, "grow_rows")) == 12)
        assert sorted(set(memory_rows(spark, "grow_rows"))) == sorted(
            [(first, 0, o) for o in range(5)]
            + [(first, 1, o) for o in range(3)]
            + [(second, 0, o) for o in range(4)]
        )
    finally:
        query.stop()


def test_a_deleted_topic_fails_the_query_when_data_loss_is_fatal(
    spark: SparkSession, node: Cluster, admin: AdminClient, tmp_path: Path
) -> None:
    topic = new_topic(node, "doomed", 1)
    produce(node, topic, values(3, "v", 1))
    query = (
        stream_reader(spark, node, subscribe=topic, startingOffsets="earliest")
        .load()
        .writeStream.format("memory")
        .queryName("doomed_rows")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:
        wait_until("the records read", lambda: len(memory_rows(spark, "doomed_rows")) == 3)
        admin.delete_topics([topic])[topic].result(30)
        with pytest.raises(StreamingQueryException) as failure:
            query.awaitTermination(60)
        message = str(failure.value)
        assert f"partition {topic}-0 is gone" in message
        assert "failOnDataLoss" in message
    finally:
        query.stop()


def test_a_deleted_topic_is_skipped_when_data_loss_is_allowed(
    spark: SparkSession, node: Cluster, admin: AdminClient, tmp_path: Path
) -> None:
    doomed, kept = new_topic(node, "skipped", 1), new_topic(node, "kept", 1)
    produce(node, doomed, values(3, "d", 1))
    produce(node, kept, values(3, "k", 1))
    query = (
        stream_reader(
            spark,
            node,
            subscribe=f"{doomed},{kept}",
            startingOffsets="earliest",
            failOnDataLoss="false",
        )
        .load()
        .writeStream.format("memory")
        .queryName("skipped_rows")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:
        wait_until("the records read", lambda: len(memory_rows(spark, "skipped_rows")) == 6)
        admin.delete_topics([doomed])[doomed].result(30)
        produce(node, kept, values(4, "later", 1))
        wait_until("the kept topic read on", lambda: len(memory_rows(spark, "skipped_rows")) == 10)
        assert query.isActive
        assert query.exception() is None
    finally:
        query.stop()
