"""DeleteRecords on the leader's replica manager: the log start moves, the followers follow it
as they fetch, and the answer waits for them (Kafka's DelayedDeleteRecords)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from controller.partition_state import PartitionState
from tests.broker.replicas import TOPIC, Broker, batch, image, replicate, with_brokers

RACKS: dict[int, str | None] = {1: None, 2: None}


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Broker, Broker]]:
    leader, follower = Broker(1, tmp_path), Broker(2, tmp_path)
    state = PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)
    for broker in (leader, follower):
        broker.apply(with_brokers(image({0: state}), RACKS))
    yield leader, follower
    leader.close()
    follower.close()


async def written(leader: Broker, follower: Broker, count: int) -> None:
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"%d" % i)) for i in range(count)])
    for _ in range(2):
        await replicate(leader, follower)


async def test_the_answer_waits_until_the_followers_follow_the_new_log_start(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    await written(leader, follower, 4)
    deleting = asyncio.create_task(leader.replicas.delete_records(TOPIC, 0, 3, 5_000))
    await asyncio.sleep(0.05)
    assert not deleting.done()
    assert leader.partition().log.log_start_offset == 3
    # The follower learns the new log start from a fetch answer and reports it in its next.
    await replicate(leader, follower)
    assert follower.partition().log.log_start_offset == 3
    await replicate(leader, follower)
    assert await asyncio.wait_for(deleting, 5) == (ErrorCode.none, 3)


async def test_a_follower_that_does_not_follow_in_time_times_the_answer_out(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    await written(leader, follower, 2)
    assert await leader.replicas.delete_records(TOPIC, 0, 1, 50) == (
        ErrorCode.request_timed_out,
        0,
    )
    # A fenced follower's broker is not waited for.
    fenced = with_brokers(
        image({0: PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)}), RACKS, frozenset({2})
    )
    leader.apply(fenced)
    assert await leader.replicas.delete_records(TOPIC, 0, 2, 50) == (ErrorCode.none, 2)


async def test_refusals_are_kafkas(pair: tuple[Broker, Broker]) -> None:
    leader, follower = pair
    await written(leader, follower, 2)
    assert await leader.replicas.delete_records(TOPIC, 0, 3, 50) == (
        ErrorCode.offset_out_of_range,
        -1,
    )
    assert await follower.replicas.delete_records(TOPIC, 0, 1, 50) == (
        ErrorCode.not_leader_or_follower,
        -1,
    )
    assert await leader.replicas.delete_records("missing", 0, 1, 50) == (
        ErrorCode.unknown_topic_or_partition,
        -1,
    )
