"""KIP-392 on the replica manager: which replica the leader sends a consumer to (Kafka's
RackAwareReplicaSelector), and what a follower serves a consumer (its committed records)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.replica_manager import CONSUMER_REPLICA_ID, FetchPartition, FetchResult
from controller.image import MetadataImage
from controller.partition_state import PartitionState
from net.records import decode_batches
from tests.broker.replicas import TOPIC, Broker, batch, image, replicate, with_brokers

MakeBrokers = Callable[..., list[Broker]]
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[MakeBrokers]:
    made: list[Broker] = []

    def make(*broker_ids: int, **options: Any) -> list[Broker]:
        new = [Broker(broker_id, tmp_path, **options) for broker_id in broker_ids]
        made.extend(new)
        return new

    yield make
    for broker in made:
        broker.close()


def racked_image(state: PartitionState, *, fenced: frozenset[int] = frozenset()) -> MetadataImage:
    """The topic with `state`, and brokers 1-3 registered in their racks."""
    return with_brokers(image({0: state}), RACKS, fenced)


async def consumer_fetch(
    broker: Broker, offset: int, client_rack: str | None, *, leader_epoch: int = -1
) -> FetchResult:
    request = FetchPartition(TOPIC, 0, offset, 1 << 20, current_leader_epoch=leader_epoch)
    (result,) = await broker.replicas.fetch(
        CONSUMER_REPLICA_ID, 0, 1, 10 << 20, [request], client_rack
    )
    return result


def fetched_values(result: FetchResult) -> list[bytes]:
    return [
        record.value or b""
        for _, records in decode_batches(result.records or b"")
        for record in records
    ]


async def three_in_sync(made: list[Broker]) -> PartitionState:
    """Broker 1 leads, 2 and 3 follow, all in the ISR, with two records replicated."""
    state = PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
    for broker in made:
        broker.apply(racked_image(state))
    leader, *followers = made
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a")), (TOPIC, 0, batch(b"b"))])
    for _ in range(2):
        for follower in followers:
            await replicate(leader, follower)
    return state


async def test_the_leader_sends_a_consumer_to_a_follower_of_its_rack(
    brokers: MakeBrokers,
) -> None:
    leader, second, third = brokers(1, 2, 3, rack_aware_replica_selector=True)
    await three_in_sync([leader, second, third])
    sent = await consumer_fetch(leader, 0, "rack-c")
    assert (sent.error, sent.preferred_read_replica, sent.records) == (ErrorCode.none, 3, None)
    assert sent.high_watermark == 2
    # The leader's own rack, no rack, or a rack without a replica: read from the leader.
    for rack in ("rack-a", "", "rack-z"):
        read = await consumer_fetch(leader, 0, rack)
        assert read.preferred_read_replica == -1
        assert fetched_values(read) == [b"a", b"b"]
    # Fetch before v11 (no rack field): the leader reads.
    assert (await consumer_fetch(leader, 0, None)).preferred_read_replica == -1
    assert leader.partition().consumer_fetches_redirected == 1


async def test_only_an_alive_in_sync_follower_holding_the_offset_is_chosen(
    brokers: MakeBrokers,
) -> None:
    leader, second, third = brokers(1, 2, 3, rack_aware_replica_selector=True)
    state = await three_in_sync([leader, second, third])
    # Past what follower 3 has fetched: the leader serves.
    assert (await consumer_fetch(leader, 5, "rack-c")).preferred_read_replica == -1
    # Out of the ISR, or fenced: not chosen.
    shrunk = dataclasses.replace(state, isr=(1, 2), partition_epoch=1)
    leader.apply(racked_image(shrunk))
    assert (await consumer_fetch(leader, 0, "rack-c")).preferred_read_replica == -1
    leader.apply(racked_image(state, fenced=frozenset({3})))
    assert (await consumer_fetch(leader, 0, "rack-c")).preferred_read_replica == -1


async def test_without_the_selector_the_leader_serves_every_consumer(
    brokers: MakeBrokers,
) -> None:
    made = brokers(1, 2, 3)
    await three_in_sync(made)
    result = await consumer_fetch(made[0], 0, "rack-c")
    assert result.preferred_read_replica == -1
    assert fetched_values(result) == [b"a", b"b"]


async def test_a_follower_serves_a_consumer_up_to_its_high_watermark(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2)
    state = PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)
    for broker in (leader, follower):
        broker.apply(racked_image(state))
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a"))])
    await replicate(leader, follower)
    # The follower has "a" but its high watermark (the leader's at its fetch) is still 0.
    assert follower.partition().log.log_end_offset == 1
    assert follower.partition().log.high_watermark == 0
    empty = await consumer_fetch(follower, 0, "")
    assert (empty.error, fetched_values(empty)) == (ErrorCode.none, [])
    await replicate(leader, follower)
    read = await consumer_fetch(follower, 0, "rack-b", leader_epoch=0)
    assert (read.error, read.high_watermark, fetched_values(read)) == (ErrorCode.none, 1, [b"a"])
    assert follower.partition().consumer_fetches_as_follower == 2
    # As Kafka answers: past the follower's log end, a fenced or unknown epoch, and a
    # consumer before Fetch v11, which only the leader serves.
    assert (await consumer_fetch(follower, 5, "")).error is ErrorCode.offset_out_of_range
    assert (await consumer_fetch(follower, 0, "", leader_epoch=1)).error is (
        ErrorCode.unknown_leader_epoch
    )
    moved = dataclasses.replace(state, leader_epoch=1, partition_epoch=1)
    for broker in (leader, follower):
        broker.apply(racked_image(moved))
    assert (await consumer_fetch(follower, 0, "", leader_epoch=0)).error is (
        ErrorCode.fenced_leader_epoch
    )
    assert (await consumer_fetch(follower, 0, None)).error is ErrorCode.not_leader_or_follower
