"""Offset planning: pure functions from offsets and limits to offset ranges, no I/O.

A source offset is `{topic: {partition: next offset}}`. Spark stores it as JSON and compares
it as text, so every offset this package hands to Spark is built by `canonical`: topics and
partitions in sorted key order (partition keys are strings, as JSON needs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


PartitionOffsets = dict[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [start, end) of one partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class DataLoss(NamedTuple):
    """Offsets a query was due to read that no longer exist, and why."""

    topic_partition: TopicPartition
    message: str


def canonical(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """`offsets` as the source's JSON-ready offset, keys sorted at both levels."""
    nested: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets, key=lambda tp: (tp.topic, str(tp.partition))):
        nested.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return nested


def from_offset_json(value: Mapping[str, Any]) -> PartitionOffsets:
    """The inverse of `canonical`, for offsets Spark hands back (from a checkpoint, too)."""
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


def ranges_between(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
) -> list[OffsetRange]:
    """One range per partition of `end` that has offsets to read, in topic-partition order.

    `start` must hold every partition of `end`; partitions only in `start` are not read.
    """
    ranges = []
    for tp in sorted(end):
        begin = start[tp]
        if end[tp] > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, end[tp]))
    return ranges


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """`ranges` split so there are at least `min_partitions` of them (if there are that many
    offsets).

    As Spark's Kafka source, each range gets a share of `min_partitions` proportional to its
    size, here rounded up (Spark rounds to nearest, which can give fewer pieces than asked);
    the pieces of one range are as equal as can be. Empty ranges are dropped. Deterministic
    for the same input.
    """
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    pieces: list[OffsetRange] = []
    for offset_range in ranges:
        parts = min(offset_range.size, -(-offset_range.size * min_partitions // total))
        for index in range(parts):
            begin = offset_range.start + offset_range.size * index // parts
            finish = offset_range.start + offset_range.size * (index + 1) // parts
            if finish > begin:
                pieces.append(
                    OffsetRange(offset_range.topic, offset_range.partition, begin, finish)
                )
    return pieces


def rate_limited(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_offsets: int
) -> PartitionOffsets:
    """The end offsets of a micro-batch that reads at most `max_offsets` offsets in all.

    Each partition gets a share proportional to what it has available (largest remainders
    first, ties broken by topic-partition), so the total never exceeds `max_offsets`.
    Partitions of `latest` missing from `start` have nothing to limit and keep their offset.
    """
    available = {tp: max(0, latest[tp] - start[tp]) for tp in latest if tp in start}
    total = sum(available.values())
    if total <= max_offsets:
        return dict(latest)
    shares = {tp: max_offsets * size / total for tp, size in available.items()}
    granted = {tp: math.floor(share) for tp, share in shares.items()}
    leftover = max_offsets - sum(granted.values())
    by_remainder = sorted(shares, key=lambda tp: (granted[tp] - shares[tp], tp))
    for tp in by_remainder[:leftover]:
        granted[tp] += 1
    end = dict(latest)
    for tp, grant in granted.items():
        end[tp] = start[tp] + min(grant, available[tp])
    return end


def offsets_between(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> int:
    """How many offsets a batch from `start` to `end` covers (partitions of `end` only)."""
    return sum(max(0, offset - start.get(tp, offset)) for tp, offset in end.items())


def reconcile(
    start: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
) -> tuple[PartitionOffsets, list[DataLoss]]:
    """Where to resume each partition, given `start` and the partitions that exist now with
    their earliest and latest offsets; and the data lost on the way.

    A partition of `start` no longer in `earliest` (its topic was deleted) is dropped; one
    whose log start moved past its offset resumes at the log start; one whose offset is past
    its latest (the topic was deleted and made again) resumes at its earliest. Each is a
    DataLoss. Partitions only in `earliest` (new ones) start at their earliest offset.
    """
    resumed: PartitionOffsets = {}
    losses: list[DataLoss] = []
    for tp in sorted(start):
        offset = start[tp]
        if tp not in earliest:
            losses.append(DataLoss(tp, f"partition {tp} is gone (its topic was deleted?)"))
            continue
        if offset < earliest[tp]:
            losses.append(
                DataLoss(
                    tp,
                    f"offsets {offset}..{earliest[tp] - 1} of partition {tp} were deleted "
                    f"before they were read (the log now starts at {earliest[tp]})",
                )
            )
            offset = earliest[tp]
        elif offset > latest.get(tp, offset):
            losses.append(
                DataLoss(
                    tp,
                    f"partition {tp} ends at {latest[tp]}, before offset {offset} that was "
                    f"already read (was its topic deleted and made again?)",
                )
            )
            offset = earliest[tp]
        resumed[tp] = offset
    for tp in sorted(earliest):
        if tp not in start:
            resumed[tp] = earliest[tp]
    return resumed, losses
