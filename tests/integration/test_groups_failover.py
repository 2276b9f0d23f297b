"""Group coordination through failures, and bad group requests, on real `kraft serve` nodes.

- The coordinator's broker is SIGKILLed: the new leader of the group's `__consumer_offsets`
  partition loads the group's offsets, and a consumer resumes exactly where commits left it.
- A member SIGKILLed (a `kcat -G` process) loses its partitions to the others once its session
  times out.
- Commits with a stale generation, an unknown member or an invalid group id get Kafka's errors,
  and nothing is stored.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from bench.group_requests import raw_commit, raw_fetch
from broker.groups.partitioning import offsets_partition_for
from net.client import NodeConnection
from tests.integration.test_groups import group_consumer, shared_by
from tests.integration.test_produce_consume import create_topic, produce_with_librdkafka

pytestmark = pytest.mark.timeout(240)
OFFSETS_PARTITIONS = 3


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
            "group.initial.rebalance.delay.ms": "0",
            "broker.session.timeout.ms": "4000",
            "broker.heartbeat.interval.ms": "500",
        },
    )
    with cluster.started(20.0):
        yield cluster


def offsets_leader(cluster: Cluster, observer: int, group: str) -> int:
    partitions = cluster.nodes[observer].get("/v1/topics/__consumer_offsets")["partitions"]
    partition = offsets_partition_for(group, OFFSETS_PARTITIONS)
    leader: int = next(p for p in partitions if p["partition"] == partition)["leader"]
    return leader


def consume_and_commit(consumer: Consumer, count: int) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            value = message.value()
            assert value is not None
            seen.append(value.decode())
            consumer.commit(message=message, asynchronous=False)
    return seen


def test_a_new_coordinator_loads_the_offsets_of_a_killed_one(cluster: Cluster) -> None:
    create_topic(cluster, "orders", 2, replication_factor=3)
    produce_with_librdkafka(cluster, "orders", [(i % 2, f"o-{i}") for i in range(40)])
    first = group_consumer(cluster, "survivors")
    first.subscribe(["orders"])
    seen = consume_and_commit(first, 20)
    first.close()
    assert len(seen) == 20

    coordinator = offsets_leader(cluster, 1, "survivors")
    cluster.kill(coordinator)
    observer = next(n for n in cluster.running())
    cluster.wait_for(
        "a new coordinator",
        lambda: offsets_leader(cluster, observer, "survivors") not in (-1, coordinator),
        30.0,
    )
    second = group_consumer(cluster, "survivors")
    second.subscribe(["orders"])
    try:
        rest = consume_and_commit(second, 20)
        assert second.poll(2.0) is None
    finally:
        second.close()
    # Nothing read twice, nothing skipped: the new coordinator had every commit.
    assert sorted(seen + rest) == sorted(f"o-{i}" for i in range(40))


def test_a_killed_member_loses_its_partitions_after_its_session_times_out(
    cluster: Cluster,
) -> None:
    create_topic(cluster, "jobs", 6, replication_factor=3)
    # Three librdkafka members; kcat's balanced consumer is a process of its own, so it can be
    # SIGKILLed.
    member = subprocess.Popen(
        ["kcat", "-b", cluster.bootstrap, "-G", "workers", "-q", "-X", "session.timeout.ms=6000",
         "-X", "heartbeat.interval.ms=500", "jobs"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    survivors = [group_consumer(cluster, "workers") for _ in range(2)]
    try:
        for survivor in survivors:
            survivor.subscribe(["jobs"])

        def shared_with_kcat() -> bool:
            for survivor in survivors:
                survivor.poll(0.05)
            owned = [{tp.partition for tp in survivor.assignment()} for survivor in survivors]
            # Each survivor owns some, none twice, and kcat the rest (it is a third member).
            return all(owned) and not owned[0] & owned[1] and len(owned[0] | owned[1]) < 6

        cluster.wait_for("the partitions shared by three members", shared_with_kcat, 60.0)
        member.send_signal(signal.SIGKILL)
        member.wait(10)
        killed_at = time.monotonic()
        shared_by(cluster, survivors, 6, "every partition with the two survivors")
        # Not before the session timeout: the killed member never said it left.
        assert time.monotonic() - killed_at >= 4.0
    finally:
        if member.poll() is None:
            member.kill()
            member.wait(10)
        for survivor in survivors:
            survivor.close()


async def test_bad_commits_get_kafkas_errors_and_store_nothing(cluster: Cluster) -> None:
    create_topic(cluster, "audited", 1, replication_factor=3)
    member = group_consumer(cluster, "auditors")
    member.subscribe(["audited"])
    shared_by(cluster, [member], 1, "the member owning the partition")
    coordinator = offsets_leader(cluster, 1, "auditors")
    connection = NodeConnection("127.0.0.1", cluster.nodes[coordinator].broker_port or 0)
    try:

        async def commit(group: str, generation: int, member_id: str) -> ErrorCode:
            errors = await raw_commit(
                connection, group, generation, member_id, {("audited", 0): 99}
            )
            return errors[0]

        member_id = member.memberid()
        assert member_id
        assert await commit("auditors", 999, member_id) is ErrorCode.illegal_generation
        assert await commit("auditors", 1, "nobody") is ErrorCode.unknown_member_id
        assert await commit("auditors", -1, "") is ErrorCode.unknown_member_id
        assert await commit("", -1, "") is ErrorCode.invalid_group_id
        assert await commit("x" * 40_000, -1, "") is ErrorCode.invalid_group_id

        fetched = await raw_fetch(connection, "auditors", {"audited": [0]})
        assert fetched.error_code == ErrorCode.none
        assert fetched.topics[0].partitions[0].committed_offset == -1
        assert member.committed([TopicPartition("audited", 0)], timeout=10)[0].offset < 0
    finally:
        await connection.close()
        member.close()


async def test_a_coordinator_answers_load_in_progress_until_its_groups_are_read(
    tmp_path: Path,
) -> None:
    node = Cluster.combined(
        tmp_path,
        1,
        **{"offsets.topic.num.partitions": "1"},
    )
    node.start_all()
    try:
        node.wait_for("broker unfenced", node.brokers_unfenced)
        # A first commit through a client creates the offsets topic and finds the coordinator
        # (offsets are committed only for partitions that exist).
        await asyncio.to_thread(create_topic, node, "probe", 1)
        creator = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "loaded"})
        creator.commit(offsets=[TopicPartition("probe", 0, 1)], asynchronous=False)
        creator.close()
        partitions = 1_000
        await asyncio.to_thread(create_topic, node, "bulk", partitions)
        # Then enough commits that reading them back takes a while: 100,000 records.
        port = node.nodes[1].broker_port or 0
        connection = NodeConnection("127.0.0.1", port)
        try:
            for round in range(1, 101):
                offsets = {("bulk", partition): round for partition in range(partitions)}
                errors = await raw_commit(connection, "loaded", -1, "", offsets)
                assert set(errors) == {ErrorCode.none}
        finally:
            await connection.close()

        node.kill(1)
        node.start(1)
        seen: list[ErrorCode] = []
        deadline = time.monotonic() + 60
        fetched: Any = None
        while time.monotonic() < deadline:
            connection = NodeConnection("127.0.0.1", port)
            try:
                fetched = await raw_fetch(connection, "loaded", {"bulk": list(range(partitions))})
            except OSError:
                await asyncio.sleep(0.05)  # not listening yet
                continue
            finally:
                await connection.close()
            seen.append(ErrorCode(fetched.error_code))
            if seen[-1] is ErrorCode.none:
                break
        # The broker answered while it was reading the partition, and then had every offset.
        assert ErrorCode.coordinator_load_in_progress in seen
        assert seen[-1] is ErrorCode.none
        assert {p.committed_offset for p in fetched.topics[0].partitions} == {100}
    finally:
        node.stop_all()
