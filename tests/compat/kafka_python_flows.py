"""The matrix's flows with kafka-python 3.0.12: KafkaProducer, KafkaConsumer, KafkaAdminClient.
Its snappy, lz4 and zstd codecs need python-snappy, lz4 and zstandard (the test extra)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.structs import OffsetAndMetadata

from tests.compat.common import TIMEOUT, Message

TIMEOUT_MS = int(TIMEOUT * 1000)


def _produce(topic: str, written: list[Message], **settings: Any) -> None:
    producer = KafkaProducer(linger_ms=5, **settings)
    try:
        futures = [
            producer.send(topic, value=m.value, key=m.key, headers=list(m.headers), partition=0)
            for m in written
        ]
        producer.flush(TIMEOUT)
        for future in futures:
            future.get(TIMEOUT)
    finally:
        producer.close(TIMEOUT)


def produce(bootstrap: str, topic: str, written: list[Message], acks: str, codec: str) -> None:
    _produce(
        topic,
        written,
        bootstrap_servers=bootstrap,
        acks=acks if acks == "all" else int(acks),
        compression_type=None if codec == "none" else codec,
        # Its default (true) needs acks=all.
        enable_idempotence=False,
    )


def produce_idempotent(bootstrap: str, topic: str, written: list[Message]) -> None:
    _produce(topic, written, bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)


def _message(record: Any) -> Message:
    return Message(
        record.key,
        record.value or b"",
        tuple((k, v or b"") for k, v in record.headers),
        record.timestamp,
        record.offset,
    )


def _consumer(bootstrap: str, **settings: Any) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        request_timeout_ms=TIMEOUT_MS,
        **settings,
    )


def _poll(consumer: KafkaConsumer, count: int) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count:
        assert time.monotonic() < deadline, f"read {len(got)} of {count}"
        for records in consumer.poll(timeout_ms=200, max_records=count - len(got)).values():
            got.extend(_message(r) for r in records)
    return got


def consume_assigned(bootstrap: str, topic: str, count: int) -> list[Message]:
    consumer = _consumer(bootstrap)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        return _poll(consumer, count)
    finally:
        consumer.close()


def consume_from(bootstrap: str, topic: str, offset: int, count: int) -> list[Message]:
    consumer = _consumer(bootstrap)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, offset)
        return _poll(consumer, count)
    finally:
        consumer.close()


def consume_group(bootstrap: str, topic: str, group: str, count: int) -> list[Message]:
    consumer = _consumer(bootstrap, group_id=group, auto_offset_reset="earliest")
    try:
        consumer.subscribe([topic])
        got = _poll(consumer, count)
        consumer.commit()
        return got
    finally:
        consumer.close()


def commit(bootstrap: str, topic: str, group: str, offset: int) -> None:
    consumer = _consumer(bootstrap, group_id=group)
    try:
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close()


def committed(bootstrap: str, topic: str, group: str) -> int:
    consumer = _consumer(bootstrap, group_id=group)
    try:
        offset = consumer.committed(TopicPartition(topic, 0), timeout_ms=TIMEOUT_MS)
        assert offset is not None
        return int(offset)
    finally:
        consumer.close()


def offset_for_time(bootstrap: str, topic: str, timestamp: int) -> int:
    consumer = _consumer(bootstrap)
    try:
        partition = TopicPartition(topic, 0)
        found = consumer.offsets_for_times({partition: timestamp}, timeout_ms=TIMEOUT_MS)
        return -1 if found[partition] is None else int(found[partition].offset)
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = _consumer(bootstrap)
    try:
        partition = TopicPartition(topic, 0)
        low = consumer.beginning_offsets([partition], timeout_ms=TIMEOUT_MS)[partition]
        high = consumer.end_offsets([partition], timeout_ms=TIMEOUT_MS)[partition]
        return int(low), int(high)
    finally:
        consumer.close()


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)


def topic_replicas(bootstrap: str, topic: str) -> dict[int, list[int]]:
    admin = _admin(bootstrap)
    try:
        [described] = admin.describe_topics([topic])
        assert described["error_code"] == 0, described
        return {p["partition_index"]: list(p["replica_nodes"]) for p in described["partitions"]}
    finally:
        admin.close()


def topics(bootstrap: str) -> set[str]:
    admin = _admin(bootstrap)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def create_topic(
    bootstrap: str, topic: str, partitions: int, replication: int, configs: Mapping[str, str]
) -> None:
    admin = _admin(bootstrap)
    try:
        admin.create_topics(
            [NewTopic(topic, partitions, replication, topic_configs=dict(configs))],
            timeout_ms=TIMEOUT_MS,
        )
    finally:
        admin.close()


def describe_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = _admin(bootstrap)
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
        )
        # {resource type: {resource name: {config name: {"value": ..., ...}}}}
        return {name: entry["value"] for name, entry in described["topic"][topic].items()}
    finally:
        admin.close()


def alter_configs(bootstrap: str, topic: str, configs: Mapping[str, str]) -> None:
    admin = _admin(bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, dict(configs))])
    finally:
        admin.close()


def delete_topic(bootstrap: str, topic: str) -> None:
    admin = _admin(bootstrap)
    try:
        admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)
    finally:
        admin.close()


def delete_records(bootstrap: str, topic: str, before: int) -> int:
    admin = _admin(bootstrap)
    try:
        partition = TopicPartition(topic, 0)
        result = admin.delete_records({partition: before}, timeout_ms=TIMEOUT_MS)
        return int(result[partition]["low_watermark"])
    finally:
        admin.close()
