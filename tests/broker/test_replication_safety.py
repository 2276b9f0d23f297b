"""Interleavings of leadership and ISR changes with produce and fetch that must not lose an
acknowledged write or let replicas disagree below the high watermark (reference:
hw-leo-leader-epoch.txt, async-storage-and-recovery.txt 5.2). Brokers run in this process
(`tests.broker.replicas`) so each interleaving happens exactly as written."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.alter_partition import v3 as alter_partition_v3
from kio.schema.errors import ErrorCode
from kio.static.primitive import Records, i32

from broker.isr_changes import IsrChangeSender
from broker.replica_fetcher import ReplicaFetcher
from broker.replica_manager import CONSUMER_REPLICA_ID, FetchPartition
from controller.client import ControllerClient, NoControllerError
from controller.image import MetadataImage
from controller.partition_state import PartitionState
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import make_entity
from storage.leader_epoch_cache import EpochEntry, LeaderEpochCache
from tests.broker.replicas import (
    TOPIC,
    Broker,
    applied_at_once,
    as_received,
    batch,
    image,
    replicate,
    response_of,
    settle,
    values,
    with_brokers,
)
from tests.net.fake_broker import fake_broker

MakeBrokers = Callable[..., list[Broker]]


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[MakeBrokers]:
    """Makes brokers with the given ids (and `Broker` options), closed after the test."""
    made: list[Broker] = []

    def make(*broker_ids: int, **options: Any) -> list[Broker]:
        new = [Broker(broker_id, tmp_path, **options) for broker_id in broker_ids]
        made.extend(new)
        return new

    yield make
    for broker in made:
        broker.close()


def lead_from_first(made: list[Broker], partitions: int = 1, **state: Any) -> PartitionState:
    """Every broker of `made` learns that the first leads partitions 0.. of the topic, all of
    them replicas and in the ISR (unless `state` says otherwise); the state they applied."""
    replicas = tuple(broker.broker_id for broker in made)
    led = PartitionState(**{"replicas": replicas, "isr": replicas, "leader": replicas[0], **state})
    for broker in made:
        broker.apply(image(dict.fromkeys(range(partitions), led)))
    return led


async def test_acks_all_to_two_partitions_fails_the_one_whose_leadership_moved_meanwhile(
    brokers: MakeBrokers,
) -> None:
    first, second = brokers(1, 2)
    led = lead_from_first([first, second], partitions=2)
    produce = asyncio.create_task(
        first.replicas.produce(-1, 30_000, [(TOPIC, 0, batch(b"p0")), (TOPIC, 1, batch(b"x"))])
    )
    await settle()
    # Partition 1 moves to broker 2, which never got "x" and writes "y" at the same offset;
    # broker 1 truncates "x" and copies "y": its high watermark passes the offset "x" had.
    moved = PartitionState(replicas=(1, 2), isr=(1, 2), leader=2, leader_epoch=1, partition_epoch=1)
    for broker in (first, second):
        broker.apply(image({0: led, 1: moved}, end_offset=2))
    await second.replicas.produce(1, 1_000, [(TOPIC, 1, batch(b"y"))])
    for _ in range(3):
        await replicate(second, first, 1)
    assert values(first.partition(1).log) == [b"y"]
    assert first.partition(1).log.high_watermark == 1
    for _ in range(2):
        await replicate(first, second, 0)
    p0, p1 = await asyncio.wait_for(produce, 5)
    assert p0.error is ErrorCode.none
    assert p1.error is ErrorCode.not_leader_or_follower


async def test_an_acks_all_write_whose_leadership_was_lost_and_regained_is_not_acked(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower])
    produce = asyncio.create_task(leader.replicas.produce(-1, 5_000, [(TOPIC, 0, batch(b"a"))]))
    await settle()
    # Both changes land before the waiting produce runs again: in between, another leader
    # could have had the offset written with other records.
    lost = PartitionState(replicas=(1, 2), isr=(1, 2), leader=2, leader_epoch=1, partition_epoch=1)
    regained = PartitionState(
        replicas=(1, 2), isr=(1,), leader=1, leader_epoch=2, partition_epoch=2
    )
    leader.apply(image({0: lost}, end_offset=2))
    leader.apply(image({0: regained}, end_offset=3))
    assert leader.partition().log.high_watermark == 1
    (result,) = await asyncio.wait_for(produce, 5)
    assert result.error is ErrorCode.not_leader_or_follower


async def test_the_high_watermark_stays_while_the_isr_is_below_min_isr(
    brokers: MakeBrokers,
) -> None:
    leader, *followers = brokers(1, 2, 3)
    full = PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
    for broker in (leader, *followers):
        broker.apply(image({0: full}, min_isr=2))
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"committed"))])
    for _ in range(2):
        for follower in followers:
            await replicate(leader, follower)
    assert leader.partition().log.high_watermark == 1
    produce = asyncio.create_task(
        leader.replicas.produce(-1, 300, [(TOPIC, 0, batch(b"acks-all"))])
    )
    await settle()
    # The followers lag: the ISR shrinks to the leader, and they become eligible leaders.
    shrunk = PartitionState(replicas=(1, 2, 3), isr=(1,), leader=1, partition_epoch=1, elr=(2, 3))
    for broker in (leader, *followers):
        broker.apply(image({0: shrunk}, min_isr=2, end_offset=2))
    (acks_all,) = await asyncio.wait_for(produce, 5)
    assert acks_all.error is ErrorCode.request_timed_out
    (acks_one,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"acks-1"))])
    assert acks_one.error is ErrorCode.none
    # Nothing the ELR lacks is committed, so nothing a consumer sees can be lost to it.
    assert leader.partition().log.high_watermark == 1
    (read,) = await leader.replicas.fetch(
        CONSUMER_REPLICA_ID, 0, 1, 1 << 20, [FetchPartition(TOPIC, 0, 1, 1 << 20)]
    )
    assert read.records is None or not read.records
    # A follower catching up and rejoining the ISR lets it move again.
    await replicate(leader, followers[0])
    await replicate(leader, followers[0])
    rejoined = PartitionState(replicas=(1, 2, 3), isr=(1, 2), leader=1, partition_epoch=2)
    leader.apply(image({0: rejoined}, min_isr=2, end_offset=3))
    assert leader.partition().log.high_watermark == 3


async def test_without_elr_an_acks_all_write_acked_below_min_isr_says_so(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2, eligible_leader_replicas_enable=False)
    full = PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)
    for broker in (leader, follower):
        broker.apply(image({0: full}, min_isr=2))
    produce = asyncio.create_task(leader.replicas.produce(-1, 5_000, [(TOPIC, 0, batch(b"a"))]))
    await settle()
    shrunk = PartitionState(replicas=(1, 2), isr=(1,), leader=1, partition_epoch=1)
    leader.apply(image({0: shrunk}, min_isr=2, end_offset=2))
    (result,) = await asyncio.wait_for(produce, 5)
    assert result.error is ErrorCode.not_enough_replicas_after_append
    assert leader.partition().log.high_watermark == 1


class UnansweredController(ControllerClient):
    """A controller that takes each AlterPartition (as a real one may commit it) but whose
    answer never comes back in time."""

    def __init__(self) -> None:
        super().__init__({}, client_id="test")
        # Each request's ISR members, as (broker id, broker epoch).
        self.received: list[tuple[tuple[int, int], ...]] = []

    async def send(self, request: Any, *, deadline_s: float = 30.0, patient: bool = False) -> Any:
        members = request.topics[0].partitions[0].new_isr_with_epochs
        self.received.append(tuple((m.broker_id, m.broker_epoch) for m in members))
        raise NoControllerError("no answer within the deadline")


async def test_an_unanswered_isr_expansion_stays_pending_and_is_asked_again(
    brokers: MakeBrokers,
) -> None:
    controller = UnansweredController()
    # Each member is named with its registration's broker epoch (KIP-903): 10 times its id.
    sender = IsrChangeSender(
        controller, 1, lambda: 10, lambda broker_id: 10 * broker_id, retry_backoff_s=0.01
    )
    (leader,) = brokers(1, isr_changes=sender)
    in_sync, joining = brokers(2, 3)
    state = PartitionState(replicas=(1, 3, 2), isr=(1, 2), leader=1)
    for broker in (leader, in_sync, joining):
        broker.apply(image({0: state}, min_isr=2))
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"r0"))])
    for follower in (in_sync, joining):
        await replicate(leader, follower)
        await replicate(leader, follower)
    assert leader.partition().pending_isr == (1, 3, 2)
    await asyncio.sleep(0.05)
    # The controller may have committed it: the joiner still counts for the high watermark.
    assert len(controller.received) > 1
    assert set(controller.received) == {((1, 10), (3, 30), (2, 20))}
    assert leader.partition().pending_isr == (1, 3, 2)
    produce = asyncio.create_task(leader.replicas.produce(-1, 5_000, [(TOPIC, 0, batch(b"r1"))]))
    await settle()
    await replicate(leader, in_sync)
    await replicate(leader, in_sync)
    assert leader.partition().log.high_watermark == 1
    assert not produce.done()
    # The committed change arrives: no more asking; the joiner's fetch commits the write.
    expanded = PartitionState(replicas=(1, 3, 2), isr=(1, 3, 2), leader=1, partition_epoch=1)
    leader.apply(image({0: expanded}, min_isr=2, end_offset=2))
    assert leader.partition().pending_isr is None
    asked = len(controller.received)
    await replicate(leader, joining)
    await replicate(leader, joining)
    (result,) = await asyncio.wait_for(produce, 5)
    assert result.error is ErrorCode.none
    await asyncio.sleep(0.05)
    assert len(controller.received) == asked
    await sender.stop()


class LaggingController(ControllerClient):
    """An active controller whose image is still behind the leader's epochs: it answers each
    AlterPartition NOT_CONTROLLER for the partition `behind` times, then refuses it as
    ineligible (a member restarted meanwhile)."""

    def __init__(self, behind: int) -> None:
        super().__init__({}, client_id="test")
        self.behind = behind
        self.received = 0

    async def send(self, request: Any, *, deadline_s: float = 30.0, patient: bool = False) -> Any:
        self.received += 1
        error = (
            ErrorCode.not_controller
            if self.received <= self.behind
            else ErrorCode.ineligible_replica
        )
        return alter_partition_answer(request, lambda _index: error)


async def expansion_proposed(
    brokers: MakeBrokers, controller: ControllerClient
) -> tuple[IsrChangeSender, Broker]:
    """A leader (broker 1) sending its ISR changes to `controller`, once it proposed adding
    broker 2, caught up with its first write, to the ISR."""
    sender = IsrChangeSender(
        controller, 1, lambda: 10, lambda broker_id: 10 * broker_id, retry_backoff_s=0.01
    )
    (leader,) = brokers(1, isr_changes=sender)
    (joining,) = brokers(2)
    state = PartitionState(replicas=(1, 2), isr=(1,), leader=1)
    for broker in (leader, joining):
        broker.apply(image({0: state}, min_isr=1))
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"r0"))])
    await replicate(leader, joining)
    await replicate(leader, joining)
    assert leader.partition().pending_isr == (1, 2)
    return sender, leader


async def test_an_isr_change_answered_not_controller_for_its_partition_is_asked_again(
    brokers: MakeBrokers,
) -> None:
    # No record will ever settle a change that no controller decided: without asking again
    # the leader would hold it pending, and propose nothing else, for ever (fault seed 5).
    controller = LaggingController(behind=2)
    sender, leader = await expansion_proposed(brokers, controller)
    for _ in range(100):
        if leader.partition().pending_isr is None:
            break
        await asyncio.sleep(0.01)
    assert controller.received == 3
    assert leader.partition().pending_isr is None
    await sender.stop()


class PerPartitionController(ControllerClient):
    """An active controller answering each partition of an AlterPartition with the next error
    its `answers` list holds for it (none once the list is used up), recording the partitions
    of each request."""

    def __init__(self, answers: dict[int, list[ErrorCode]]) -> None:
        super().__init__({}, client_id="test")
        self.answers = answers
        self.requests: list[list[int]] = []

    def _next_answer(self, partition_index: int) -> ErrorCode:
        pending = self.answers.get(partition_index)
        return pending.pop(0) if pending else ErrorCode.none

    async def send(self, request: Any, *, deadline_s: float = 30.0, patient: bool = False) -> Any:
        (asked,) = request.topics
        self.requests.append([partition.partition_index for partition in asked.partitions])
        return alter_partition_answer(request, self._next_answer)


def alter_partition_answer(request: Any, answer: Callable[[int], ErrorCode]) -> Any:
    """The AlterPartition v3 response to `request` (one topic), `answer(partition index)`
    the error of each partition."""
    (asked,) = request.topics
    return make_entity(
        alter_partition_v3.AlterPartitionResponse,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        topics=(
            make_entity(
                alter_partition_v3.response.TopicData,
                topic_id=asked.topic_id,
                partitions=tuple(
                    make_entity(
                        alter_partition_v3.response.PartitionData,
                        partition_index=partition.partition_index,
                        error_code=answer(partition.partition_index),
                        leader_id=-1,
                        leader_epoch=-1,
                        isr=(),
                        leader_recovery_state=0,
                        partition_epoch=-1,
                    )
                    for partition in asked.partitions
                ),
            ),
        ),
    )


async def test_isr_changes_of_many_partitions_go_in_one_request_each_answer_handled_alone(
    brokers: MakeBrokers,
) -> None:
    # Kafka's AlterPartitionManager batching: a follower catching up thousands of partitions
    # must not cost one request (and one metadata commit) each.
    controller = PerPartitionController(
        {1: [ErrorCode.ineligible_replica], 2: [ErrorCode.not_controller]}
    )
    sender = IsrChangeSender(
        controller, 1, lambda: 10, lambda broker_id: 10 * broker_id, retry_backoff_s=0.01
    )
    (leader,) = brokers(1, isr_changes=sender)
    (joining,) = brokers(2)
    state = PartitionState(replicas=(1, 2), isr=(1,), leader=1)
    for broker in (leader, joining):
        broker.apply(image(dict.fromkeys(range(3), state), min_isr=1))
    for partition_id in range(3):
        await leader.replicas.produce(1, 1_000, [(TOPIC, partition_id, batch(b"r0"))])
        await replicate(leader, joining, partition_id)
        await replicate(leader, joining, partition_id)
        assert leader.partition(partition_id).pending_isr == (1, 2)
    for _ in range(100):
        if len(controller.requests) == 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    # The three changes proposed together went in one request; only the partition a lagging
    # controller did not decide was asked again.
    assert controller.requests == [[0, 1, 2], [2]]
    # Accepted: pending until the metadata log settles it (the answer may hide a commit).
    assert leader.partition(0).pending_isr == (1, 2)
    # Refused as not made: the leader may propose again.
    assert leader.partition(1).pending_isr is None
    assert leader.partition(2).pending_isr == (1, 2)
    await sender.stop()


async def test_an_isr_change_answered_slower_than_the_request_timeout_is_sent_once(
    brokers: MakeBrokers,
) -> None:
    # A controller committing thousands of changes on a loaded machine answers after the
    # client's request timeout: the leader waits for that answer instead of sending the same
    # changes again (which the controller, having made them, refuses INVALID_UPDATE_VERSION).
    received: list[Any] = []

    async def slow_alter_partition(context: RequestContext, request: Any) -> Any:
        received.append(request)
        await asyncio.sleep(0.5)
        return alter_partition_answer(request, lambda _index: ErrorCode.none)

    registry = ApiRegistry()
    registry.register(ApiKey.ALTER_PARTITION, slow_alter_partition, min_version=3, max_version=3)
    async with fake_broker(registry=registry) as (server, _recorded):
        client = ControllerClient(
            {1: ("127.0.0.1", server.port)}, client_id="leader", request_timeout=0.1
        )
        sender, leader = await expansion_proposed(brokers, client)
        for _ in range(300):
            if received:
                break
            await asyncio.sleep(0.01)
        # Well past the answer and several request timeouts.
        await asyncio.sleep(1.5)
        assert len(received) == 1
        # Accepted: pending until the metadata log settles it.
        assert leader.partition().pending_isr == (1, 2)
        await sender.stop()
        await client.close()


async def test_a_fenced_follower_caught_up_is_proposed_for_the_isr_only_once_unfenced(
    brokers: MakeBrokers,
) -> None:
    # A restarted follower fetches before it is unfenced: asking then is refused as ineligible.
    controller = PerPartitionController({})
    sender = IsrChangeSender(
        controller, 1, lambda: 10, lambda broker_id: 10 * broker_id, retry_backoff_s=0.01
    )
    (leader,) = brokers(1, isr_changes=sender)
    (joining,) = brokers(2)
    state = PartitionState(replicas=(1, 2), isr=(1,), leader=1)
    racks: dict[int, str | None] = {1: None, 2: None}
    fenced = with_brokers(image({0: state}, min_isr=1), racks, fenced=frozenset({2}))
    for broker in (leader, joining):
        broker.apply(fenced)
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"r0"))])
    await replicate(leader, joining)
    await replicate(leader, joining)
    await settle()
    assert leader.partition().pending_isr is None
    assert controller.requests == []
    leader.apply(with_brokers(image({0: state}, min_isr=1, end_offset=2), racks))
    await replicate(leader, joining)
    assert leader.partition().pending_isr == (1, 2)
    for _ in range(100):
        if controller.requests:
            break
        await asyncio.sleep(0.01)
    assert controller.requests == [[0]]
    await sender.stop()


async def test_an_in_sync_followers_refetch_at_the_committed_end_keeps_it_caught_up_alone(
    brokers: MakeBrokers,
) -> None:
    # An idle partition's refresh (a follower's session records its settled fetches): the
    # follower stays caught up, nothing else moves.
    leader, follower = brokers(1, 2)
    state = PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)
    for broker in (leader, follower):
        broker.apply(image({0: state}, min_isr=1))
    await leader.replicas.produce(-1, 1_000, [(TOPIC, 0, batch(b"r0"))])
    for _ in range(2):
        await replicate(leader, follower)
    partition = leader.partition()
    assert partition.high_watermark == partition.log.log_end_offset == 1
    fetched = partition.followers[2]
    before = dataclasses.replace(fetched)
    await asyncio.sleep(0.01)
    refetch = FetchPartition(TOPIC, 0, 1, 1 << 20, current_leader_epoch=0, log_start_offset=0)
    leader.replicas.record_follower_fetches(2, [refetch])
    assert fetched.last_caught_up_ms == fetched.last_fetch_ms > before.last_caught_up_ms
    assert dataclasses.replace(fetched, last_caught_up_ms=0, last_fetch_ms=0) == (
        dataclasses.replace(before, last_caught_up_ms=0, last_fetch_ms=0)
    )
    assert (partition.high_watermark, partition.pending_isr) == (1, None)


async def test_a_new_leader_starts_its_epoch_so_a_follower_of_the_deposed_one_truncates(
    brokers: MakeBrokers,
) -> None:
    first, second, third = brokers(1, 2, 3)
    state = PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
    for broker in (first, second, third):
        broker.apply(image({0: state}, min_isr=2))
    await first.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"e0"))])
    for _ in range(2):
        for follower in (second, third):
            await replicate(first, follower)
    # Broker 2 leads epoch 1 and only broker 3 copies its write; then broker 1 leads epoch 2,
    # which it never saw, and has nothing of epoch 1.
    epoch_1 = PartitionState(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=2, leader_epoch=1, partition_epoch=1
    )
    for broker in (second, third):
        broker.apply(image({0: epoch_1}, min_isr=2, end_offset=2))
    await second.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"e1"))])
    await replicate(second, third)
    epoch_2 = PartitionState(
        replicas=(1, 2, 3), isr=(1, 3), leader=1, leader_epoch=2, partition_epoch=2
    )
    for broker in (first, third):
        broker.apply(image({0: epoch_2}, min_isr=2, end_offset=3))
    assert first.partition().log.end_offset_for_epoch(2) == (2, 1)
    result, went_on = await replicate(first, third)
    assert result.diverging_epoch == (0, 1)
    assert went_on
    await replicate(first, third)
    assert values(third.partition().log) == [b"e0"]
    assert first.partition().followers[3].log_end_offset == 1
    await first.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"e2"))])
    await replicate(first, third)
    await replicate(first, third)
    assert values(third.partition().log) == values(first.partition().log) == [b"e0", b"e2"]
    assert third.partition().log.high_watermark == 2


async def test_a_follower_forgets_an_epoch_it_led_without_writing_and_replicates_again(
    brokers: MakeBrokers,
) -> None:
    first, second, third = brokers(1, 2, 3)
    lead_from_first([first, second, third])
    await first.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"e0"))])
    for _ in range(2):
        for follower in (second, third):
            await replicate(first, follower)
    # Broker 3 leads epoch 1 cut off from the others, writes nothing, and is deposed: its
    # epoch cache ends with epoch 1 starting at its log end; broker 2 leads epoch 2.
    epoch_1 = PartitionState(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=3, leader_epoch=1, partition_epoch=1
    )
    third.apply(image({0: epoch_1}, end_offset=2))
    assert third.partition().log.latest_epoch == 1
    epoch_2 = PartitionState(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=2, leader_epoch=2, partition_epoch=2
    )
    for broker in (first, second, third):
        broker.apply(image({0: epoch_2}, end_offset=3))
    result, went_on = await replicate(second, third)
    assert result.diverging_epoch == (0, 1)
    assert went_on
    # Nothing was cut, but epoch 1 is gone: the next fetch names epoch 0 and counts.
    assert values(third.partition().log) == [b"e0"]
    assert third.partition().log.latest_epoch == 0
    result, _ = await replicate(second, third)
    assert result.diverging_epoch is None
    assert second.partition().followers[3].log_end_offset == 1
    await second.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"e2"))])
    await replicate(second, third)
    assert values(third.partition().log) == [b"e0", b"e2"]


async def test_a_corrupt_batch_from_the_leader_backs_off_and_writes_nothing(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower])
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"good"))])
    (result,) = await leader.replicas.fetch(
        2, 0, 1, 1 << 20, [FetchPartition(TOPIC, 0, 0, 1 << 20, current_leader_epoch=0)]
    )
    assert result.records is not None
    rotten = bytearray(result.records)
    rotten[-1] ^= 0xFF
    received = dataclasses.replace(as_received(result), records=Records(bytes(rotten)))
    assert not follower.fetcher.apply_answer(follower.partition(), received)
    assert follower.partition().log.log_end_offset == 0
    _, went_on = await replicate(leader, follower)
    assert went_on
    assert values(follower.partition().log) == [b"good"]


async def test_an_acks_all_wait_ends_when_the_replica_is_deleted(brokers: MakeBrokers) -> None:
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower])
    produce = asyncio.create_task(leader.replicas.produce(-1, 30_000, [(TOPIC, 0, batch(b"a"))]))
    await settle()
    leader.apply(MetadataImage(end_offset=2))
    (result,) = await asyncio.wait_for(produce, 1)
    assert result.error is ErrorCode.unknown_topic_or_partition


async def test_a_follower_fetching_past_the_leaders_end_is_not_taken_at_its_word(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2)
    state = PartitionState(replicas=(1, 2), isr=(1,), leader=1)
    for broker in (leader, follower):
        broker.apply(image({0: state}))
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a"))])
    (result,) = await leader.replicas.fetch(
        2, 0, 1, 1 << 20, [FetchPartition(TOPIC, 0, 5, 1 << 20, current_leader_epoch=0)]
    )
    assert result.error is ErrorCode.offset_out_of_range
    assert leader.partition().followers[2].log_end_offset == -1


async def test_partitions_that_got_records_are_asked_for_last_next_time(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower], partitions=2)
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"busy"))])
    fetcher = follower.fetcher
    for partition_id in (0, 1):
        fetcher.add(follower.partition(partition_id))
    fetched = dict(fetcher.partitions)
    results = await leader.replicas.fetch(
        2,
        0,
        1,
        1 << 20,
        [FetchPartition(TOPIC, p, 0, 1 << 20, current_leader_epoch=0) for p in (0, 1)],
    )
    assert applied_at_once(
        fetcher.apply_response(fetched, {key: 0 for key in fetched}, response_of(results))
    )
    # Partition 0 got records: partition 1 comes first in the next request, so a batch too
    # large for what partition 0 leaves of the response is not starved for ever.
    assert list(fetcher.partitions) == [(TOPIC, 1), (TOPIC, 0)]
    assert values(follower.partition(0).log) == [b"busy"]


async def test_a_followers_first_records_of_many_partitions_start_their_epoch_on_disk(
    brokers: MakeBrokers,
) -> None:
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower], partitions=3, leader_epoch=4)
    await leader.replicas.produce(1, 1_000, [(TOPIC, p, batch(b"%d" % p)) for p in range(3)])
    fetcher = follower.fetcher
    for partition_id in range(3):
        fetcher.add(follower.partition(partition_id))
    fetched = dict(fetcher.partitions)
    results = await leader.replicas.fetch(
        2,
        0,
        1,
        1 << 20,
        [FetchPartition(TOPIC, p, 0, 1 << 20, current_leader_epoch=4) for p in range(3)],
    )
    # Partition 2's batch rotted on the way: refused, it backs off alone.
    rotten = bytearray(results[2].records or b"")
    rotten[-1] ^= 0xFF
    results[2] = dataclasses.replace(results[2], records=bytes(rotten))
    assert not applied_at_once(
        fetcher.apply_response(fetched, dict.fromkeys(fetched, 4), response_of(results))
    )
    for partition_id in (0, 1):
        replica_log = follower.partition(partition_id).log
        assert values(replica_log) == [b"%d" % partition_id]
        # The epoch the records start is on disk before them (a restart finds it there).
        on_disk = LeaderEpochCache.load(replica_log.directory)
        assert on_disk is not None
        assert on_disk.entries == [EpochEntry(4, 0)]
    assert follower.partition(2).log.log_end_offset == 0
    assert list(fetcher.due_partitions()) == [(TOPIC, 0), (TOPIC, 1)]


async def test_a_new_leader_answers_offsets_once_its_high_watermark_reaches_its_epoch(
    brokers: MakeBrokers,
) -> None:
    first, second = brokers(1, 2)
    lead_from_first([first, second])
    await first.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a"))])
    await replicate(first, second)
    # Broker 2 has the record but not yet the high watermark that covers it.
    assert second.partition().log.high_watermark == 0
    moved = PartitionState(replicas=(1, 2), isr=(1, 2), leader=2, leader_epoch=1, partition_epoch=1)
    for broker in (first, second):
        broker.apply(image({0: moved}, end_offset=2))
    latest = -1
    assert second.replicas.list_offset(TOPIC, 0, latest, 1) == (
        ErrorCode.offset_not_available,
        None,
    )
    await replicate(second, first)
    error, answer = second.replicas.list_offset(TOPIC, 0, latest, 1)
    assert error is ErrorCode.none
    assert answer is not None and answer.offset == 1


async def test_a_replica_added_under_the_same_leader_counts_once_it_fetches(
    brokers: MakeBrokers,
) -> None:
    leader, added = brokers(1, 2)
    alone = PartitionState(replicas=(1,), isr=(1,), leader=1)
    leader.apply(image({0: alone}))
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a"))])
    grown = PartitionState(
        replicas=(1, 2), isr=(1,), leader=1, partition_epoch=1, adding_replicas=(2,)
    )
    for broker in (leader, added):
        broker.apply(image({0: grown}, end_offset=2))
    await replicate(leader, added)
    await replicate(leader, added)
    assert leader.partition().followers[2].log_end_offset == 1
    back = PartitionState(replicas=(1,), isr=(1,), leader=1, partition_epoch=2)
    leader.apply(image({0: back}, end_offset=3))
    assert leader.partition().followers == {}


async def test_a_refused_partition_backs_off_alone(brokers: MakeBrokers) -> None:
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower], partitions=2)
    fetcher = follower.fetcher
    for partition_id in (0, 1):
        fetcher.add(follower.partition(partition_id))
    fetched = fetcher.due_partitions()
    # Partition 1 is asked for in an epoch the leader does not know yet: refused.
    results = await leader.replicas.fetch(
        2,
        0,
        1,
        1 << 20,
        [
            FetchPartition(TOPIC, 0, 0, 1 << 20, current_leader_epoch=0),
            FetchPartition(TOPIC, 1, 0, 1 << 20, current_leader_epoch=5),
        ],
    )
    assert results[1].error is ErrorCode.unknown_leader_epoch
    assert not applied_at_once(
        fetcher.apply_response(fetched, {key: 0 for key in fetched}, response_of(results))
    )
    assert list(fetcher.due_partitions()) == [(TOPIC, 0)]
    # New metadata for it: asked for again at once.
    fetcher.add(follower.partition(1))
    assert list(fetcher.due_partitions()) == [(TOPIC, 0), (TOPIC, 1)]


async def test_an_answer_is_not_applied_to_a_replica_that_replaced_its_partition_meanwhile(
    brokers: MakeBrokers,
) -> None:
    """A Fetch in flight while its partition is removed and another replica of it is added
    (the topic deleted and created again): the answer, for the replica it was sent for, is
    not applied to the new one, which is asked for from its own position next."""
    leader, follower, recreated = brokers(1, 2, 3)
    lead_from_first([leader, follower, recreated])
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"old"))])
    asked: asyncio.Queue[Any] = asyncio.Queue()
    release = asyncio.Event()

    async def on_fetch(context: RequestContext, request: Any) -> Any:
        await asked.put(request)
        await release.wait()
        wanted = [
            FetchPartition(TOPIC, p.partition, p.fetch_offset, 1 << 20, current_leader_epoch=0)
            for topic in request.topics
            for p in topic.partitions
        ]
        results = await leader.replicas.fetch(2, 0, 1, 1 << 20, wanted)
        # No session: every Fetch names the partitions it asks for.
        return dataclasses.replace(response_of(results), session_id=i32(0))

    registry = ApiRegistry()
    registry.register(ApiKey.FETCH, on_fetch, min_version=12, max_version=12)
    async with fake_broker(registry=registry) as (server, _):
        fetcher = ReplicaFetcher(2, 1, ("127.0.0.1", server.port))
        fetcher.add(follower.partition())
        fetcher.start()
        try:
            first = await asyncio.wait_for(asked.get(), 10)
            assert [p.fetch_offset for t in first.topics for p in t.partitions] == [0]
            fetcher.remove(follower.partition())
            fetcher.add(recreated.partition())
            # The first answer goes; the next one waits (its records would be the new
            # replica's own).
            release.set()
            release.clear()
            # The next Fetch comes once the first answer was handled.
            second = await asyncio.wait_for(asked.get(), 10)
            assert [p.fetch_offset for t in second.topics for p in t.partitions] == [0]
            assert values(recreated.partition().log) == []
            assert values(follower.partition().log) == []
        finally:
            release.set()
            await fetcher.stop()


async def test_an_answer_of_thousands_of_partitions_is_applied_with_the_loop_free_between(
    brokers: MakeBrokers,
) -> None:
    """The first records of many partitions (each a log's segment file and epoch checkpoint
    made) are applied in slices: the event loop runs between them, and the answer is applied
    whole, each partition once."""
    partitions = 1_000
    leader, follower = brokers(1, 2)
    lead_from_first([leader, follower], partitions=partitions)
    await leader.replicas.produce(
        1, 1_000, [(TOPIC, p, batch(b"%d" % p)) for p in range(partitions)]
    )
    answered = asyncio.Event()

    async def on_fetch(context: RequestContext, request: Any) -> Any:
        wanted = [
            FetchPartition(TOPIC, p.partition, p.fetch_offset, 1 << 20, current_leader_epoch=0)
            for topic in request.topics
            for p in topic.partitions
        ]
        if answered.is_set():
            # The next Fetch, from the positions the first answer left: nothing new.
            await asyncio.sleep(10)
        answered.set()
        results = await leader.replicas.fetch(2, 0, 1, 1 << 30, wanted)
        return dataclasses.replace(response_of(results), session_id=i32(0))

    def applied() -> int:
        return sum(follower.partition(p).log.log_end_offset for p in range(partitions))

    registry = ApiRegistry()
    registry.register(ApiKey.FETCH, on_fetch, min_version=12, max_version=12)
    async with fake_broker(registry=registry) as (server, _):
        fetcher = ReplicaFetcher(2, 1, ("127.0.0.1", server.port))
        for partition_id in range(partitions):
            fetcher.add(follower.partition(partition_id))
        fetcher.start()
        seen: list[int] = []
        try:
            await asyncio.wait_for(answered.wait(), 30)
            async with asyncio.timeout(60):
                while not seen or seen[-1] < partitions:
                    seen.append(applied())
                    await asyncio.sleep(0)
        finally:
            await fetcher.stop()
    # The loop ran while part of the answer was applied, and more than once.
    assert len([count for count in seen if 0 < count < partitions]) > 1
    assert [values(follower.partition(p).log) for p in (0, partitions - 1)] == [
        [b"0"],
        [b"%d" % (partitions - 1)],
    ]
