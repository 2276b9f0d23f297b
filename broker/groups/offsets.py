"""Committed offsets of the groups one `__consumer_offsets` partition coordinates.

Pure: records in, answers and records out; time is an input. The coordinator writes every
commit to the partition (acks=all) and applies it here once written; loading a partition
replays its records in order, tombstones included, so the state after a load is the state the
previous coordinator had.

Retention follows Kafka (KIP-211): the offsets of a group that has members never expire; once
the group is empty (or was never more than a name offsets were committed under), each offset
expires `offsets.retention.minutes` after the later of its commit and the moment the group
became empty. An expired offset is removed with a tombstone, which compaction later drops.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.groups.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsKey,
    OffsetsValue,
)

TopicPartitionKey = tuple[str, int]


@dataclass(slots=True)
class _GroupOffsets:
    offsets: dict[TopicPartitionKey, OffsetCommitValue] = field(default_factory=dict)
    has_members: bool = False
    # When the group last became empty (its metadata's state timestamp); -1 if unknown.
    empty_since_ms: int = -1


class OffsetStore:
    """The committed offsets of every group of one `__consumer_offsets` partition."""

    def __init__(self) -> None:
        self._groups: dict[str, _GroupOffsets] = {}

    def apply(self, key: OffsetsKey, value: OffsetsValue | None) -> None:
        """A record of the partition, written (or read back while loading), in log order."""
        if isinstance(key, OffsetCommitKey):
            if value is None:
                group = self._groups.get(key.group)
                if group is not None:
                    group.offsets.pop((key.topic, key.partition), None)
                    self._forget_if_unused(key.group)
                return
            assert isinstance(value, OffsetCommitValue)
            group = self._groups.setdefault(key.group, _GroupOffsets())
            group.offsets[(key.topic, key.partition)] = value
            return
        self._apply_group_metadata(key, value)

    def _apply_group_metadata(self, key: GroupMetadataKey, value: OffsetsValue | None) -> None:
        if value is None:
            group = self._groups.get(key.group)
            if group is not None:
                group.has_members = False
                self._forget_if_unused(key.group)
            return
        assert isinstance(value, GroupMetadataValue)
        group = self._groups.setdefault(key.group, _GroupOffsets())
        group.has_members = bool(value.members)
        group.empty_since_ms = -1 if value.members else value.current_state_timestamp_ms

    def _forget_if_unused(self, group_id: str) -> None:
        group = self._groups[group_id]
        if not group.offsets and not group.has_members:
            del self._groups[group_id]

    def committed(
        self, group_id: str, partitions: Iterable[TopicPartitionKey] | None = None
    ) -> dict[TopicPartitionKey, OffsetCommitValue]:
        """The group's committed offsets: of `partitions` (those without one are left out), or
        all of them (OffsetFetch's "all partitions" form) when None."""
        group = self._groups.get(group_id)
        if group is None:
            return {}
        if partitions is None:
            return dict(group.offsets)
        return {tp: group.offsets[tp] for tp in partitions if tp in group.offsets}

    def groups(self) -> list[str]:
        """Every group with committed offsets, sorted."""
        return sorted(group for group, state in self._groups.items() if state.offsets)

    def deletions(self, group_id: str) -> list[OffsetCommitKey]:
        """The keys to tombstone to delete every offset of the group (DeleteGroups)."""
        group = self._groups.get(group_id)
        if group is None:
            return []
        return [OffsetCommitKey(group_id, topic, p) for topic, p in sorted(group.offsets)]

    def expired(self, now_ms: int, retention_ms: int) -> list[OffsetCommitKey]:
        """The offsets past retention, to tombstone: of groups without members only."""
        keys = []
        for group_id, group in sorted(self._groups.items()):
            if group.has_members:
                continue
            for (topic, partition), value in sorted(group.offsets.items()):
                # Version 1 commits carried their own expiry; honour it as Kafka does.
                if value.expire_timestamp_ms >= 0:
                    expires_at = value.expire_timestamp_ms
                else:
                    expires_at = max(value.commit_timestamp_ms, group.empty_since_ms) + retention_ms
                if now_ms >= expires_at:
                    keys.append(OffsetCommitKey(group_id, topic, partition))
        return keys
