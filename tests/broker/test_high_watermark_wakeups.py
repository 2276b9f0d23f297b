"""A high watermark that moved alone wakes consumers' long polls (it makes records visible to
them) but no follower's: a follower has nothing new to read, and learns the high watermark
from its next answer, on new records or at its timeout (Kafka's DelayedFetch). Every other
change (records, a log start, a truncation, a role) still wakes followers. Brokers run in
this process (`tests.broker.replicas`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.data_apis import DataApis
from broker.fetch_sessions import FetchSessionCache, RequestedPartition
from broker.partition import until_any_changes
from broker.partition_changes import PartitionChanges
from broker.replica_manager import CONSUMER_REPLICA_ID, FetchPartition, FetchResult
from controller.partition_state import PartitionState
from tests.broker.replicas import TOPIC, Broker, batch, image, replicate, settle
from tests.broker.test_fetch_sessions import MAX_BYTES, answer, named
from tests.broker.test_fetch_sessions import TOPIC as SESSION_TOPIC
from tests.broker.test_replicated_latency import iterations_until_done

# Long enough that no timer ends a poll during a test: only a change does.
_LONG_POLL_MS = 60_000


def test_a_high_watermark_move_alone_is_no_change_for_followers() -> None:
    changes = PartitionChanges()
    changes.changed((TOPIC, 0))
    start = changes.sequence
    changes.changed((TOPIC, 1), high_watermark_only=True)
    assert list(changes.since(start)) == [(TOPIC, 1)]
    assert list(changes.since(start, follower=True)) == []
    changes.changed((TOPIC, 2))
    changes.changed((TOPIC, 1), high_watermark_only=True)
    assert list(changes.since(start)) == [(TOPIC, 1), (TOPIC, 2)]
    assert list(changes.since(start, follower=True)) == [(TOPIC, 2)]
    # A later change of any other kind makes it one for followers again.
    changes.changed((TOPIC, 1))
    assert list(changes.since(start, follower=True)) == [(TOPIC, 1), (TOPIC, 2)]


def test_a_followers_session_reads_and_answers_high_watermark_moves_when_it_reads() -> None:
    # The follower's wait ignores them, but what it reads after (on new records, at its
    # timeout) takes in every partition changed, so its answer carries the high watermarks.
    cache = FetchSessionCache()
    changes = PartitionChanges()
    requested = [named(0), named(1)]
    opening = cache.new_context(
        0, 0, requested, [], uses_topic_ids=False, privileged=True, now_ms=0
    )
    opening.respond([(p, answer()) for p in requested], MAX_BYTES, 0)
    changes.changed((SESSION_TOPIC, 1), high_watermark_only=True)
    context = cache.new_context(
        opening.session_id, 1, [], [], uses_topic_ids=False, privileged=True, now_ms=0
    )
    due = context.to_read(changes)
    assert [p.key for p in due] == [(SESSION_TOPIC, 1)]
    answered = context.respond([(due[0], answer(high_watermark=5))], MAX_BYTES, 0)
    assert [(p.key, r.high_watermark) for p, r in answered] == [((SESSION_TOPIC, 1), 5)]


@pytest.fixture
async def three(tmp_path: Path) -> AsyncIterator[tuple[Broker, Broker, Broker]]:
    """Broker 1 leads partition 0; 2 and 3 follow, all in the ISR."""
    made = (Broker(1, tmp_path), Broker(2, tmp_path), Broker(3, tmp_path))
    state = PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
    for broker in made:
        broker.apply(image({0: state}, min_isr=2))
    yield made
    for broker in made:
        broker.close()


def long_poll(leader: Broker, replica_id: int, offset: int) -> asyncio.Future[Any]:
    """A fetch of partition 0 from `offset` waiting for one byte, as `replica_id`."""
    return asyncio.ensure_future(
        leader.replicas.fetch(
            replica_id,
            _LONG_POLL_MS,
            1,
            1 << 20,
            [FetchPartition(TOPIC, 0, offset, 1 << 20, current_leader_epoch=0)],
        )
    )


async def appended_everywhere_but_uncommitted(
    leader: Broker, second: Broker, third: Broker
) -> None:
    """One record on every replica, the leader's high watermark still 0 (it learns the
    followers' log ends from their next fetches)."""
    (appended,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"a"))])
    assert appended.error is ErrorCode.none
    await replicate(leader, second)
    await replicate(leader, third)
    assert leader.partition().high_watermark == 0


