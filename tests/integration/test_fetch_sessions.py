"""KIP-227 fetch sessions on three real nodes: the replica fetchers replicate a topic of many
partitions through incremental sessions (seen in each node's `/metrics`), every acknowledged
message reaches every replica, also across a leader change in the middle of the sessions, and
kafka-python's consumer (which uses sessions; librdkafka and aiokafka do not) reads everything
through its own incremental session while more is written; a sessionless long poll over every
partition is answered with what is written to one of them, and a session is told of a log start
that retention moved (no periodic full read would tell it)."""

from __future__ import annotations

import asyncio
import datetime
import importlib
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kio.schema.errors import ErrorCode
from prometheus_client.parser import text_string_to_metric_families

from bench.cluster import Cluster
from net.client import NodeConnection
from net.protocol import make_entity

pytestmark = pytest.mark.timeout(240)

TOPIC = "many"
PARTITIONS = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("fetch-sessions"),
        3,
        **{"min.insync.replicas": "2", "log.retention.check.interval.ms": "1000"},
    )
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(3), timeout=60)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)

        def all_led() -> bool:
            described = admin.list_topics(TOPIC, timeout=5).topics[TOPIC]
            return len([p for p in described.partitions.values() if p.leader >= 0]) == PARTITIONS

        cluster.wait_for("partitions led", all_led, timeout=60)
        yield cluster
    finally:
        cluster.stop_all()


# Acknowledged messages per partition, over the tests of the module (they share the topic).
acked: Counter[int] = Counter()


def metrics(cluster: Cluster, node_id: int) -> dict[tuple[str, str], float]:
    """Node `node_id`'s samples: (name, partition label or "") -> value, for the topic's
    partitions and the node-wide fetch session metrics."""
    url = f"http://127.0.0.1:{cluster.nodes[node_id].admin_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("topic", TOPIC) == TOPIC:
                samples[(sample.name, sample.labels.get("partition", ""))] = sample.value
    return samples


def produce(cluster: Cluster, count: int, start: int = 0) -> None:
    """`count` messages over every partition, acks=all; counts the acknowledged ones."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )

    def delivered(error: object, message: object) -> None:
        if error is None:
            acked[message.partition()] += 1  # type: ignore[attr-defined]

    for index in range(start, start + count):
        producer.produce(
            TOPIC, value=f"m{index}".encode(), partition=index % PARTITIONS, on_delivery=delivered
        )
        producer.poll(0)
    assert producer.flush(60) == 0


def replicated_everywhere(cluster: Cluster) -> bool:
    """Every running node's replica of every partition ends at, and has committed, exactly the
    messages acknowledged to it."""
    for node_id in cluster.running():
        samples = metrics(cluster, node_id)
        for partition in range(PARTITIONS):
            label = str(partition)
            if samples.get(("kraft_partition_log_end_offset", label)) != acked[partition]:
                return False
            if samples.get(("kraft_partition_high_watermark", label)) != acked[partition]:
                return False
    return True


def test_replication_runs_in_incremental_sessions(cluster: Cluster) -> None:
    produce(cluster, 1500)
    assert sum(acked.values()) == 1500
    cluster.wait_for("every acked message on every replica", lambda: replicated_everywhere(cluster))
    for node_id in cluster.nodes:
        samples = metrics(cluster, node_id)
        # Each node leads some partitions, and both other nodes fetch them in a session.
        assert samples[("kraft_fetch_sessions", "")] >= 2
        assert samples[("kraft_fetch_session_partitions", "")] >= 2
        assert samples[("kraft_fetch_session_incremental_fetches_total", "")] > 0


def test_a_leader_change_in_the_middle_of_the_sessions_loses_nothing(cluster: Cluster) -> None:
    before = sum(acked.values())
    # Controlled shutdown moves node 3's leaderships to the others, whose fetchers take those
    # partitions into their sessions with the new leader.
    assert cluster.terminate(3) == 0
    produce(cluster, 900, start=before)
    assert sum(acked.values()) == before + 900
    cluster.wait_for("replicated on nodes 1 and 2", lambda: replicated_everywhere(cluster))
    cluster.start(3)
    cluster.wait_for("node 3 ready", lambda: cluster.ready(3), timeout=60)
    produce(cluster, 300, start=before + 900)
    cluster.wait_for(
        "every acked message on every replica", lambda: replicated_everywhere(cluster), 60
    )


def test_kafka_python_consumes_everything_through_its_session(cluster: Cluster) -> None:
    incremental_before = sum(
        metrics(cluster, node_id)[("kraft_fetch_session_incremental_fetches_total", "")]
        for node_id in cluster.nodes
    )
    sessions_before = sum(
        metrics(cluster, node_id)[("kraft_fetch_sessions", "")] for node_id in cluster.nodes
    )
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        consumer_timeout_ms=30_000,
    )
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        seen: Counter[int] = Counter()

        def read_until(total: int) -> None:
            deadline = time.monotonic() + 60
            while sum(seen.values()) < total and time.monotonic() < deadline:
                for partition, records in consumer.poll(timeout_ms=500).items():
                    seen[partition.partition] += len(records)

        read_until(sum(acked.values()))
        assert seen == acked
        # More written while the consumer's sessions are open reach it incrementally.
        produce(cluster, 600, start=sum(acked.values()))
        read_until(sum(acked.values()))
        assert seen == acked
        sessions = sum(
            metrics(cluster, node_id)[("kraft_fetch_sessions", "")] for node_id in cluster.nodes
        )
        assert sessions > sessions_before
        incremental = sum(
            metrics(cluster, node_id)[("kraft_fetch_session_incremental_fetches_total", "")]
            for node_id in cluster.nodes
        )
        assert incremental > incremental_before
    finally:
        consumer.close()


def fetch_request(
    version: int,
    session_id: int,
    epoch: int,
    offsets: dict[int, int],
    topic_id: UUID,
    forgotten: tuple[int, ...] = (),
    max_wait_ms: int = 0,
    topic: str = TOPIC,
) -> Any:
    """A consumer's Fetch of `version` for `offsets` (partition -> fetch offset) of `topic`."""
    schema = importlib.import_module(f"kio.schema.fetch.v{version}")
    partitions = tuple(
        make_entity(
            schema.request.FetchPartition,
            partition=partition,
            current_leader_epoch=-1,
            fetch_offset=offset,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            partition_max_bytes=1 << 20,
        )
        for partition, offset in offsets.items()
    )
    fetched = make_entity(
        schema.request.FetchTopic, topic=topic, topic_id=topic_id, partitions=partitions
    )
    gone = make_entity(
        schema.request.ForgottenTopic, topic=topic, topic_id=topic_id, partitions=forgotten
    )
    return make_entity(
        schema.FetchRequest,
        replica_id=-1,
        replica_state=make_entity(schema.request.ReplicaState, replica_id=-1, replica_epoch=-1)
        if version >= 15
        else None,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1,
        max_bytes=10 << 20,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=(fetched,) if partitions else (),
        forgotten_topics_data=(gone,) if forgotten else (),
        rack_id="",
    )


