"""The matrix's flows with confluent-kafka (librdkafka 2.16): Producer, Consumer, AdminClient."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from tests.compat.common import TIMEOUT, Message, confluent_message


def _produce(settings: dict[str, Any], topic: str, written: list[Message]) -> None:
    producer = Producer({"linger.ms": 5, **settings})
    failures: list[object] = []
    for message in written:
        producer.produce(
            topic,
            value=message.value,
            key=message.key,
            headers=list(message.headers),
            partition=0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(TIMEOUT) == 0
    assert failures == []


def produce(bootstrap: str, topic: str, written: list[Message], acks: str, codec: str) -> None:
    _produce(
        {"bootstrap.servers": bootstrap, "acks": acks, "compression.type": codec},
        topic,
        written,
    )


def produce_idempotent(bootstrap: str, topic: str, written: list[Message]) -> None:
    _produce({"bootstrap.servers": bootstrap, "enable.idempotence": True}, topic, written)


def _poll(consumer: Consumer, count: int) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count:
        assert time.monotonic() < deadline, f"read {len(got)} of {count}"
        record = consumer.poll(0.2)
        if record is None:
            continue
        assert record.error() is None, record.error()
        got.append(confluent_message(record))
    return got


def _assigned(bootstrap: str, topic: str, offset: int, count: int) -> list[Message]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"assign-{topic}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        return _poll(consumer, count)
    finally:
        consumer.close()


def consume_assigned(bootstrap: str, topic: str, count: int) -> list[Message]:
    return _assigned(bootstrap, topic, OFFSET_BEGINNING, count)


def consume_from(bootstrap: str, topic: str, offset: int, count: int) -> list[Message]:
    """Assign partition 0, then seek to `offset` once the assignment is in place."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"seek-{topic}", "enable.auto.commit": False}
    )
    try:
        partition = TopicPartition(topic, 0, OFFSET_BEGINNING)
        consumer.assign([partition])
        first = _poll(consumer, 1)
        assert first[0].offset == 0
        consumer.seek(TopicPartition(topic, 0, offset))
        return _poll(consumer, count)
    finally:
        consumer.close()


def consume_group(bootstrap: str, topic: str, group: str, count: int) -> list[Message]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        got = _poll(consumer, count)
        consumer.commit(asynchronous=False)
        return got
    finally:
        consumer.close()


def commit(bootstrap: str, topic: str, group: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        done = consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        assert done is not None
        assert [p.error for p in done] == [None]
    finally:
        consumer.close()


def committed(bootstrap: str, topic: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [partition] = consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
        assert partition.error is None
        return int(partition.offset)
    finally:
        consumer.close()


def offset_for_time(bootstrap: str, topic: str, timestamp: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"times-{topic}"})
    try:
        [found] = consumer.offsets_for_times([TopicPartition(topic, 0, timestamp)], TIMEOUT)
        assert found.error is None
        return int(found.offset)
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"marks-{topic}"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), TIMEOUT)
        return int(low), int(high)
    finally:
        consumer.close()


def topic_replicas(bootstrap: str, topic: str) -> dict[int, list[int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.list_topics(topic, timeout=TIMEOUT).topics[topic]
    assert described.error is None, described.error
    return {p.id: list(p.replicas) for p in described.partitions.values()}


def create_topic(
    bootstrap: str, topic: str, partitions: int, replication: int, configs: Mapping[str, str]
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, replication, config=dict(configs))
    admin.create_topics([new])[topic].result(timeout=TIMEOUT)


def describe_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    return {name: entry.value for name, entry in entries.items()}


def alter_configs(bootstrap: str, topic: str, configs: Mapping[str, str]) -> None:
    """IncrementalAlterConfigs (confluent-kafka's alter_configs is the deprecated,
    replacing AlterConfigs; applications use the incremental one)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=TIMEOUT)


def delete_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(timeout=TIMEOUT)


def topics(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=TIMEOUT).topics)


def delete_records(bootstrap: str, topic: str, before: int) -> int:
    """Delete partition 0's records below `before`; the new log start offset."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partition = TopicPartition(topic, 0, before)
    deleted = admin.delete_records([partition])[partition].result(timeout=TIMEOUT)
    return int(deleted.low_watermark)
