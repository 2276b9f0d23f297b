"""Batch and streaming writes through Spark against a real node, read back with librdkafka."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from bench.cluster import Cluster
from tests.spark_connector.helpers import consume_all, new_topic, produce, stream_reader

pytestmark = pytest.mark.timeout(240)

ROWS_SCHEMA = (
    "key binary, value string, partition int, headers array<struct<key: string, value: binary>>"
)


def test_batch_write_round_trip_with_keys_headers_and_partitions(
    spark: SparkSession, node: Cluster
) -> None:
    topic = new_topic(node, "written", 3)
    rows = [
        (
            None if i % 5 == 0 else b"key-%d" % i,
            f"value-{i}",
            i % 3,
            [("n", str(i).encode()), ("none", None)] if i % 2 else [],
        )
        for i in range(60)
    ]
    frame = spark.createDataFrame(rows, ROWS_SCHEMA).repartition(2)
    (
        frame.write.format("kraft")
        .option("kraft.bootstrap.servers", node.bootstrap)
        .option("topic", topic)
        .option("kraft.compression.type", "lz4")
        .mode("append")
        .save()
    )
    messages = consume_all(node, topic, 3)
    assert len(messages) == 60
    by_value = {m.value().decode(): m for m in messages}
    for key, value, partition, headers in rows:
        message = by_value[value]
        assert message.partition() == partition
        assert message.key() == key
        assert (message.headers() or []) == headers
    # Each task's rows keep their order within a partition.
    for partition in range(3):
        numbers = [int(m.value()[6:]) for m in messages if m.partition() == partition]
        assert len(numbers) == 20


def test_keys_without_a_partition_land_where_kafkas_partitioner_puts_them(
    spark: SparkSession, node: Cluster
) -> None:
    ours, theirs = new_topic(node, "keyed", 4), new_topic(node, "keyed", 4)
    keys = [f"customer-{i}".encode() for i in range(40)]
    (
        spark.createDataFrame(
            [(k, k.decode(), ours) for k in keys], "key binary, value string, topic string"
        )
        .write.format("kraft")
        .option("kraft.bootstrap.servers", node.bootstrap)
        .mode("append")
        .save()
    )
    librdkafka = Producer({"bootstrap.servers": node.bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        librdkafka.produce(theirs, value=key, key=key)
    assert librdkafka.flush(30) == 0
    placed = {m.key(): m.partition() for m in consume_all(node, ours, 4)}
    expected = {m.key(): m.partition() for m in consume_all(node, theirs, 4)}
    assert placed == expected
    assert len(set(placed.values())) > 1


def test_streaming_write_round_trip(spark: SparkSession, node: Cluster, tmp_path: Path) -> None:
    source, target = new_topic(node, "pipe-in", 2), new_topic(node, "pipe-out", 2)
    produce(
        node,
        source,
        [
            {"partition": i % 2, "key": b"k%d" % i, "value": b"v%d" % i, "headers": [("h", b"x")]}
            for i in range(50)
        ],
    )
    query = (
        stream_reader(
            spark, node, subscribe=source, startingOffsets="earliest", includeHeaders="true"
        )
        .load()
        .selectExpr("key", "value", "partition", "headers")
        .writeStream.format("kraft")
        .option("kraft.bootstrap.servers", node.bootstrap)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(90)
    assert query.exception() is None
    copied = consume_all(node, target, 2)
    original = consume_all(node, source, 2)
    summary = [(m.partition(), m.offset(), m.key(), m.value(), m.headers()) for m in copied]
    assert summary == [
        (m.partition(), m.offset(), m.key(), m.value(), m.headers()) for m in original
    ]


@pytest.mark.parametrize(
    ("schema", "options", "named"),
    [
        ("key binary", {"topic": "t"}, "needs a value column"),
        ("value binary, partition string", {"topic": "t"}, "column partition must be int"),
        ("value binary", {}, "a topic column or the topic option"),
        ("value binary", {"topic": "t", "kraft.acks": "some"}, "option kraft.acks"),
        ("value binary", {"topic": "no-such-topic"}, "topic 'no-such-topic' does not exist"),
    ],
)
def test_bad_writes_fail_naming_the_cause(
    spark: SparkSession, node: Cluster, schema: str, options: dict[str, str], named: str
) -> None:
    values = {"key binary": (b"k",), "value binary": (b"v",)}.get(schema, (b"v", "0"))
    writer = (
        spark.createDataFrame([values], schema)
        .write.format("kraft")
        .option("kraft.bootstrap.servers", node.bootstrap)
        .mode("append")
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    with pytest.raises(PySparkException, match=named):
        writer.save()


def test_a_partition_the_topic_lacks_fails_the_write(spark: SparkSession, node: Cluster) -> None:
    topic = new_topic(node, "narrow", 2)
    writer = (
        spark.createDataFrame([(b"v", 5)], "value binary, partition int")
        .write.format("kraft")
        .option("kraft.bootstrap.servers", node.bootstrap)
        .option("topic", topic)
        .mode("append")
    )
    with pytest.raises(PySparkException, match="partition 5 is not one of the 2 partitions"):
        writer.save()


def readme_batch_write() -> str:
    """The README's batch write example, as written there."""
    lines = (Path(__file__).parents[2] / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("df.write."))
    example = [lines[start].strip()]
    while example[-1].endswith("\\"):
        start += 1
        example[-1] = example[-1].removesuffix("\\").strip()
        example.append(lines[start].split("#")[0].strip())
    return "".join(example)


def test_the_readme_batch_write_example_runs_as_written(spark: SparkSession, node: Cluster) -> None:
    topic = new_topic(node, "readme", 1)
    example = readme_batch_write().replace('"..."', repr(node.bootstrap))
    example = example.replace('"out"', repr(topic))
    df = spark.createDataFrame([("hello",)], "value string")
    eval(example, {"df": df})
    assert [m.value() for m in consume_all(node, topic, 1)] == [b"hello"]
