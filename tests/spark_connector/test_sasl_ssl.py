"""Spark against a SASL_SSL node (SCRAM-SHA-512 over TLS): a streaming read-and-write pipeline
and a batch read, the executors connecting with the connector's `kraft.security.protocol`,
`kraft.sasl.*` and `kraft.ssl.truststore.*` options; a wrong password writes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from bench.cluster import Cluster
from bench.tls_certificates import SERVER_SUBJECT
from node.certificates import CertificateAuthority

pytestmark = pytest.mark.timeout(240)

PASSWORD = "alice-secret"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """A SASL_SSL node, and the CA that signed its certificate."""
    root = tmp_path_factory.mktemp("spark-sasl-ssl")
    authority = CertificateAuthority(root / "ca")
    keystore = authority.issue("node", SERVER_SUBJECT, server=True).write_keystore(
        root / "ca" / "node.keystore.pem"
    )
    cluster = Cluster.combined(
        root / "node",
        1,
        **{
            "ssl.keystore.location": str(keystore),
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "bootstrap.scram.credentials": f"SCRAM-SHA-512=[name=alice,password={PASSWORD}]",
        },
    )
    cluster.name_listeners("SASL_SSL")
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced, timeout=60)
        yield cluster, authority.certificate_path
    finally:
        cluster.stop_all()


def librdkafka(cluster: Cluster, ca: Path) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(ca),
    }


def connector(cluster: Cluster, ca: Path, password: str = PASSWORD) -> dict[str, str]:
    """The connector's options for the node: Spark's Kafka security options under `kraft.`."""
    return {
        "kraft.bootstrap.servers": cluster.bootstrap,
        "kraft.security.protocol": "SASL_SSL",
        "kraft.sasl.mechanism": "SCRAM-SHA-512",
        "kraft.sasl.username": "alice",
        "kraft.sasl.password": password,
        "kraft.ssl.truststore.type": "PEM",
        "kraft.ssl.truststore.location": str(ca),
    }


def records(settings: dict[str, Any], topic: str, partitions: int) -> list[tuple[Any, ...]]:
    """(partition, key, value) of every record of `topic`, read with librdkafka."""
    consumer = Consumer({**settings, "group.id": "checker", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found: list[tuple[Any, ...]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is None:
                found.append((message.partition(), message.key(), message.value()))
            elif error.code() == KafkaError._PARTITION_EOF:
                partition = message.partition()
                assert partition is not None
                at_end.add(partition)
    finally:
        consumer.close()
    assert len(at_end) == partitions, f"{topic} was not read to its end"
    return sorted(found)


def test_a_streaming_write_and_a_batch_read_over_sasl_ssl(
    spark: SparkSession, secured: tuple[Cluster, Path], tmp_path: Path
) -> None:
    cluster, ca = secured
    settings = librdkafka(cluster, ca)
    admin = AdminClient(settings)
    for topic in ("secured-in", "secured-out"):
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    producer = Producer(settings)
    for i in range(30):
        producer.produce("secured-in", f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0

    read = spark.readStream.format("kraft").option("subscribe", "secured-in")
    read = read.option("startingOffsets", "earliest")
    write = (
        read.options(**connector(cluster, ca))
        .load()
        .selectExpr("key", "value", "partition")
        .writeStream.format("kraft")
        .options(**connector(cluster, ca))
        .option("topic", "secured-out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert write.awaitTermination(120)
    assert write.exception() is None
    expected = records(settings, "secured-in", 2)
    assert len(expected) == 30
    assert records(settings, "secured-out", 2) == expected

    batch = (
        spark.read.format("kraft")
        .options(**connector(cluster, ca))
        .option("subscribe", "secured-out")
        .load()
    )
    assert sorted((row.partition, row.key, row.value) for row in batch.collect()) == expected


def test_a_write_with_a_wrong_password_fails_and_writes_nothing(
    spark: SparkSession, secured: tuple[Cluster, Path]
) -> None:
    cluster, ca = secured
    settings = librdkafka(cluster, ca)
    # The client must outlive the future: destroying it fails what it still owes.
    admin = AdminClient(settings)
    admin.create_topics([NewTopic("refused", 1, 1)])["refused"].result(20)
    frame = spark.createDataFrame([(b"intruder",)], "value binary")
    with pytest.raises(PySparkException):
        (
            frame.write.format("kraft")
            .options(**connector(cluster, ca, "wrong"))
            .option("kraft.request.timeout.ms", "3000")
            .option("topic", "refused")
            .save()
        )
    assert records(settings, "refused", 1) == []