async def send(connection: NodeConnection, request: Any) -> Any:
    return await connection.send(request)


def answered(response: Any) -> dict[int, Any]:
    return {p.partition_index: p for topic in response.responses for p in topic.partitions}


@pytest.mark.parametrize("version", [7, 12, 13, 16])
async def test_wire_sessions_answer_only_what_changed(cluster: Cluster, version: int) -> None:
    described = cluster.nodes[1].get(f"/v1/topics/{TOPIC}", timeout=30)
    topic_id = UUID(described["topic_id"])
    by_leader: dict[int, list[int]] = {}
    for partition in described["partitions"]:
        by_leader.setdefault(partition["leader"], []).append(partition["partition"])
    leader, led = max(by_leader.items(), key=lambda item: len(item[1]))
    quiet, busy = led[0], led[1]
    connection = NodeConnection("127.0.0.1", cluster.nodes[leader].broker_port or 0)
    try:
        full = await send(
            connection, fetch_request(version, 0, 0, {quiet: 0, busy: 0}, topic_id, max_wait_ms=0)
        )
        assert full.error_code == ErrorCode.none
        session_id = full.session_id
        assert session_id != 0
        assert set(answered(full)) == {quiet, busy}
        high_watermarks = {p: answer.high_watermark for p, answer in answered(full).items()}

        # Caught up on both: nothing changed, so nothing is answered.
        nothing = await send(
            connection,
            fetch_request(version, session_id, 1, dict(high_watermarks), topic_id, max_wait_ms=50),
        )
        assert (nothing.error_code, nothing.session_id) == (ErrorCode.none, session_id)
        assert answered(nothing) == {}

        # A write to one partition: only that one is answered, with its record.
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        producer.produce(TOPIC, value=b"wire", partition=busy)
        assert producer.flush(30) == 0
        acked[busy] += 1
        changed = await send(
            connection, fetch_request(version, session_id, 2, {}, topic_id, max_wait_ms=5000)
        )
        assert set(answered(changed)) == {busy}
        assert answered(changed)[busy].high_watermark == high_watermarks[busy] + 1
        assert answered(changed)[busy].records

        # Forgotten: a write to it no longer reaches this session.
        producer.produce(TOPIC, value=b"wire", partition=busy)
        assert producer.flush(30) == 0
        acked[busy] += 1
        forgot = await send(
            connection,
            fetch_request(version, session_id, 3, {}, topic_id, forgotten=(busy,), max_wait_ms=50),
        )
        assert answered(forgot) == {}

        wrong_epoch = await send(
            connection, fetch_request(version, session_id, 9, {}, topic_id, max_wait_ms=0)
        )
        assert wrong_epoch.error_code == ErrorCode.invalid_fetch_session_epoch
        unknown = await send(
            connection, fetch_request(version, session_id + 1, 1, {}, topic_id, max_wait_ms=0)
        )
        assert unknown.error_code == ErrorCode.fetch_session_id_not_found
        if version == 12:
            # A session opened by name cannot go on by topic id.
            by_id = await send(
                connection, fetch_request(13, session_id, 4, {}, topic_id, max_wait_ms=0)
            )
            assert by_id.error_code == ErrorCode.fetch_session_topic_id_error

        # Epoch -1 closes the session (a sessionless fetch).
        closing = await send(
            connection, fetch_request(version, session_id, -1, {quiet: 0}, topic_id, max_wait_ms=0)
        )
        assert closing.session_id == 0
        assert set(answered(closing)) == {quiet}
        closed = await send(
            connection, fetch_request(version, session_id, 4, {}, topic_id, max_wait_ms=0)
        )
        assert closed.error_code == ErrorCode.fetch_session_id_not_found
    finally:
        await connection.close()


