"""Every Kafka topic config, with real clients against one real `kraft serve` node: each is
accepted with Kafka's validation and described with its source, and those with a behaviour here
(`compression.type`) change what the log holds."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as PythonNewTopic

from bench.cluster import Cluster
from net.record_batch import Compression, iter_batches

# Kafka 3.9's topic configs that were refused as unknown, each at a valid non-default value.
KAFKA_ONLY_CONFIGS = {
    "compression.gzip.level": "5",
    "compression.lz4.level": "12",
    "compression.zstd.level": "7",
    "file.delete.delay.ms": "1000",
    "index.interval.bytes": "8192",
    "local.retention.bytes": "-1",
    "local.retention.ms": "60000",
    "max.compaction.lag.ms": "3600000",
    "message.downconversion.enable": "false",
    "message.format.version": "2.8",
    "message.timestamp.difference.max.ms": "86400000",
    "min.compaction.lag.ms": "1000",
    "preallocate": "true",
    "remote.log.copy.disable": "true",
    "remote.log.delete.on.disable": "true",
    "remote.storage.enable": "false",
    "segment.index.bytes": "1048576",
    "segment.jitter.ms": "10",
}


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path_factory.mktemp("topic-configs"), 1)
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", lambda: cluster.brokers_unfenced(1), timeout=60)
        yield cluster
    finally:
        cluster.stop_all()


def create_topic(cluster: Cluster, name: str, configs: Mapping[str, str]) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, num_partitions=1, replication_factor=1, config=dict(configs))
    admin.create_topics([topic])[name].result(timeout=30)
    cluster.wait_for(
        f"{name} led",
        lambda: (
            all(
                p.leader >= 0
                for p in admin.list_topics(name, timeout=10).topics[name].partitions.values()
            )
            or None
        ),
    )
    return admin


def described(admin: AdminClient, topic: str) -> dict[str, tuple[str, int]]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: (entry.value, entry.source) for name, entry in entries.items()}


def test_every_kafka_topic_config_is_accepted_and_described(node: Cluster) -> None:
    admin = create_topic(node, "every-config", KAFKA_ONLY_CONFIGS)
    configs = described(admin, "every-config")
    for name, value in KAFKA_ONLY_CONFIGS.items():
        assert configs[name] == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value), name
    # The ones not set are described at Kafka's default.
    defaults = described(create_topic(node, "default-configs", {}), "default-configs")
    assert defaults["compression.type"] == ("producer", ConfigSource.DEFAULT_CONFIG.value)
    assert defaults["segment.index.bytes"] == ("10485760", ConfigSource.DEFAULT_CONFIG.value)
    assert defaults["message.downconversion.enable"] == (
        "true",
        ConfigSource.DEFAULT_CONFIG.value,
    )

    # kafka-python creates a topic with them too.
    python_admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        python_admin.create_topics(
            [PythonNewTopic("python-configs", 1, 1, topic_configs=KAFKA_ONLY_CONFIGS)]
        )
    finally:
        python_admin.close()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("remote.storage.enable", "true"),
        ("compression.type", "brotli"),
        ("compression.lz4.level", "18"),
        ("max.compaction.lag.ms", "0"),
        ("segment.index.bytes", "3"),
    ],
)
def test_a_bad_topic_config_is_refused_as_kafka_refuses_it(
    node: Cluster, name: str, value: str
) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    topic = f"refused-{name.replace('.', '-')}"
    created = admin.create_topics([NewTopic(topic, 1, 1, config={name: value})])
    with pytest.raises(KafkaException) as refused:
        created[topic].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert f"for configuration {name}" in refused.value.args[0].str()


def stored_codecs(cluster: Cluster, topic: str) -> list[Compression]:
    """The codec of each batch in the leader's log of partition 0, read from its segments."""
    directory = cluster.nodes[1].data_dir / f"{topic}-0"
    codecs: list[Compression] = []
    for segment in sorted(directory.glob("*.log")):
        codecs.extend(header.compression for _, header in iter_batches(segment.read_bytes()))
    return codecs


def produce(cluster: Cluster, topic: str, values: list[str], codec: str) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "compression.type": codec, "linger.ms": 5}
    )
    failures: list[Any] = []
    for value in values:
        producer.produce(
            topic,
            value=value.encode(),
            partition=0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(30) == 0
    assert failures == []


def kcat_values(cluster: Cluster, topic: str) -> list[str]:
    output = subprocess.run(
        ["kcat", "-C", "-b", cluster.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return output.splitlines()


@pytest.mark.parametrize(
    ("topic_codec", "stored"),
    [
        ("gzip", Compression.GZIP),
        ("zstd", Compression.ZSTD),
        ("snappy", Compression.SNAPPY),
        ("lz4", Compression.LZ4),
        ("uncompressed", Compression.NONE),
    ],
)
def test_the_leader_recompresses_to_the_topics_compression_type(
    node: Cluster, topic_codec: str, stored: Compression
) -> None:
    topic = f"recompressed-{topic_codec}"
    create_topic(node, topic, {"compression.type": topic_codec})
    # Compressible: librdkafka sends a batch uncompressed when its codec would not shrink it.
    plain = [f"plain-{i}-" + "x" * 200 for i in range(20)]
    packed = [f"lz4-{i}-" + "y" * 200 for i in range(20)]
    produce(node, topic, plain, "none")
    produce(node, topic, packed, "lz4")
    codecs = stored_codecs(node, topic)
    assert codecs and set(codecs) == {stored}
    assert kcat_values(node, topic) == plain + packed


def test_producer_compression_type_keeps_the_producers_codec(node: Cluster) -> None:
    create_topic(node, "as-produced", {})
    values = ["a" * 300, "b" * 300, "c" * 300]
    produce(node, "as-produced", values[:2], "lz4")
    assert set(stored_codecs(node, "as-produced")) == {Compression.LZ4}
    produce(node, "as-produced", values[2:], "none")
    assert stored_codecs(node, "as-produced")[-1] is Compression.NONE
    assert kcat_values(node, "as-produced") == values
