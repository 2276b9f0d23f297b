"""The replication throttle on the brokers: which replicas it bounds, on the leader's side
(what a fetch serves) and the follower's (what a fetcher asks for), its rates from the node's
settings or the metadata log, and the leader's bytes-behind view of its replicas."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest
from kio.schema.errors import ErrorCode

from broker.replica_fetcher import ReplicaFetcher
from broker.replica_manager import FetchPartition
from broker.replication_quota import UNTHROTTLED, ReplicationQuota
from controller.image import ConfigResource, MetadataImage
from controller.partition_state import PartitionState
from controller.records import ConfigResourceType
from tests.broker.replicas import (
    TOPIC,
    Broker,
    applied_at_once,
    batch,
    image,
    replicate,
    response_of,
)

LEADER, FOLLOWER = 1, 2
# Broker 2 being added by a reassignment: not in the ISR yet.
ADDING = PartitionState(
    replicas=(LEADER, FOLLOWER), isr=(LEADER,), leader=LEADER, adding_replicas=(FOLLOWER,)
)
IN_SYNC = PartitionState(replicas=(LEADER, FOLLOWER), isr=(LEADER, FOLLOWER), leader=LEADER)
OUT_OF_SYNC = PartitionState(replicas=(LEADER, FOLLOWER), isr=(LEADER,), leader=LEADER)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Broker, Broker]]:
    made = (Broker(LEADER, tmp_path), Broker(FOLLOWER, tmp_path))
    yield made
    for broker in made:
        broker.close()


def now_ms() -> int:
    return int(asyncio.get_running_loop().time() * 1000)


def exhaust(quota: ReplicationQuota) -> None:
    """Set a bound and go over it."""
    quota.bytes_per_second = 1
    quota.record(1_000_000, now_ms())


async def with_data(pair: tuple[Broker, Broker], state: PartitionState, **configs: str) -> None:
    for broker in pair:
        broker.apply(image({0: state}, configs=configs))
    (result,) = await pair[0].replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"x" * 1000))])
    assert result.base_offset == 0


async def test_a_replica_being_added_is_held_by_the_exceeded_leader_quota(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    await with_data(pair, ADDING)
    assert leader.partition().leader_throttles(FOLLOWER)
    exhaust(leader.replicas.quotas.leader)
    result, _ = await replicate(leader, follower)
    assert result.records is None and result.high_watermark == 1
    assert follower.partition().log.log_end_offset == 0
    # Within the quota it is served, and what it is served counts (the rate as of one
    # moment, before and after).
    quota = leader.replicas.quotas.leader
    quota.bytes_per_second = UNTHROTTLED
    moment = now_ms()
    before = quota.rate(moment)
    result, _ = await replicate(leader, follower)
    assert result.records and follower.partition().log.log_end_offset == 1
    assert quota.rate(moment) > before


async def test_a_held_replica_still_learns_its_offset_is_out_of_range(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    await with_data(pair, ADDING)
    leader.partition().log.delete_records(1)
    exhaust(leader.replicas.quotas.leader)
    result, _ = await replicate(leader, follower)
    # As Kafka reads before it leaves a throttled partition's records out: the follower
    # restarts at the leader's log start instead of waiting for the quota.
    assert result.error is ErrorCode.offset_out_of_range
    assert follower.partition().log.log_start_offset == 1


async def test_an_in_sync_follower_is_never_throttled(pair: tuple[Broker, Broker]) -> None:
    leader, follower = pair
    await with_data(pair, IN_SYNC, **{"leader.replication.throttled.replicas": "*"})
    assert not leader.partition().leader_throttles(FOLLOWER)
    assert not follower.partition().follower_throttled
    exhaust(leader.replicas.quotas.leader)
    result, _ = await replicate(leader, follower)
    assert result.records


async def test_the_topic_lists_name_the_throttled_replicas_on_each_side(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    # Throttled on the leader when the list names partition 0 on the leader's broker, on the
    # follower when it names partition 0 on the follower's.
    await with_data(
        pair,
        OUT_OF_SYNC,
        **{
            "leader.replication.throttled.replicas": f"0:{LEADER}",
            "follower.replication.throttled.replicas": f"0:{FOLLOWER}",
        },
    )
    assert leader.partition().leader_throttles(FOLLOWER)
    assert follower.partition().follower_throttled
    for broker in pair:
        broker.apply(
            image(
                {0: OUT_OF_SYNC},
                end_offset=2,
                configs={
                    "leader.replication.throttled.replicas": f"0:{FOLLOWER}",
                    "follower.replication.throttled.replicas": f"1:{FOLLOWER}",
                },
            )
        )
    assert not leader.partition().leader_throttles(FOLLOWER)
    assert not follower.partition().follower_throttled
    # Nothing listed and no reassignment: nothing throttled.
    for broker in pair:
        broker.apply(image({0: OUT_OF_SYNC}, end_offset=3))
    assert not leader.partition().leader_throttles(FOLLOWER)
    assert not follower.partition().follower_throttled


async def test_the_fetcher_leaves_throttled_partitions_out_while_its_quota_is_exceeded(
    pair: tuple[Broker, Broker],
) -> None:
    _, follower = pair
    await with_data(pair, ADDING)
    quota = ReplicationQuota()
    fetcher = ReplicaFetcher(FOLLOWER, LEADER, ("127.0.0.1", 1), quota)
    fetcher.add(follower.partition())
    assert list(fetcher.due_partitions()) == [(TOPIC, 0)]
    exhaust(quota)
    assert fetcher.due_partitions() == {}
    follower.apply(image({0: IN_SYNC}, end_offset=2))
    assert list(fetcher.due_partitions()) == [(TOPIC, 0)]


async def test_what_a_throttled_replica_fetches_counts_against_the_follower_quota(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    await with_data(pair, ADDING)
    quota = ReplicationQuota(10**9)
    fetcher = ReplicaFetcher(FOLLOWER, LEADER, ("127.0.0.1", 1), quota)
    replica = follower.partition()
    fetcher.add(replica)
    fetched = dict(fetcher.partitions)
    request = FetchPartition(TOPIC, 0, 0, 1 << 20, current_leader_epoch=replica.leader_epoch)
    results = await leader.replicas.fetch(FOLLOWER, 0, 1, 1 << 20, [request])
    assert applied_at_once(fetcher.apply_response(fetched, {(TOPIC, 0): 0}, response_of(results)))
    assert replica.log.log_end_offset == 1
    size = len(results[0].records or b"")
    # Counted over the window's 10 s minimum (Kafka's 11 samples of 1 s), plus the moments
    # since.
    assert quota.rate(int(time.monotonic() * 1000)) == pytest.approx(size / 10, rel=0.05)


async def test_the_rates_come_from_the_metadata_log_over_the_nodes_settings(
    pair: tuple[Broker, Broker],
) -> None:
    leader, _ = pair
    quotas = leader.replicas.quotas
    assert (quotas.leader.bytes_per_second, quotas.follower.bytes_per_second) == (
        UNTHROTTLED,
        UNTHROTTLED,
    )

    def with_broker_configs(end_offset: int, **resources: dict[str, str]) -> MetadataImage:
        base = image({0: IN_SYNC}, end_offset=end_offset)
        configs = dict(base.configs)
        for name, values in resources.items():
            configs[ConfigResource(ConfigResourceType.BROKER, name.lstrip("b"))] = values
        return MetadataImage(
            end_offset=end_offset,
            topics=base.topics,
            topic_ids=base.topic_ids,
            configs=MappingProxyType(configs),
        )

    leader.apply(
        with_broker_configs(
            2,
            b={"leader.replication.throttled.rate": "300"},
            b1={"follower.replication.throttled.rate": "100"},
            b2={"leader.replication.throttled.rate": "7"},
        )
    )
    assert (quotas.leader.bytes_per_second, quotas.follower.bytes_per_second) == (300, 100)
    leader.apply(with_broker_configs(3, b1={"leader.replication.throttled.rate": "50"}))
    assert (quotas.leader.bytes_per_second, quotas.follower.bytes_per_second) == (
        50,
        UNTHROTTLED,
    )


async def test_the_leader_tells_how_many_bytes_each_replica_is_behind(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    await with_data(pair, OUT_OF_SYNC)
    partition = leader.partition()
    assert partition.bytes_behind() == {LEADER: 0, FOLLOWER: -1}
    assert follower.partition().bytes_behind() == {}
    size = partition.log.size_in_bytes
    # The follower's first fetch reports it has nothing: the whole log is ahead of it.
    request = FetchPartition(TOPIC, 0, 0, 0, current_leader_epoch=partition.leader_epoch)
    await leader.replicas.fetch(FOLLOWER, 0, 0, 0, [request])
    assert partition.bytes_behind() == {LEADER: 0, FOLLOWER: size}
    await replicate(leader, follower)
    await replicate(leader, follower)
    assert partition.bytes_behind() == {LEADER: 0, FOLLOWER: 0}
    # A second batch: the follower is behind by exactly it.
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"y" * 500))])
    await leader.replicas.fetch(FOLLOWER, 0, 0, 0, [FetchPartition(TOPIC, 0, 1, 0)])
    assert partition.bytes_behind()[FOLLOWER] == partition.log.size_in_bytes - size
