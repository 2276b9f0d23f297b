"""Topics, their partitions and partition leaders, as a client learns them from Metadata."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from net.client import ClusterClient

# Partition errors of Metadata that still name a working leader.
_LED = (ErrorCode.none, ErrorCode.replica_not_available)


@dataclass(frozen=True, slots=True)
class PartitionLeader:
    """Who leads a partition (-1: nobody right now) and in which leader epoch."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """What one Metadata response said about topics.

    `topics` maps each existing topic to its partitions; `missing` holds the topics asked for
    that do not exist. Internal topics (`__consumer_offsets`) are left out when all topics are
    listed.
    """

    topics: Mapping[str, Mapping[int, PartitionLeader]] = field(default_factory=dict)
    missing: frozenset[str] = frozenset()

    def leader(self, topic: str, partition: int) -> PartitionLeader | None:
        return self.topics.get(topic, {}).get(partition)


async def fetch_topic_metadata(
    cluster: ClusterClient, topics: Sequence[str] | None
) -> TopicMetadata:
    """Metadata for `topics` (None: every topic that is not internal) through any node."""
    response: Any = await cluster.refresh_metadata(topics)
    found: dict[str, dict[int, PartitionLeader]] = {}
    missing = set()
    for topic in response.topics:
        error = ErrorCode(topic.error_code)
        if error is ErrorCode.unknown_topic_or_partition:
            missing.add(topic.name)
            continue
        if topics is None and topic.is_internal:
            continue
        found[topic.name] = {
            partition.partition_index: PartitionLeader(
                partition.leader_id if partition.error_code in _LED else -1,
                getattr(partition, "leader_epoch", -1),
            )
            for partition in topic.partitions
        }
    return TopicMetadata(found, frozenset(missing))
