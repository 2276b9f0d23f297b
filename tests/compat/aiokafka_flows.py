"""The matrix's flows with aiokafka 0.14: AIOKafkaProducer, AIOKafkaConsumer and
AIOKafkaAdminClient, each flow one event loop (`asyncio.run`) so the tests call them as the
other clients' flows. Its snappy, lz4 and zstd codecs use cramjam (a dependency of ours)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.structs import OffsetAndMetadata

from tests.compat.common import TIMEOUT, Message

TIMEOUT_MS = int(TIMEOUT * 1000)
T = TypeVar("T")


def _run(flow: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(flow(), TIMEOUT)

    return asyncio.run(bounded())


def _produce(topic: str, written: list[Message], **settings: Any) -> None:
    async def flow() -> None:
        producer = AIOKafkaProducer(linger_ms=5, **settings)
        await producer.start()
        try:
            sent = [
                await producer.send(
                    topic, value=m.value, key=m.key, headers=list(m.headers), partition=0
                )
                for m in written
            ]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()

    _run(flow)


def produce(bootstrap: str, topic: str, written: list[Message], acks: str, codec: str) -> None:
    _produce(
        topic,
        written,
        bootstrap_servers=bootstrap,
        acks=acks if acks == "all" else int(acks),
        compression_type=None if codec == "none" else codec,
    )


def produce_idempotent(bootstrap: str, topic: str, written: list[Message]) -> None:
    _produce(topic, written, bootstrap_servers=bootstrap, enable_idempotence=True)


def _message(record: Any) -> Message:
    return Message(
        record.key,
        record.value or b"",
        tuple((k, v or b"") for k, v in record.headers),
        record.timestamp,
        record.offset,
    )


async def _poll(consumer: AIOKafkaConsumer, count: int) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count:
        assert time.monotonic() < deadline, f"read {len(got)} of {count}"
        batches = await consumer.getmany(timeout_ms=200, max_records=count - len(got))
        for records in batches.values():
            got.extend(_message(r) for r in records)
    return got


def _consumer(bootstrap: str, **settings: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        request_timeout_ms=TIMEOUT_MS,
        **settings,
    )


def _assigned(bootstrap: str, topic: str, offset: int | None, count: int) -> list[Message]:
    async def flow() -> list[Message]:
        consumer = _consumer(bootstrap)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            if offset is None:
                await consumer.seek_to_beginning(partition)
            else:
                consumer.seek(partition, offset)
            return await _poll(consumer, count)
        finally:
            await consumer.stop()

    return _run(flow)


def consume_assigned(bootstrap: str, topic: str, count: int) -> list[Message]:
    return _assigned(bootstrap, topic, None, count)


def consume_from(bootstrap: str, topic: str, offset: int, count: int) -> list[Message]:
    return _assigned(bootstrap, topic, offset, count)


def consume_group(bootstrap: str, topic: str, group: str, count: int) -> list[Message]:
    async def flow() -> list[Message]:
        consumer = _consumer(bootstrap, group_id=group, auto_offset_reset="earliest")
        consumer.subscribe([topic])
        await consumer.start()
        try:
            got = await _poll(consumer, count)
            await consumer.commit()
            return got
        finally:
            await consumer.stop()

    return _run(flow)


def commit(bootstrap: str, topic: str, group: str, offset: int) -> None:
    async def flow() -> None:
        consumer = _consumer(bootstrap, group_id=group)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            await consumer.commit({partition: OffsetAndMetadata(offset, "")})
        finally:
            await consumer.stop()

    _run(flow)


def committed(bootstrap: str, topic: str, group: str) -> int:
    async def flow() -> int:
        consumer = _consumer(bootstrap, group_id=group)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            offset = await consumer.committed(partition)
            assert offset is not None
            return int(offset)
        finally:
            await consumer.stop()

    return _run(flow)


def offset_for_time(bootstrap: str, topic: str, timestamp: int) -> int:
    async def flow() -> int:
        consumer = _consumer(bootstrap)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            found = await consumer.offsets_for_times({partition: timestamp})
            return -1 if found[partition] is None else int(found[partition].offset)
        finally:
            await consumer.stop()

    return _run(flow)


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    async def flow() -> tuple[int, int]:
        consumer = _consumer(bootstrap)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            low = (await consumer.beginning_offsets([partition]))[partition]
            high = (await consumer.end_offsets([partition]))[partition]
            return int(low), int(high)
        finally:
            await consumer.stop()

    return _run(flow)


def _admin_flow(bootstrap: str, action: Callable[[AIOKafkaAdminClient], Awaitable[T]]) -> T:
    async def flow() -> T:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
        await admin.start()
        try:
            return await action(admin)
        finally:
            await admin.close()

    return _run(flow)


def topic_replicas(bootstrap: str, topic: str) -> dict[int, list[int]]:
    async def action(admin: AIOKafkaAdminClient) -> dict[int, list[int]]:
        [described] = await admin.describe_topics([topic])
        assert described["error_code"] == 0, described
        return {p["partition"]: list(p["replicas"]) for p in described["partitions"]}

    return _admin_flow(bootstrap, action)


def topics(bootstrap: str) -> set[str]:
    async def action(admin: AIOKafkaAdminClient) -> set[str]:
        return set(await admin.list_topics())

    return _admin_flow(bootstrap, action)


def create_topic(
    bootstrap: str, topic: str, partitions: int, replication: int, configs: Mapping[str, str]
) -> None:
    async def action(admin: AIOKafkaAdminClient) -> None:
        response = await admin.create_topics(
            [NewTopic(topic, partitions, replication, topic_configs=dict(configs))],
            timeout_ms=TIMEOUT_MS,
        )
        assert [error for _, error, *_ in response.topic_errors] == [0], response

    _admin_flow(bootstrap, action)


def describe_configs(bootstrap: str, topic: str) -> dict[str, str]:
    async def action(admin: AIOKafkaAdminClient) -> dict[str, str]:
        [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        [(error, _, _, _, entries)] = response.resources
        assert error == 0, response
        return {entry[0]: entry[1] for entry in entries}

    return _admin_flow(bootstrap, action)


def alter_configs(bootstrap: str, topic: str, configs: Mapping[str, str]) -> None:
    async def action(admin: AIOKafkaAdminClient) -> None:
        [response] = await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, dict(configs))]
        )
        assert [r[0] for r in response.resources] == [0], response

    _admin_flow(bootstrap, action)


def delete_topic(bootstrap: str, topic: str) -> None:
    async def action(admin: AIOKafkaAdminClient) -> None:
        response = await admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)
        assert [error for _, error, *_ in response.topic_error_codes] == [0], response

    _admin_flow(bootstrap, action)


def delete_records(bootstrap: str, topic: str, before: int) -> int:
    async def action(admin: AIOKafkaAdminClient) -> int:
        partition = TopicPartition(topic, 0)
        result = await admin.delete_records(
            {partition: RecordsToDelete(before)}, timeout_ms=TIMEOUT_MS
        )
        return int(result[partition])

    return _admin_flow(bootstrap, action)