async def test_a_high_watermark_move_wakes_a_consumer_but_not_a_follower(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, third = three
    await appended_everywhere_but_uncommitted(leader, second, third)
    follower = long_poll(leader, second.broker_id, 1)
    # A consumer reads up to the high watermark (the last stable offset this broker answers
    # read_committed consumers is the same): the record is not visible to it yet.
    consumer = long_poll(leader, CONSUMER_REPLICA_ID, 0)
    await settle()
    assert not follower.done() and not consumer.done()
    partition = leader.partition()
    # The follower's long poll waits on this future (woken, it would read again and wait on
    # another).
    (follower_waiter,) = partition._follower_waiters
    # The third's next fetch reports its log end: the high watermark moves, and nothing else.
    await replicate(leader, third)
    assert partition.high_watermark == 1
    assert await iterations_until_done(consumer) <= 1
    (seen,) = consumer.result()
    assert (seen.high_watermark, bool(seen.records)) == (1, True)
    await settle()
    assert not follower.done()
    assert partition._follower_waiters == {follower_waiter}, "woken by the high watermark alone"
    assert not follower_waiter.done()
    # New records wake it, and its answer carries the high watermark it did not wait for.
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"b"))])
    assert await iterations_until_done(follower) <= 1
    (fetched,) = follower.result()
    assert (fetched.high_watermark, bool(fetched.records)) == (1, True)


def open_session(apis: DataApis, *, privileged: bool) -> int:
    requested = [RequestedPartition((TOPIC, 0), TOPIC, None, FetchPartition(TOPIC, 0, 0, 1 << 20))]
    context = apis.sessions.new_context(
        0, 0, requested, [], uses_topic_ids=False, privileged=privileged, now_ms=0
    )
    context.respond([(requested[0], FetchResult(ErrorCode.none, 0, 0))], 1 << 20, 0)
    return context.session_id


async def test_a_high_watermark_move_wakes_consumers_sessions_but_not_followers(
    three: tuple[Broker, Broker, Broker],
) -> None:
    # The incremental fetches of sessions wait on a future each, woken through the replica
    # manager's change notices.
    leader, second, third = three
    apis = DataApis(leader.replicas)
    await appended_everywhere_but_uncommitted(leader, second, third)
    loop = asyncio.get_running_loop()
    consumer: asyncio.Future[None] = loop.create_future()
    follower: asyncio.Future[None] = loop.create_future()
    apis._waiting[open_session(apis, privileged=False)] = consumer
    apis._followers_waiting[open_session(apis, privileged=True)] = follower
    await replicate(leader, second)
    await replicate(leader, third)
    assert leader.partition().high_watermark == 1
    assert consumer.done() and not follower.done()
    await leader.replicas.produce(1, 1_000, [(TOPIC, 0, batch(b"b"))])
    assert follower.done()


async def test_a_followers_long_poll_that_times_out_carries_the_high_watermark(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, third = three
    await appended_everywhere_but_uncommitted(leader, second, third)
    follower = asyncio.ensure_future(
        leader.replicas.fetch(
            second.broker_id,
            200,
            1,
            1 << 20,
            [FetchPartition(TOPIC, 0, 1, 1 << 20, current_leader_epoch=0)],
        )
    )
    await settle()
    await replicate(leader, third)
    assert leader.partition().high_watermark == 1
    (result,) = await asyncio.wait_for(follower, 30)
    assert isinstance(result, FetchResult)
    assert (result.error, result.high_watermark, result.records) == (ErrorCode.none, 1, None)
    assert leader.partition().waiting == 0


async def test_a_log_start_move_still_wakes_a_follower(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, third = three
    await appended_everywhere_but_uncommitted(leader, second, third)
    await replicate(leader, second)
    await replicate(leader, third)
    partition = leader.partition()
    changes = leader.replicas.changes
    start = changes.sequence
    waiting = asyncio.ensure_future(until_any_changes((partition,), None, follower=True))
    await settle()
    assert not waiting.done()
    assert partition.delete_records(1) == 1
    assert await iterations_until_done(waiting) <= 1
    assert list(changes.since(start, follower=True)) == [(TOPIC, 0)]
    # The follower's next read answers the new log start.
    (result,) = await leader.replicas.fetch(
        second.broker_id,
        0,
        1,
        1 << 20,
        [FetchPartition(TOPIC, 0, 1, 1 << 20, current_leader_epoch=0)],
    )
    assert (result.log_start_offset, result.high_watermark) == (1, 1)


async def test_a_truncation_and_a_role_change_still_wake_a_follower(
    three: tuple[Broker, Broker, Broker],
) -> None:
    # Waiters on a follower replica (consumers reading from it, KIP-392) and the journal's
    # follower kind hear of a truncation, a restart at another offset and a new role.
    leader, second, third = three
    await appended_everywhere_but_uncommitted(leader, second, third)
    replica = second.partition()
    changes = second.replicas.changes
    changes_to_make: list[Callable[[], None]] = [
        lambda: replica.truncate_to(0),
        lambda: replica.restart_at(3),
        lambda: replica.apply(
            PartitionState(replicas=(1, 2, 3), isr=(2, 3), leader=2, leader_epoch=1)
        ),
    ]
    for change in changes_to_make:
        start = changes.sequence
        waiting = asyncio.ensure_future(until_any_changes((replica,), None, follower=True))
        await settle()
        assert not waiting.done()
        change()
        assert await iterations_until_done(waiting) <= 1
        assert list(changes.since(start, follower=True)) == [(TOPIC, 0)]
