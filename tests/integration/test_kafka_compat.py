"""What programs written for Kafka expect of a broker (issue 22), with real clients against one
real `kraft serve` node (broker and controller roles)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode

from bench.cluster import CLUSTER_ID, Cluster
from net.api_keys import ApiKey
from net.client import NodeConnection
from net.protocol import field_entity_type, make_entity, request_schema

# Topics created automatically get the node's num.partitions.
NUM_PARTITIONS = 2


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("node"), 1, **{"num.partitions": str(NUM_PARTITIONS)}
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def topic_names(cluster: Cluster) -> set[str]:
    """Every topic (Metadata for all topics never creates any)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    return set(admin.list_topics(timeout=10).topics)


def log_events(cluster: Cluster, event: str) -> list[dict[str, Any]]:
    lines = cluster.nodes[1].log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return [e for e in events if e.get("event") == event]


def metadata_request(version: int, topic: str, *, allow_auto_topic_creation: bool) -> Any:
    schema: Any = request_schema(ApiKey.METADATA, version)
    topic_type = field_entity_type(schema, "topics")
    fields: dict[str, object] = {"name": topic}
    if version >= 10:
        fields["topic_id"] = None
    values: dict[str, object] = {"topics": (make_entity(topic_type, **fields),)}
    if version >= 4:
        values["allow_auto_topic_creation"] = allow_auto_topic_creation
    if version >= 8:
        values["include_topic_authorized_operations"] = False
    if 8 <= version <= 10:
        values["include_cluster_authorized_operations"] = False
    return make_entity(schema, **values)


# --- topic auto-creation (item 1) -------------------------------------------------------------


def test_a_producer_creates_the_topic_it_writes_to(node: Cluster) -> None:
    producer = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": 30000})
    errors: list[KafkaError | None] = []
    for index in range(10):
        producer.produce(
            "auto-orders", f"v{index}".encode(), on_delivery=lambda e, _m: errors.append(e)
        )
    assert producer.flush(30) == 0
    assert errors == [None] * 10
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    topic = admin.list_topics(topic="auto-orders", timeout=10).topics["auto-orders"]
    assert len(topic.partitions) == NUM_PARTITIONS


def test_consumers_do_not_create_topics(node: Cluster) -> None:
    # librdkafka consumers send allow_auto_topic_creation=false (allow.auto.create.topics).
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "no-create",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["consumed-only"])
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            consumer.poll(0.5)
    finally:
        consumer.close()
    assert "consumed-only" not in topic_names(node)


@pytest.mark.parametrize("version", [1, 3])
async def test_metadata_before_v4_creates_the_topics_it_names(node: Cluster, version: int) -> None:
    name = f"auto-v{version}"
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        request = metadata_request(version, name, allow_auto_topic_creation=True)
        first: Any = await connection.send(request)
        assert first.topics[0].error_code == ErrorCode.leader_not_available

        async def created() -> Any:
            while True:
                response: Any = await connection.send(request)
                topic = response.topics[0]
                if topic.error_code == ErrorCode.none and all(
                    p.error_code == ErrorCode.none for p in topic.partitions
                ):
                    return topic
                await asyncio.sleep(0.1)

        topic = await asyncio.wait_for(created(), timeout=20)
        assert len(topic.partitions) == NUM_PARTITIONS
    finally:
        await connection.close()


async def test_metadata_without_the_flag_and_internal_topics_create_nothing(node: Cluster) -> None:
    # (`__consumer_offsets` is left out: its coordinator creates it for the consumer above.)
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        for version, name, allow in [
            (12, "not-allowed", False),
            (12, "__transaction_state", True),
            (12, "__cluster_metadata", True),
            (1, "__transaction_state", True),
        ]:
            request = metadata_request(version, name, allow_auto_topic_creation=allow)
            response: Any = await connection.send(request)
            assert response.topics[0].error_code == ErrorCode.unknown_topic_or_partition, name
    finally:
        await connection.close()
    await asyncio.sleep(1)
    assert topic_names(node).isdisjoint(
        {"not-allowed", "__cluster_metadata", "__transaction_state"}
    )


async def test_one_creation_at_a_time_per_topic(node: Cluster) -> None:
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    request = metadata_request(12, "stampede", allow_auto_topic_creation=True)
    try:
        await connection.connect(10)
        responses: list[Any] = await asyncio.gather(*(connection.send(request) for _ in range(50)))
    finally:
        await connection.close()
    assert {r.topics[0].error_code for r in responses} <= {
        ErrorCode.leader_not_available,
        ErrorCode.none,
    }
    await asyncio.to_thread(node.wait_for, "stampede", lambda: "stampede" in topic_names(node))
    asked = [e for e in log_events(node, "topic_auto_created") if e["topic"] == "stampede"]
    # Each of the 50 requests would ask the controller without the in-flight guard.
    assert 1 <= len(asked) <= 3
    assert [e for e in asked if not e["already_existed"]] == asked[:1]


# --- cluster id (item 2) ----------------------------------------------------------------------


def test_metadata_and_describe_cluster_name_the_cluster_id(node: Cluster) -> None:
    # librdkafka's clusterid() comes from Metadata (v12 here).
    producer = Producer({"bootstrap.servers": node.bootstrap})
    assert producer.cluster_id(timeout=10) == CLUSTER_ID
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    assert admin.describe_cluster().result(timeout=10).cluster_id == CLUSTER_ID


# --- invalid topic names (item 4) -------------------------------------------------------------

INVALID_NAMES = ["bad$#!", "x" * 250, ".", ".."]


@pytest.mark.parametrize("name", INVALID_NAMES, ids=["illegal-chars", "too-long", "dot", "dots"])
def test_metadata_of_an_invalid_topic_name_is_invalid_topic(node: Cluster, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    topic = admin.list_topics(topic=name, timeout=10).topics[name]
    assert topic.error is not None and topic.error.code() == KafkaError.TOPIC_EXCEPTION


def test_a_producer_fails_messages_to_an_invalid_topic_at_once(node: Cluster) -> None:
    # The producer would hold them for message.timeout.ms on UNKNOWN_TOPIC_OR_PARTITION.
    producer = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": 60000})
    errors: list[KafkaError | None] = []
    producer.produce("bad$#!", b"v", on_delivery=lambda error, _message: errors.append(error))
    assert producer.flush(15) == 0
    assert [error and error.code() for error in errors] == [KafkaError.TOPIC_EXCEPTION]


@pytest.fixture
def no_auto_creation(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path, 1, **{"auto.create.topics.enable": "false"})
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def test_auto_creation_can_be_turned_off(no_auto_creation: Cluster) -> None:
    producer = Producer(
        {"bootstrap.servers": no_auto_creation.bootstrap, "message.timeout.ms": 3000}
    )
    errors: list[KafkaError | None] = []
    producer.produce("never", b"v", on_delivery=lambda error, _message: errors.append(error))
    assert producer.flush(15) == 0
    assert [error and error.code() for error in errors] == [KafkaError._MSG_TIMED_OUT]
    assert "never" not in topic_names(no_auto_creation)
