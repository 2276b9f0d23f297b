"""Consumer groups against a real `kraft serve` node with real clients: the coordinator found
on `__consumer_offsets`, partitions shared among a group's members, commits that a restarted
consumer resumes from."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import (
    OFFSET_INVALID,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from bench.cluster import Cluster
from bench.groups import each_owned_once
from tests.integration.test_broker_metadata import log_events
from tests.integration.test_produce_consume import create_topic, produce_with_librdkafka

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("groups"),
        1,
        **{"offsets.topic.num.partitions": "5", "group.initial.rebalance.delay.ms": "0"},
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def group_consumer(cluster: Cluster, group: str, **settings: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **settings,
        }
    )


# kafka-python's and aiokafka's consumers take the same keywords.
PYTHON_MEMBER_SETTINGS: dict[str, Any] = {
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 500,
    "max_poll_records": 5,
}


def shared_by(cluster: Cluster, consumers: list[Consumer], partitions: int, what: str) -> None:
    """Poll every consumer (from this one thread: confluent-kafka's rebalance callbacks run in
    poll) until each owns some partitions and together they own each exactly once."""

    def owners() -> bool:
        for consumer in consumers:
            consumer.poll(0.05)
        return each_owned_once(consumers, partitions)

    cluster.wait_for(what, owners, 60.0)


def test_librdkafka_members_share_the_partitions_and_take_over_when_one_leaves(
    node: Cluster,
) -> None:
    create_topic(node, "shared", 6)
    consumers = [group_consumer(node, "sharers") for _ in range(3)]
    try:
        for consumer in consumers:
            consumer.subscribe(["shared"])
        shared_by(node, consumers, 6, "partitions shared by three members")
        # One leaves cleanly (LeaveGroup): the two others take its partitions over at once,
        # well before its session would have expired.
        consumers.pop().close()
        left_at = time.monotonic()
        shared_by(node, consumers, 6, "partitions shared by the two others")
        assert time.monotonic() - left_at < 6.0
    finally:
        for consumer in consumers:
            consumer.close()
    # The coordinator logged each move of the group, each with the generation it reached.
    moves = [e for e in log_events(node, 1, "group_state_changed") if e["group"] == "sharers"]
    stable = [e for e in moves if e["state"] == "Stable"]
    assert moves[0]["previous_state"] == "Empty"
    of_three = next(e for e in stable if len(e["members"]) == 3)
    assert len(stable[-1]["members"]) == 2
    assert stable[-1]["generation_id"] > of_three["generation_id"]
    assert all(e["protocol"] == "range" for e in stable) and moves[-1]["state"] == "Empty"


def test_a_consumer_resumes_from_what_it_committed(node: Cluster) -> None:
    create_topic(node, "resumed", 2)
    produce_with_librdkafka(node, "resumed", [(i % 2, f"m-{i}") for i in range(40)])

    first = group_consumer(node, "resumers")
    first.subscribe(["resumed"])
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < 20 and time.monotonic() < deadline:
        message = first.poll(0.5)
        if message is not None and message.error() is None:
            value = message.value()
            assert value is not None
            seen.append(value.decode())
            first.commit(message=message, asynchronous=False)
    committed = first.committed([TopicPartition("resumed", p) for p in range(2)], timeout=10)
    first.close()
    # Offsets each partition committed (a partition it never read from has none: -1001).
    assert sum(max(tp.offset, 0) for tp in committed) == len(seen) == 20

    # kafka-python in the same group starts where the commits are: nothing twice, no gap.
    rest = read_rest_with_kafka_python(node, "resumed", "resumers")
    assert sorted(seen + rest) == sorted(f"m-{i}" for i in range(40))


def learn_partitions_before_joining(consumer: KafkaConsumer, topic: str) -> None:
    """Have a kafka-python group member learn `topic`'s partitions before its first join.

    Otherwise, as a leader, it may assign before its metadata lists them, and rejoin once it
    does; kafka-python (3.0.12) loses that rejoin when a poll's timeout ends it between the
    assignment and the SyncGroup answer: the member then never takes its assignment nor
    heartbeats again, and the coordinator rightly expires it.
    """
    assert consumer.partitions_for_topic(topic), f"no partitions of {topic} in the metadata"


def read_rest_with_kafka_python(node: Cluster, topic: str, group: str) -> list[str]:
    """What a kafka-python member of `group` reads of `topic`, starting from the group's
    commits, until nothing more comes for a while."""
    resumed = KafkaConsumer(
        topic,
        bootstrap_servers=node.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=8_000,
    )
    try:
        learn_partitions_before_joining(resumed, topic)
        return [record.value.decode() for record in resumed]
    finally:
        resumed.close()


def read_and_commit(consumer: Consumer, count: int) -> None:
    """Poll until `count` messages are read, committing each synchronously."""
    read = 0
    deadline = time.monotonic() + 60
    while read < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
            consumer.commit(message=message, asynchronous=False)
    assert read == count


def test_admin_clients_list_describe_and_delete_groups(node: Cluster) -> None:
    create_topic(node, "administered", 2)
    produce_with_librdkafka(node, "administered", [(i % 2, f"a-{i}") for i in range(10)])
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    consumer = group_consumer(node, "admins", **{"client.id": "described-client"})
    try:
        consumer.subscribe(["administered"])
        shared_by(node, [consumer], 2, "the consumer owns both partitions")
        read_and_commit(consumer, 10)

        listed = admin.list_consumer_groups().result(timeout=30)
        assert not listed.errors
        states = {g.group_id: g.state for g in listed.valid}
        assert states["admins"] == ConsumerGroupState.STABLE
        stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(timeout=30)
        assert "admins" in {g.group_id for g in stable.valid}
        empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=30)
        assert "admins" not in {g.group_id for g in empty.valid}

        described = admin.describe_consumer_groups(["admins"])["admins"].result(timeout=30)
        assert described.state == ConsumerGroupState.STABLE
        assert described.partition_assignor == "range"
        (member,) = described.members
        assert member.client_id == "described-client"
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1]

        # kafka-python sees the same.
        python_admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
        try:
            assert "admins" in {g["group_id"] for g in python_admin.list_groups()}
            group = python_admin.describe_groups(["admins"])["admins"]
            assert (group["group_state"], group["protocol_type"]) == ("Stable", "consumer")
            assert [m["client_id"] for m in group["members"]] == ["described-client"]
        finally:
            python_admin.close()

        # A group with a member is not deleted.
        (refused,) = admin.delete_consumer_groups(["admins"]).values()
        with pytest.raises(KafkaException) as raised:
            refused.result(timeout=30)
        assert raised.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    finally:
        consumer.close()

    # Once it left, the group is Empty with its offsets, and may be deleted.
    described = admin.describe_consumer_groups(["admins"])["admins"].result(timeout=30)
    assert (described.state, described.members) == (ConsumerGroupState.EMPTY, [])
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("admins")])
    offsets = committed["admins"].result(timeout=30).topic_partitions
    assert sum(tp.offset for tp in offsets) == 10
    admin.delete_consumer_groups(["admins"])["admins"].result(timeout=30)

    # Gone: no offsets, not listed, described as Dead, a second deletion finds nothing.
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("admins")])
    assert committed["admins"].result(timeout=30).topic_partitions == []
    listed = admin.list_consumer_groups().result(timeout=30)
    assert "admins" not in {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups(["admins"])["admins"].result(timeout=30)
    assert described.state == ConsumerGroupState.DEAD
    with pytest.raises(KafkaException) as raised:
        admin.delete_consumer_groups(["admins"])["admins"].result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND

    # A new consumer of the group starts over from auto.offset.reset.
    again = group_consumer(node, "admins")
    try:
        again.subscribe(["administered"])
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < 10 and time.monotonic() < deadline:
            message = again.poll(0.5)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                seen.append(value.decode())
        assert sorted(seen) == sorted(f"a-{i}" for i in range(10))
    finally:
        again.close()


def test_offsets_of_topics_the_group_is_not_subscribed_to_may_be_deleted(node: Cluster) -> None:
    create_topic(node, "followed", 1)
    create_topic(node, "abandoned", 1)
    consumer = group_consumer(node, "pruners")
    python_admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        consumer.subscribe(["followed"])
        shared_by(node, [consumer], 1, "the consumer owns its partition")
        consumer.commit(
            offsets=[TopicPartition("followed", 0, 3), TopicPartition("abandoned", 0, 7)],
            asynchronous=False,
        )
        errors = python_admin.delete_group_offsets(
            "pruners",
            [KafkaTopicPartition("followed", 0), KafkaTopicPartition("abandoned", 0)],
        )
        assert {tp.topic: error.__name__ for tp, error in errors.items()} == {
            "followed": "GroupSubscribedToTopicError",
            "abandoned": "NoError",
        }
        committed = consumer.committed(
            [TopicPartition("followed", 0), TopicPartition("abandoned", 0)], timeout=10
        )
        assert [(tp.topic, tp.offset) for tp in committed] == [
            ("followed", 3),
            ("abandoned", OFFSET_INVALID),
        ]
    finally:
        python_admin.close()
        consumer.close()


def test_clients_may_not_produce_to_the_offsets_topic(node: Cluster) -> None:
    # Created by the coordinator on a first lookup (a commit, of a topic that exists).
    create_topic(node, "probed", 1)
    consumer = group_consumer(node, "prober")
    consumer.commit(offsets=[TopicPartition("probed", 0, 1)], asynchronous=False)
    consumer.close()
    producer = Producer({"bootstrap.servers": node.bootstrap, "message.send.max.retries": 0})
    errors: list[KafkaError | None] = []
    producer.produce(
        "__consumer_offsets",
        value=b"forged",
        partition=0,
        on_delivery=lambda e, _: errors.append(e),
    )
    producer.flush(30)
    assert [None if error is None else error.code() for error in errors] == [
        KafkaError.TOPIC_EXCEPTION
    ]


def test_kafka_python_members_share_the_partitions_and_resume_from_commits(node: Cluster) -> None:
    create_topic(node, "py-shared", 4)

    def member() -> KafkaConsumer:
        return KafkaConsumer(
            "py-shared",
            bootstrap_servers=node.bootstrap,
            group_id="py-sharers",
            **PYTHON_MEMBER_SETTINGS,
        )

    seen: list[str] = []
    stop = threading.Event()

    def run(consumer: KafkaConsumer) -> None:
        # Each member reads and commits in its own thread, as applications run them.
        while not stop.is_set():
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(record.value.decode() for record in records)
                consumer.commit()

    # Every member is closed whatever fails (after its thread stopped): one left open retries
    # the stopped node from its own thread for the rest of the session.
    with contextlib.ExitStack() as cleanup:
        members: list[KafkaConsumer] = []
        for _ in range(2):
            members.append(member())
            cleanup.callback(members[-1].close)
        for consumer in members:
            learn_partitions_before_joining(consumer, "py-shared")
        threads = [threading.Thread(target=run, args=(consumer,)) for consumer in members]

        @cleanup.callback
        def stop_members() -> None:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)

        for thread in threads:
            thread.start()
        node.wait_for(
            "both kafka-python members own partitions", lambda: each_owned_once(members, 4), 60.0
        )
        produce_with_librdkafka(node, "py-shared", [(i % 4, f"p-{i}") for i in range(80)])
        node.wait_for("half the records read", lambda: len(seen) >= 40, 30.0)
    assert len(seen) == len(set(seen))

    # A member of the group restarted after both left: from the commits, no gap, no repeat.
    rest = read_rest_with_kafka_python(node, "py-shared", "py-sharers")
    assert sorted(seen + rest) == sorted(f"p-{i}" for i in range(80))


async def test_aiokafka_members_share_the_partitions_and_resume_from_commits(
    node: Cluster,
) -> None:
    create_topic(node, "aio-shared", 4)

    def member() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            "aio-shared",
            bootstrap_servers=node.bootstrap,
            group_id="aio-sharers",
            **PYTHON_MEMBER_SETTINGS,
        )

    members = [member(), member()]
    seen: list[str] = []
    stop = asyncio.Event()

    async def run(consumer: AIOKafkaConsumer) -> None:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                seen.extend(record.value.decode() for record in records if record.value)
                await consumer.commit()

    async def until(what: str, check: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.1)

    for consumer in members:
        await consumer.start()
    tasks = [asyncio.create_task(run(consumer)) for consumer in members]
    try:
        await until(
            "both aiokafka members own partitions", lambda: each_owned_once(members, 4), 60.0
        )
        await asyncio.to_thread(
            produce_with_librdkafka,
            node,
            "aio-shared",
            [(i % 4, f"a-{i}") for i in range(80)],
        )
        await until("half the records read", lambda: len(seen) >= 40, 30.0)
        stop.set()
        await asyncio.gather(*tasks)
        # One leaves (LeaveGroup): the other owns every partition well before a session.
        await members.pop().stop()
        await until(
            "the other member owning every partition",
            lambda: {tp.partition for tp in members[0].assignment()} == {0, 1, 2, 3},
            6.0,
        )
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for consumer in members:
            await consumer.stop()
    assert len(seen) == len(set(seen))

    resumed = member()
    await resumed.start()
    rest: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while len(seen) + len(rest) < 80 and time.monotonic() < deadline:
            for records in (await resumed.getmany(timeout_ms=500)).values():
                rest.extend(record.value.decode() for record in records if record.value)
        assert not await resumed.getmany(timeout_ms=1000)
    finally:
        await resumed.stop()
    assert sorted(seen + rest) == sorted(f"a-{i}" for i in range(80))
