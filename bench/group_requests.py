"""Group requests sent as they are, without a client's retries: what the broker answers to
each, for tests and benchmarks."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from net.api_keys import ApiKey
from net.client import NodeConnection
from net.protocol import field_entity_type, make_entity, request_schema


async def raw_commit(
    connection: NodeConnection,
    group: str,
    generation: int,
    member_id: str,
    offsets: dict[tuple[str, int], int],
) -> list[ErrorCode]:
    """OffsetCommit v8 as it is sent, without a client's retries: each partition's error."""
    schema: Any = request_schema(ApiKey.OFFSET_COMMIT, 8)
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            make_entity(
                partition_type,
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="",
            )
        )
    response: Any = await connection.send(
        make_entity(
            schema,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=tuple(
                make_entity(topic_type, name=topic, partitions=tuple(partitions))
                for topic, partitions in by_topic.items()
            ),
        )
    )
    return [
        ErrorCode(partition.error_code)
        for topic in response.topics
        for partition in topic.partitions
    ]


async def raw_fetch(
    connection: NodeConnection, group: str, partitions: dict[str, list[int]]
) -> Any:
    """OffsetFetch v7 as it is sent, without a client's retries."""
    schema: Any = request_schema(ApiKey.OFFSET_FETCH, 7)
    topic_type = field_entity_type(schema, "topics")
    return await connection.send(
        make_entity(
            schema,
            group_id=group,
            topics=tuple(
                make_entity(topic_type, name=topic, partition_indexes=tuple(indexes))
                for topic, indexes in partitions.items()
            ),
            require_stable=False,
        ),
        timeout=10.0,
    )
