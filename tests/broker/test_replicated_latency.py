"""The acks=all path waits on no timer: a follower's long-polling fetch is answered as soon as
the leader appends, and a waiting produce completes as soon as the follower fetch that moves
the high watermark arrives. Counted in event loop iterations (brokers in this process,
`tests.broker.replicas`), so the tests do not depend on how loaded the machine is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.replica_manager import FetchPartition
from controller.partition_state import PartitionState
from tests.broker.replicas import TOPIC, Broker, batch, image, replicate, settle

# A waiter woken by a change runs on the next loop iteration and answers then; more
# iterations mean something queued in between (a timer, a hop through another task).
_AT_ONCE = 1


async def iterations_until_done(task: asyncio.Future[Any], limit: int = 50) -> int:
    """How many event loop iterations pass until `task` is done (at most `limit`)."""
    for iteration in range(limit):
        if task.done():
            return iteration
        await asyncio.sleep(0)
    raise AssertionError(f"not done after {limit} loop iterations")


@pytest.fixture
async def three(tmp_path: Path) -> AsyncIterator[tuple[Broker, Broker, Broker]]:
    """Broker 1 leads partitions 0..19 of the topic; 2 and 3 follow, all in the ISR,
    min.insync.replicas 2."""
    made = (Broker(1, tmp_path), Broker(2, tmp_path), Broker(3, tmp_path))
    state = PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
    for broker in made:
        broker.apply(image(dict.fromkeys(range(20), state), min_isr=2))
    yield made
    for broker in made:
        broker.close()


async def test_a_followers_long_poll_is_answered_on_the_iteration_after_the_append(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, follower, _ = three
    # A follower's fetch of all 20 partitions, waiting up to 30 s for data.
    waiting = asyncio.ensure_future(
        leader.replicas.fetch(
            follower.broker_id,
            30_000,
            1,
            10 << 20,
            [FetchPartition(TOPIC, p, 0, 1 << 20, current_leader_epoch=0) for p in range(20)],
        )
    )
    await settle()
    assert not waiting.done()
    (appended,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 17, batch(b"late"))])
    assert appended.error is ErrorCode.none
    assert await iterations_until_done(waiting) <= _AT_ONCE
    results = waiting.result()
    assert [p for p, r in enumerate(results) if r.records] == [17]


async def test_an_acks_all_produce_completes_on_the_follower_fetch_that_commits_it(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, third = three
    produce = asyncio.ensure_future(leader.replicas.produce(-1, 30_000, [(TOPIC, 0, batch(b"a"))]))
    await settle()
    # Both followers get the batch; the leader learns it only from their next fetches.
    await replicate(leader, second)
    await replicate(leader, third)
    await replicate(leader, second)
    await settle()
    assert not produce.done(), "committed before the whole ISR had the batch"
    # The fetch that reports the last ISR member's log end moves the high watermark, and the
    # waiting produce is answered at once.
    await replicate(leader, third)
    assert leader.partition().high_watermark == 1
    assert await iterations_until_done(produce) <= _AT_ONCE
    (result,) = produce.result()
    assert (result.error, result.base_offset) == (ErrorCode.none, 0)


async def test_a_long_poll_that_times_out_leaves_no_waiter_on_its_partitions(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, follower, _ = three
    results = await leader.replicas.fetch(
        follower.broker_id,
        10,
        1,
        10 << 20,
        [FetchPartition(TOPIC, p, 0, 1 << 20, current_leader_epoch=0) for p in range(20)],
    )
    assert all(r.error is ErrorCode.none and not r.records for r in results)
    # Idle partitions are never woken: a waiter left behind on each would pile up with every
    # long poll that times out.
    assert all(leader.partition(p).waiting == 0 for p in range(20))


def acks_all_to(leader: Broker, partitions: int, timeout_ms: int) -> asyncio.Future[Any]:
    """A running acks=all produce of one batch to each of partitions 0 .. `partitions` - 1."""
    return asyncio.ensure_future(
        leader.replicas.produce(
            -1, timeout_ms, [(TOPIC, p, batch(b"%d" % p)) for p in range(partitions)]
        )
    )


async def commit(leader: Broker, followers: tuple[Broker, ...], partition_id: int) -> None:
    """Each follower fetches the partition's batch, then reports having it."""
    for _ in range(2):
        for follower in followers:
            await replicate(leader, follower, partition_id)


async def test_an_acks_all_produce_over_many_partitions_answers_each_as_it_commits(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, third = three
    produce = acks_all_to(leader, 4, 30_000)
    await settle()
    for partition_id in range(3):
        await commit(leader, (second, third), partition_id)
    # The last partition: both followers have it, and the leader knows of one so far.
    await replicate(leader, second, 3)
    await replicate(leader, third, 3)
    await replicate(leader, second, 3)
    await settle()
    assert not produce.done(), "answered before every partition committed"
    # The follower fetch that commits the last partition answers the whole request: one hop
    # for its partition's answer, one for the request (no task per partition in between).
    await replicate(leader, third, 3)
    assert leader.partition(3).high_watermark == 1
    assert await iterations_until_done(produce) <= _AT_ONCE + 1
    results = produce.result()
    assert [(r.error, r.base_offset) for r in results] == [(ErrorCode.none, 0)] * 4


async def test_an_acks_all_produce_over_many_partitions_times_out_only_the_uncommitted(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, third = three
    produce = acks_all_to(leader, 3, 500)
    await settle()
    for partition_id in (0, 2):
        await commit(leader, (second, third), partition_id)
    first, middle, last = await asyncio.wait_for(produce, 10)
    assert (first.error, last.error) == (ErrorCode.none, ErrorCode.none)
    assert middle.error is ErrorCode.request_timed_out
    # The high watermark waits of the request are all gone with it.
    assert all(not leader.partition(p)._high_watermark_waiters for p in (0, 2))


async def test_an_acks_all_produce_to_one_partition_times_out_at_its_deadline(
    three: tuple[Broker, Broker, Broker],
) -> None:
    leader, second, _ = three
    produce = acks_all_to(leader, 1, 200)
    await settle()
    # One follower has the batch; the other never fetches it.
    await replicate(leader, second)
    await replicate(leader, second)
    (answer,) = await asyncio.wait_for(produce, 10)
    assert answer.error is ErrorCode.request_timed_out
    assert leader.partition().high_watermark == 0
