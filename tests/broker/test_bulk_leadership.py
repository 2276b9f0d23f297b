"""Leaderships of many partitions applied in one metadata change give the same replicas, in
memory and on disk, as the same changes applied one partition at a time (that every new
leadership's epoch is on disk before the event loop runs anything else is checked in
test_metadata_slices)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType
from typing import Any
from uuid import UUID

import pytest

from broker.partition import Partition
from controller.partition_state import PartitionState
from storage.leader_epoch_cache import LeaderEpochCache
from storage.log_manager import TopicPartition
from tests.broker.replicas import TOPIC, TOPIC_ID, Broker, batch, image

PARTITIONS = 150


def _first_states() -> dict[int, PartitionState]:
    """Broker 1 leads the even partitions, follows broker 2 on the odd ones."""
    return {
        p: PartitionState(replicas=(1, 2), isr=(1, 2), leader=1 if p % 2 == 0 else 2)
        for p in range(PARTITIONS)
    }


def _second_states() -> dict[int, PartitionState]:
    """Leadership moves on every third partition, with a new leader epoch."""
    return {
        p: (
            PartitionState(
                replicas=(1, 2),
                isr=(1, 2),
                leader=2 if p % 2 == 0 else 1,
                leader_epoch=1,
                partition_epoch=1,
            )
            if p % 3 == 0
            else state
        )
        for p, state in _first_states().items()
    }


def _replica_view(
    broker: Broker,
) -> dict[int, tuple[bool, int, list[tuple[int, int]], UUID | None]]:
    """Per partition: leads, leader epoch, the epoch cache, the recorded topic id. The cache on
    disk is the one in memory, but for an epoch started on a log holding no batch, whose
    checkpoint waits for the first append."""
    view = {}
    for p in range(PARTITIONS):
        partition = broker.partition(p)
        on_disk = LeaderEpochCache.load(partition.log.directory)
        in_memory = partition.log.leader_epoch_cache
        entries = in_memory.entries
        if in_memory.unpersisted:
            assert partition.log.log_end_offset == partition.log.log_start_offset
        else:
            assert ([] if on_disk is None else on_disk.entries) == entries
        view[p] = (
            partition.is_leader,
            partition.leader_epoch,
            [(entry.epoch, entry.start_offset) for entry in entries],
            broker.logs.topic_id_of(TopicPartition(TOPIC, p)),
        )
    return view


async def test_leaderships_applied_in_bulk_equal_those_applied_one_by_one(
    tmp_path: Path,
) -> None:
    bulk = Broker(1, tmp_path / "bulk")
    single = Broker(1, tmp_path / "single")
    try:
        bulk.apply(image(_first_states(), end_offset=1))
        applied: dict[int, PartitionState] = {}
        offset = 1
        for p, state in _first_states().items():
            applied[p] = state
            single.apply(image(dict(applied), end_offset=offset))
            offset += 1
        # Some records in the led partitions, so the new epochs start past offset 0.
        for p in range(0, PARTITIONS, 2):
            bulk.partition(p).log.append(batch(b"a"), leader_epoch=0)
            single.partition(p).log.append(batch(b"a"), leader_epoch=0)
        bulk.apply(image(_second_states(), end_offset=offset))
        for p, state in _second_states().items():
            offset += 1
            applied[p] = state
            single.apply(image(dict(applied), end_offset=offset))
        assert _replica_view(bulk) == _replica_view(single)
        assert all(bulk.partition(p).topic_id == TOPIC_ID for p in range(PARTITIONS))
    finally:
        await bulk.replicas.stop()
        await single.replicas.stop()
        bulk.close()
        single.close()


async def test_a_change_of_one_partition_of_a_wide_topic_applies_that_partition_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = Broker(1, tmp_path)
    try:
        first = image(_first_states(), end_offset=1)
        broker.apply(first)
        applied: list[int] = []
        real_apply = Partition.apply

        def apply(partition: Partition, *args: Any, **kwargs: Any) -> None:
            applied.append(partition.partition_id)
            real_apply(partition, *args, **kwargs)

        monkeypatch.setattr(Partition, "apply", apply)
        moved = PartitionState(replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=1)
        topic = first.topics[TOPIC_ID]
        changed = dataclasses.replace(
            first,
            end_offset=2,
            topics=MappingProxyType(
                {
                    TOPIC_ID: dataclasses.replace(
                        topic, partitions=MappingProxyType({**topic.partitions, 7: moved})
                    )
                }
            ),
        )
        broker.apply(changed)
        assert applied == [7]
        assert broker.partition(7).is_leader and broker.partition(7).leader_epoch == 1
    finally:
        await broker.replicas.stop()
        broker.close()
