"""Producing, reading and option shortcuts shared by the Spark tests."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import DataFrameReader, SparkSession
from pyspark.sql.streaming.readwriter import DataStreamReader

from bench.cluster import Cluster
from tests.integration.test_produce_consume import create_topic

_names = itertools.count()


def new_topic(
    node: Cluster, prefix: str, partitions: int = 1, configs: Mapping[str, str] | None = None
) -> str:
    """A fresh topic (a unique name per call, so tests sharing the node never collide)."""
    name = f"{prefix}-{next(_names)}"
    create_topic(node, name, partitions, configs=configs)
    return name


def produce(node: Cluster, topic: str, messages: Sequence[dict[str, Any]]) -> None:
    """Produce each message (confluent-kafka's produce() keyword arguments) and wait for all."""
    producer = Producer({"bootstrap.servers": node.bootstrap, "acks": "all", "linger.ms": 2})
    failures: list[Any] = []
    for message in messages:
        producer.produce(
            topic, on_delivery=lambda error, _: failures.append(error) if error else None, **message
        )
    assert producer.flush(30) == 0
    assert failures == []


def consume_all(node: Cluster, topic: str, partitions: int) -> list[Any]:
    """Every message of `topic` read with confluent-kafka, in partition then offset order."""
    consumer = Consumer(
        {"bootstrap.servers": node.bootstrap, "group.id": "checker", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages = []
    at_end: set[int] = set()
    try:
        while len(at_end) < partitions:
            message = consumer.poll(10)
            assert message is not None, f"nothing more from {topic}"
            error = message.error()
            if error is None:
                messages.append(message)
            elif error.code() == -191:  # _PARTITION_EOF
                partition = message.partition()
                assert partition is not None
                at_end.add(partition)
            else:
                raise AssertionError(error)
    finally:
        consumer.close()
    return sorted(messages, key=lambda m: (m.partition(), m.offset()))


def batch_reader(spark: SparkSession, node: Cluster, **options: str) -> DataFrameReader:
    reader = spark.read.format("kraft").option("kraft.bootstrap.servers", node.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def stream_reader(spark: SparkSession, node: Cluster, **options: str) -> DataStreamReader:
    reader = spark.readStream.format("kraft").option("kraft.bootstrap.servers", node.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader
