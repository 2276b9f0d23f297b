"""A batch read and a write through Spark against a SASL_PLAINTEXT node: the connector's
`kraft.security.protocol`, `kraft.sasl.mechanism` and `kraft.sasl.jaas.config` (or
username/password) reach the executors' connections."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from bench.cluster import Cluster

pytestmark = pytest.mark.timeout(240)

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)


@pytest.fixture(scope="module")
def sasl_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("spark-sasl"),
        1,
        **{
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "bootstrap.scram.credentials": "SCRAM-SHA-512=[name=alice,password=alice-secret]",
        },
    )
    # The client listener named SASL_PLAINTEXT: Kafka's default protocol map makes it SASL.
    cluster.name_listeners("SASL_PLAINTEXT")
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def test_a_batch_read_authenticates_with_scram(spark: SparkSession, sasl_node: Cluster) -> None:
    settings: dict[str, str | int | float | bool] = {
        "bootstrap.servers": sasl_node.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    admin = AdminClient(settings)
    admin.create_topics([NewTopic("secured", 2, 1)])["secured"].result(20)
    producer = Producer(settings)
    for i in range(10):
        producer.produce("secured", f"s{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0

    def reader(**options: str) -> DataFrame:
        read = (
            spark.read.format("kraft")
            .option("kraft.bootstrap.servers", sasl_node.bootstrap)
            .option("subscribe", "secured")
            .option("kraft.security.protocol", "SASL_PLAINTEXT")
        )
        for key, value in options.items():
            read = read.option(key, value)
        return read.load()

    frame = reader(**{"kraft.sasl.mechanism": "SCRAM-SHA-512", "kraft.sasl.jaas.config": JAAS})
    values = sorted(row.value for row in frame.collect())
    assert values == sorted(f"s{i}".encode() for i in range(10))
    plain = reader(
        **{
            "kraft.sasl.mechanism": "PLAIN",
            "kraft.sasl.username": "alice",
            "kraft.sasl.password": "alice-secret",
        }
    )
    assert plain.count() == 10
    with pytest.raises(PySparkException):
        reader(
            **{
                "kraft.sasl.mechanism": "SCRAM-SHA-512",
                "kraft.sasl.username": "alice",
                "kraft.sasl.password": "wrong",
                "kraft.request.timeout.ms": "3000",
            }
        ).collect()
