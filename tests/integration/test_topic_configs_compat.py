"""Every Kafka topic config, with real clients against one real `kraft serve` node: each is
accepted with Kafka's validation and described with its source, and those with a behaviour here
(`compression.type`) change what the log holds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from confluent_kafka import KafkaError, KafkaException
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
