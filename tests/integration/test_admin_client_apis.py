"""The admin APIs Kafka's admin clients call, against a real two-node cluster (both roles on
each node): DeleteRecords, AlterConfigs, DescribeLogDirs, DescribeProducers and the authorized
operations of Metadata and DescribeCluster, with confluent-kafka and kafka-python."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka import TopicPartition as PythonTopicPartition
from kafka.admin import ConfigResource as PythonConfigResource
from kafka.admin import ConfigResourceType as PythonConfigResourceType

from bench.cluster import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path_factory.mktemp("admin-apis"), 2)
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(2), timeout=60)
        yield cluster
    finally:
        cluster.stop_all()


def create_topic(
    cluster: Cluster, name: str, *, replication_factor: int = 2, configs: Mapping[str, str] = {}
) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(
        name, num_partitions=1, replication_factor=replication_factor, config=dict(configs)
    )
    admin.create_topics([topic])[name].result(timeout=30)
    cluster.wait_for(
        f"{name} led",
        lambda: (
            all(
                len(p.isrs) == replication_factor
                for p in admin.list_topics(name, timeout=10).topics[name].partitions.values()
            )
            or None
        ),
        timeout=30,
    )
    return admin


def produce(cluster: Cluster, topic: str, count: int, **settings: Any) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0, **settings}
    )
    failures: list[Any] = []
    for index in range(count):
        producer.produce(
            topic,
            value=f"m{index}".encode(),
            partition=0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
        # One batch per message, so that DeleteRecords may cut between any two.
        producer.flush(30)
    assert failures == []


def replica_logs(cluster: Cluster, topic: str) -> dict[int, dict[str, Any]]:
    """Each node's own view of its replica of partition 0 of `topic`."""
    return {
        node_id: node.get(f"/v1/topics/{topic}/partitions/0/log", timeout=5)
        for node_id, node in cluster.nodes.items()
    }


def test_delete_records_moves_the_log_start_of_the_leader_and_its_followers(
    cluster: Cluster,
) -> None:
    admin = create_topic(cluster, "trimmed")
    produce(cluster, "trimmed", 10)

    deleted = admin.delete_records([TopicPartition("trimmed", 0, 4)])
    answer = deleted[TopicPartition("trimmed", 0, 4)].result(timeout=30)
    assert answer.low_watermark == 4

    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        answers = python_admin.delete_records({PythonTopicPartition("trimmed", 0): 7})
        assert answers[PythonTopicPartition("trimmed", 0)]["low_watermark"] == 7
    finally:
        python_admin.close()

    # Every replica follows the leader's new log start as it fetches.
    cluster.wait_for(
        "every replica starting at 7",
        lambda: (
            all(log["log_start_offset"] == 7 for log in replica_logs(cluster, "trimmed").values())
            or None
        ),
        timeout=30,
    )
    earliest, latest = _consumer_watermarks(cluster, "trimmed")
    assert (earliest, latest) == (7, 10)

    # Beyond the high watermark: OFFSET_OUT_OF_RANGE, as Kafka answers.
    beyond = admin.delete_records([TopicPartition("trimmed", 0, 11)])
    with pytest.raises(KafkaException) as refused:
        beyond[TopicPartition("trimmed", 0, 11)].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE

    # -1 (librdkafka's OFFSET_END) deletes up to the high watermark.
    to_end = admin.delete_records([TopicPartition("trimmed", 0, -1)])
    assert to_end[TopicPartition("trimmed", 0, -1)].result(timeout=30).low_watermark == 10


def test_delete_records_is_refused_on_a_compacted_topic(cluster: Cluster) -> None:
    admin = create_topic(cluster, "compacted-only", configs={"cleanup.policy": "compact"})
    deleted = admin.delete_records([TopicPartition("compacted-only", 0, 0)])
    with pytest.raises(KafkaException) as refused:
        deleted[TopicPartition("compacted-only", 0, 0)].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.POLICY_VIOLATION