def leaders(cluster: Cluster, topic: str) -> tuple[UUID, dict[int, list[int]]]:
    """The topic's id, and the partitions each broker leads."""
    described = cluster.nodes[1].get(f"/v1/topics/{topic}", timeout=30)
    by_leader: dict[int, list[int]] = {}
    for partition in described["partitions"]:
        by_leader.setdefault(partition["leader"], []).append(partition["partition"])
    return UUID(described["topic_id"]), by_leader


async def test_a_sessionless_long_poll_over_every_partition_gets_the_write_it_waits_for(
    cluster: Cluster,
) -> None:
    topic_id, by_leader = leaders(cluster, TOPIC)
    leader, led = max(by_leader.items(), key=lambda item: len(item[1]))
    connection = NodeConnection("127.0.0.1", cluster.nodes[leader].broker_port or 0)
    try:
        ends = answered(
            await send(connection, fetch_request(12, 0, -1, dict.fromkeys(led, 0), topic_id))
        )
        at_end = {p: answer.high_watermark for p, answer in ends.items()}
        # Caught up everywhere: the fetch waits (up to 30 s) until a write to one partition.
        waiting = asyncio.ensure_future(
            send(connection, fetch_request(12, 0, -1, at_end, topic_id, max_wait_ms=30_000))
        )

        def write() -> int:
            producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
            producer.produce(TOPIC, value=b"awaited", partition=led[-1])
            return producer.flush(30)

        # Written from a thread, so the fetch goes out (and waits) while the producer starts;
        # the answer is the same in either order.
        assert await asyncio.to_thread(write) == 0
        acked[led[-1]] += 1
        response = await asyncio.wait_for(waiting, 60)
        # Every partition is answered; only the written one has records and a new end.
        got = answered(response)
        assert set(got) == set(led)
        assert [p for p, answer in got.items() if answer.records] == [led[-1]]
        assert {p: answer.high_watermark for p, answer in got.items()} == {
            **at_end,
            led[-1]: at_end[led[-1]] + 1,
        }
    finally:
        await connection.close()


async def test_a_session_is_told_of_the_log_start_retention_moved(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # Small segments, all but the active one past retention: each pass (every second) moves
    # the log start up to the active segment.
    admin.create_topics(
        [NewTopic("retained", 1, 3, config={"segment.bytes": "1024", "retention.bytes": "1"})]
    )["retained"].result(30)
    cluster.wait_for(
        "retained led", lambda: leaders(cluster, "retained")[1].get(-1) is None, timeout=60
    )
    topic_id, by_leader = leaders(cluster, "retained")
    (leader,) = by_leader
    connection = NodeConnection("127.0.0.1", cluster.nodes[leader].broker_port or 0)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    try:
        # A pass may move the log start before the session opens: then write more and retry.
        for _ in range(5):
            for index in range(30):
                producer.produce("retained", value=b"r%03d" % index, partition=0)
                producer.flush(30)
            probe = await send(
                connection, fetch_request(12, 0, -1, {0: 0}, topic_id, topic="retained")
            )
            end = answered(probe)[0].high_watermark
            opened = await send(
                connection, fetch_request(12, 0, 0, {0: end}, topic_id, topic="retained")
            )
            (start,) = answered(opened).values()
            assert start.error_code == ErrorCode.none
            # At the end: only a moved log start can make the session answer the partition.
            ended = await send(
                connection,
                fetch_request(
                    12,
                    opened.session_id,
                    1,
                    {0: start.high_watermark},
                    topic_id,
                    max_wait_ms=5_000,
                    topic="retained",
                ),
            )
            moved = answered(ended).get(0)
            if moved is not None:
                break
        assert moved is not None, "the session never heard of the moved log start"
        assert moved.high_watermark == start.high_watermark
        assert start.log_start_offset < moved.log_start_offset <= start.high_watermark
        assert not moved.records
    finally:
        producer.flush(30)
        await connection.close()
