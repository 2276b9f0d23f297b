"""Brokers in one process, for replication tests that need exact interleavings.

Each `Broker` is a real ReplicaManager over a real LogManager in its own directory, brought in
line with metadata images the test writes (as replaying the metadata log would). Replication
is driven by hand, one fetch round at a time: `replicate` sends the Fetch a follower's
ReplicaFetcher would send to the leader's real `fetch`, and hands the answer, as it reads off
the wire, to the real `ReplicaFetcher.apply_answer`. No sockets, so a test decides exactly
which fetch happens when.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Generator, Mapping
from pathlib import Path
from types import MappingProxyType
from uuid import UUID

from kio.schema.errors import ErrorCode
from kio.schema.fetch import v12 as fetch_v12
from kio.static.primitive import i32, i64

from broker.isr_changes import IsrChangeSender
from broker.partition import Partition
from broker.replica_fetcher import FetchAnswer, ReplicaFetcher
from broker.replica_manager import FetchPartition, FetchResult, ReplicaManager
from controller.image import (
    BrokerRegistration,
    ConfigResource,
    MetadataImage,
    MetadataReplayer,
    TopicImage,
)
from controller.partition_state import PartitionState
from controller.records import ConfigResourceType
from controller.topic_config import KAFKA_DEFAULTS, TopicConfig
from net.protocol import NO_THROTTLE, make_entity
from net.records import Record, decode_batch, encode_batch
from storage.log import Log, LogConfig
from storage.log_manager import LogManager

TOPIC = "orders"
TOPIC_ID = UUID(int=1)


def batch(value: bytes) -> bytes:
    """A one-record batch holding `value`."""
    return encode_batch([Record(value)], now_ms=1_000)


def image(
    partitions: Mapping[int, PartitionState],
    *,
    min_isr: int = 1,
    end_offset: int = 1,
    configs: Mapping[str, str] = MappingProxyType({}),
) -> MetadataImage:
    """Topic `orders` with these partition states, `min.insync.replicas` and other topic
    configs."""
    configs = {"min.insync.replicas": str(min_isr), **configs}
    return MetadataImage(
        end_offset=end_offset,
        topics=MappingProxyType({TOPIC_ID: TopicImage(TOPIC, TOPIC_ID, dict(partitions))}),
        topic_ids=MappingProxyType({TOPIC: TOPIC_ID}),
        configs=MappingProxyType({ConfigResource(ConfigResourceType.TOPIC, TOPIC): configs}),
    )


def with_brokers(
    metadata: MetadataImage, racks: Mapping[int, str | None], fenced: frozenset[int] = frozenset()
) -> MetadataImage:
    """`metadata` with brokers registered in `racks` (broker id -> rack), those of `fenced`
    fenced; without listeners, so no fetcher starts (replication is driven by hand)."""
    registered = {
        broker_id: BrokerRegistration(
            broker_id, UUID(int=broker_id), 1, (), rack, broker_id in fenced, False
        )
        for broker_id, rack in racks.items()
    }
    return dataclasses.replace(metadata, brokers=MappingProxyType(registered))


class Broker:
    """Broker `broker_id`'s replicas, in `root / b<id>`."""

    def __init__(
        self,
        broker_id: int,
        root: Path,
        *,
        isr_changes: IsrChangeSender | None = None,
        eligible_leader_replicas_enable: bool = True,
        topic_defaults: TopicConfig = KAFKA_DEFAULTS,
        rack_aware_replica_selector: bool = False,
    ) -> None:
        self.broker_id = broker_id
        self.logs = LogManager.open([root / f"b{broker_id}"], LogConfig())
        self.replicas = ReplicaManager(
            broker_id,
            self.logs,
            MetadataReplayer(),
            LogConfig(),
            topic_defaults,
            isr_changes=isr_changes,
            eligible_leader_replicas_enable=eligible_leader_replicas_enable,
            rack_aware_replica_selector=rack_aware_replica_selector,
        )
        # The images name no brokers, so `follow` starts no fetcher of its own: this one only
        # applies the answers `replicate` gets.
        self.fetcher = ReplicaFetcher(broker_id, -1, ("127.0.0.1", 1))

    def apply(self, metadata: MetadataImage) -> None:
        self.replicas.apply(metadata)

    def partition(self, partition_id: int = 0) -> Partition:
        return self.replicas.partitions[(TOPIC, partition_id)]

    def close(self) -> None:
        self.logs.close()


def as_received(result: FetchResult, partition_index: int = 0) -> FetchAnswer:
    """A partition's FetchResult as the follower decodes it: no diverging epoch is the
    schema's default (-1, -1)."""
    epoch, end_offset = result.diverging_epoch or (-1, -1)
    return make_entity(
        FetchAnswer,
        partition_index=partition_index,
        error_code=result.error,
        high_watermark=result.high_watermark,
        log_start_offset=result.log_start_offset,
        records=result.records,
        aborted_transactions=None,
        diverging_epoch=fetch_v12.response.EpochEndOffset(
            epoch=i32(epoch), end_offset=i64(end_offset)
        ),
    )


def response_of(results: list[FetchResult]) -> fetch_v12.FetchResponse:
    """A Fetch response for partitions 0, 1, ... of the topic, as the follower decodes it."""
    return make_entity(
        fetch_v12.FetchResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        responses=(
            make_entity(
                fetch_v12.response.FetchableTopicResponse,
                topic=TOPIC,
                partitions=tuple(
                    as_received(result, index) for index, result in enumerate(results)
                ),
            ),
        ),
    )


async def replicate(
    leader: Broker, follower: Broker, partition_id: int = 0, *, max_wait_ms: int = 0
) -> tuple[FetchResult, bool]:
    """One fetch round of `follower` from `leader`: the leader's answer, and whether the
    follower's fetcher went on without backing off."""
    replica = follower.partition(partition_id)
    latest_epoch = replica.log.latest_epoch
    request = FetchPartition(
        TOPIC,
        partition_id,
        replica.log.log_end_offset,
        1 << 20,
        current_leader_epoch=replica.leader_epoch,
        last_fetched_epoch=-1 if latest_epoch is None else latest_epoch,
        log_start_offset=replica.log.log_start_offset,
    )
    (result,) = await leader.replicas.fetch(follower.broker_id, max_wait_ms, 1, 10 << 20, [request])
    return result, follower.fetcher.apply_answer(replica, as_received(result))


async def settle() -> None:
    """Let tasks that are ready run (produce waiters, ISR change senders)."""
    for _ in range(5):
        await asyncio.sleep(0)


def values(replica_log: Log) -> list[bytes]:
    """Every record value in the log, in offset order."""
    found: list[bytes] = []
    for piece, _ in replica_log.batches(replica_log.log_start_offset):
        _, records = decode_batch(piece.read())
        found.extend(record.value or b"" for record in records)
    return found


def applied_at_once(steps: Generator[None, None, bool]) -> bool:
    """Run every step of `ReplicaFetcher.apply_response` at once; what it returned."""
    while True:
        try:
            next(steps)
        except StopIteration as applied:
            return bool(applied.value)