def _consumer_watermarks(cluster: Cluster, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


TOPIC_OPERATIONS = {
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
}
CLUSTER_OPERATIONS = {
    AclOperation.CREATE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
}


def test_authorized_operations_are_every_one_kafka_supports(cluster: Cluster) -> None:
    admin = create_topic(cluster, "authorized", replication_factor=1)
    described = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert set(described.authorized_operations) == CLUSTER_OPERATIONS
    topics = admin.describe_topics(
        TopicCollection(["authorized"]), include_authorized_operations=True
    )
    topic = topics["authorized"].result(timeout=30)
    assert set(topic.authorized_operations) == TOPIC_OPERATIONS

    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        assert set(python_admin.describe_cluster()["authorized_operations"]) == {
            operation.name for operation in CLUSTER_OPERATIONS
        }
        (python_topic,) = python_admin.describe_topics(["authorized"])
        assert set(python_topic["authorized_operations"]) == {
            operation.name for operation in TOPIC_OPERATIONS
        }
    finally:
        python_admin.close()


def test_describe_log_dirs_lists_each_replica_with_its_size(cluster: Cluster) -> None:
    create_topic(cluster, "sized")
    produce(cluster, "sized", 5)
    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        answers = python_admin.describe_log_dirs({"sized": [0]})
    finally:
        python_admin.close()
    assert sorted(answer["broker"] for answer in answers) == sorted(cluster.nodes)
    for answer in answers:
        (log_dir,) = answer["log_dirs"]
        assert log_dir["error_code"] == 0
        assert log_dir["log_dir"] == str(cluster.nodes[answer["broker"]].data_dir.absolute())
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        (topic,) = log_dir["topics"]
        assert topic["name"] == "sized"
        (partition,) = topic["partitions"]
        assert partition["partition_index"] == 0
        assert partition["partition_size"] > 0
        assert partition["offset_lag"] == 0
        assert partition["is_future_key"] is False


def test_describe_producers_lists_the_idempotent_producers_of_a_partition(
    cluster: Cluster,
) -> None:
    create_topic(cluster, "produced")
    produce(cluster, "produced", 3, **{"enable.idempotence": True})
    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        states = python_admin.describe_producers([PythonTopicPartition("produced", 0)])
    finally:
        python_admin.close()
    (producer,) = states[PythonTopicPartition("produced", 0)].active_producers
    assert producer.producer_id >= 0
    assert producer.producer_epoch == 0
    assert producer.last_sequence == 2
    # The max timestamp of its last batch: librdkafka stamps records with the wall clock.
    assert abs(producer.last_timestamp - time.time() * 1000) < 300_000


def overrides(admin: AdminClient, topic: str) -> dict[str, str]:
    """The topic's configs set on the topic itself (DescribeConfigs' DYNAMIC_TOPIC_CONFIG)."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    return {
        name: entry.value
        for name, entry in described.items()
        if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    }


def overrides_become(
    cluster: Cluster, admin: AdminClient, topic: str, expected: dict[str, str]
) -> None:
    """Wait until DescribeConfigs shows `expected` as the overrides of `topic`."""
    cluster.wait_for(
        f"{topic}'s overrides {expected}",
        lambda: overrides(admin, topic) == expected or None,
        timeout=30,
    )


# The non-incremental AlterConfigs is what is tested: confluent-kafka marks it deprecated.
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_replaces_every_override_of_the_topic(cluster: Cluster) -> None:
    admin = create_topic(
        cluster, "replaced", configs={"cleanup.policy": "compact", "retention.ms": "60000"}
    )
    resource = ConfigResource(
        ResourceType.TOPIC,
        "replaced",
        set_config={"retention.ms": "120000", "segment.ms": "3600000"},
    )
    admin.alter_configs([resource])[resource].result(timeout=30)
    overrides_become(
        cluster, admin, "replaced", {"retention.ms": "120000", "segment.ms": "3600000"}
    )

    # kafka-python's AlterConfigs sends the overrides it keeps with the one it sets, and
    # resets one by sending the others.
    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    topic = PythonConfigResourceType.TOPIC
    try:
        python_admin.alter_configs(
            [PythonConfigResource(topic, "replaced", {"retention.ms": "1000"})], incremental=False
        )
        overrides_become(
            cluster, admin, "replaced", {"retention.ms": "1000", "segment.ms": "3600000"}
        )
        python_admin.reset_configs(
            [PythonConfigResource(topic, "replaced", ["segment.ms"])], incremental=False
        )
    finally:
        python_admin.close()
    overrides_become(cluster, admin, "replaced", {"retention.ms": "1000"})

    # Validated as at creation: a bad value refuses the whole resource.
    refused = ConfigResource(ResourceType.TOPIC, "replaced", set_config={"retention.ms": "soon"})
    with pytest.raises(KafkaException) as error:
        admin.alter_configs([refused])[refused].result(timeout=30)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    overrides_become(cluster, admin, "replaced", {"retention.ms": "1000"})
