"""Partition reassignment through Kafka's own APIs (AlterPartitionReassignments,
ListPartitionReassignments, UnregisterBroker) on real `kraft serve` processes, driven by
kafka-python's admin client: a move with acknowledged data, bad targets, a cancelled move,
and removing a broker."""

from __future__ import annotations

import asyncio
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from controller.client import (
    alter_partition_reassignments_request,
    list_partition_reassignments_request,
    unregister_broker_request,
)
from net.client import NodeConnection

pytestmark = pytest.mark.slow

MESSAGES = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("reassign")
    cluster = Cluster.combined(
        root,
        3,
        **{
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            "auto.leader.rebalance.enable": "false",
        },
    )
    cluster.add_brokers([4])
    with cluster.started(60):
        yield cluster


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    """An admin client of the running brokers. kafka-python sends the controller APIs to the
    `controller_id` of a Metadata answer, which a broker gives as its own id (it forwards
    them): a client made before a broker stops may keep sending there."""
    running = [b for b in cluster.broker_ids if b in cluster.running()]
    client = KafkaAdminClient(
        bootstrap_servers=",".join(f"127.0.0.1:{cluster.nodes[b].broker_port}" for b in running),
        request_timeout_ms=30_000,
    )
    try:
        yield client
    finally:
        client.close()


def _partition(
    cluster: Cluster, topic: str, partition: int = 0, *, node_id: int = 1
) -> dict[str, Any]:
    """The partition as the metadata image of node `node_id`'s admin API shows it."""
    described = cluster.nodes[node_id].get(f"/v1/topics/{topic}", timeout=5)
    found: dict[str, Any] = next(p for p in described["partitions"] if p["partition"] == partition)
    return found


def _wait_until_led(cluster: Cluster, topic: str, *, node_id: int = 1) -> None:
    def led() -> bool | None:
        try:
            return _partition(cluster, topic, node_id=node_id)["leader"] >= 0 or None
        except urllib.error.HTTPError:
            return None  # not in node 1's image yet

    cluster.wait_for(f"{topic} led", led)


def _send(cluster: Cluster, node_id: int, request: Any) -> Any:
    """`request`'s response from broker `node_id` (which forwards it to the controller)."""

    async def exchange() -> Any:
        port = cluster.nodes[node_id].broker_port or 0
        async with NodeConnection("127.0.0.1", port) as connection:
            return await connection.send(request)

    return asyncio.run(exchange())


def _wait_until_no_reassignment(admin: KafkaAdminClient, cluster: Cluster) -> None:
    cluster.wait_for(
        "reassignments completed",
        lambda: True if not admin.list_partition_reassignments() else None,
        timeout=60,
    )


def test_a_move_keeps_every_acknowledged_record(cluster: Cluster, admin: KafkaAdminClient) -> None:
    topic = "moved"
    admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2]})])
    _wait_until_led(cluster, topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=10)
    try:
        for index in range(MESSAGES):
            producer.send(topic, f"record-{index}".encode())
        producer.flush(timeout=60)
    finally:
        producer.close()

    results = admin.alter_partition_reassignments({TopicPartition(topic, 0): [3, 4]})
    assert results == {TopicPartition(topic, 0): None}
    _wait_until_no_reassignment(admin, cluster)

    def moved() -> dict[str, Any] | None:
        state = _partition(cluster, topic)
        done = state["replicas"] == [3, 4] and sorted(state["isr"]) == [3, 4]
        return state if done else None

    state = cluster.wait_for("replicas moved", moved, timeout=30)
    assert state["leader"] == 3  # the target's first replica leads once the old ones leave

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    try:
        values = [record.value for record in consumer]
    finally:
        consumer.close()
    assert values == [f"record-{index}".encode() for index in range(MESSAGES)]


def test_bad_targets_get_kafkas_error_codes(cluster: Cluster, admin: KafkaAdminClient) -> None:
    topic = "targets"
    admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2], 1: [2, 3]})])
    _wait_until_led(cluster, topic)
    results = admin.alter_partition_reassignments(
        {
            TopicPartition("no-such-topic", 0): [1, 2],
            TopicPartition(topic, 5): [1, 2],
            TopicPartition(topic, 0): [1, 1],
            TopicPartition(topic, 1): [2, 99],
        }
    )
    assert results == {
        TopicPartition("no-such-topic", 0): UnknownTopicOrPartitionError,
        TopicPartition(topic, 5): UnknownTopicOrPartitionError,
        TopicPartition(topic, 0): InvalidReplicationAssignmentError,
        TopicPartition(topic, 1): InvalidReplicationAssignmentError,
    }
    # kafka-python refuses an empty target (a replication factor of zero) itself; sent on the
    # wire it is refused as Kafka refuses it.
    answer = _send(cluster, 1, alter_partition_reassignments_request({(topic, 0): []}))
    assert [(p.error_code, p.partition_index) for r in answer.responses for p in r.partitions] == [
        (ErrorCode.invalid_replica_assignment, 0)
    ]
    # Cancelling nothing:
    assert admin.alter_partition_reassignments({TopicPartition(topic, 0): None}) == {
        TopicPartition(topic, 0): NoReassignmentInProgressError
    }
    assert _partition(cluster, topic)["replicas"] == [1, 2]


def test_a_move_waiting_for_a_stopped_broker_can_be_cancelled(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    topic = "cancelled"
    admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2]})])
    _wait_until_led(cluster, topic)
    admin.close()
    cluster.terminate(4)
    # Closed on every path: an admin client left open retries the stopped cluster from its
    # thread for the rest of the session.
    node_admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{cluster.nodes[1].broker_port}", request_timeout_ms=30_000
    )
    tp = TopicPartition(topic, 0)
    try:
        assert node_admin.alter_partition_reassignments({tp: [1, 4]}) == {tp: None}
        # Broker 4 is registered but down: the move waits for it.
        time.sleep(1)
        assert node_admin.list_partition_reassignments() == {
            tp: {"replicas": [1, 4, 2], "adding_replicas": [4], "removing_replicas": [2]}
        }
        listed = node_admin.list_partition_reassignments([tp])
        assert listed == node_admin.list_partition_reassignments()

        assert node_admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert node_admin.list_partition_reassignments() == {}
    finally:
        node_admin.close()
    # Node 1 replays the committed cancel soon after the controller answers.
    state = cluster.wait_for(
        "back to the original replicas",
        lambda: (p := _partition(cluster, topic))["replicas"] == [1, 2] and p,
    )
    assert 4 not in state["isr"]


def test_a_move_survives_a_controller_failover(cluster: Cluster) -> None:
    """A move waiting for a stopped broker is in the metadata log: the next active controller
    completes it once the broker is back. After the failover the requests go to one broker
    with our own client (kafka-python may pick the dead node as its controller)."""
    if 4 in cluster.running():
        cluster.terminate(4)
    controller, epoch, _ = cluster.wait_for("a quorum leader", cluster.agreed_leader)
    first, second = [b for b in (1, 2, 3) if b != controller]
    topic = "failover"
    tp = TopicPartition(topic, 0)
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{cluster.nodes[first].broker_port}",
        request_timeout_ms=30_000,
    )
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [first, second]})])
        _wait_until_led(cluster, topic, node_id=first)
        assert admin.alter_partition_reassignments({tp: [first, 4]}) == {tp: None}
    finally:
        admin.close()

    def ongoing() -> list[Any]:
        response = _send(cluster, first, list_partition_reassignments_request([(topic, 0)]))
        assert response.error_code == ErrorCode.none
        return [p for t in response.topics for p in t.partitions]

    cluster.kill(controller)
    try:
        cluster.wait_for(
            "a new quorum leader",
            lambda: ((agreed := cluster.agreed_leader()) is not None and agreed[1] > epoch) or None,
            timeout=30,
        )
        (waiting,) = ongoing()
        assert (waiting.replicas, waiting.adding_replicas) == ((first, 4, second), (4,))
        cluster.start(4)
        cluster.wait_for("the move completed", lambda: not ongoing() or None, timeout=60)
        state = cluster.wait_for(
            "4 in sync",
            lambda: (p := _partition(cluster, topic, node_id=first))["isr"] == [first, 4] and p,
            timeout=30,
        )
        assert state["replicas"] == [first, 4]
    finally:
        cluster.start(controller)
    cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, timeout=60)


def test_a_broker_is_emptied_then_unregistered(cluster: Cluster) -> None:
    """Broker 4, stopped, has its replicas moved away (with our own client's requests), then
    leaves the cluster; broker 1 hosts replicas and is refused."""
    if 4 in cluster.running():
        cluster.terminate(4)
    targets: dict[tuple[str, int], list[int]] = {}
    for topic in cluster.nodes[1].get("/v1/topics"):
        for partition in topic["partitions"]:
            if 4 in partition["replicas"]:
                kept = [r for r in partition["replicas"] if r != 4]
                spare = next(b for b in (1, 2, 3) if b not in kept)
                targets[(topic["name"], partition["partition"])] = [*kept, spare]
    assert targets
    answer = _send(cluster, 1, alter_partition_reassignments_request(targets))
    assert [p.error_code for t in answer.responses for p in t.partitions] == [ErrorCode.none] * len(
        targets
    )
    cluster.wait_for(
        "the moves completed",
        lambda: not _send(cluster, 1, list_partition_reassignments_request()).topics or None,
        timeout=60,
    )

    def unregister(broker_id: int) -> Any:
        return _send(cluster, 1, unregister_broker_request(broker_id))

    refused = unregister(1)
    assert refused.error_code == ErrorCode.invalid_request
    assert "still hosts" in (refused.error_message or "")

    assert unregister(4).error_code == ErrorCode.none
    assert unregister(4).error_code == ErrorCode.broker_id_not_registered
    cluster.wait_for(
        "broker 4 gone from the metadata",
        lambda: True if 4 not in {b["id"] for b in cluster.nodes[1].get("/v1/brokers")} else None,
    )


def test_a_running_broker_that_is_unregistered_stops(cluster: Cluster) -> None:
    """Broker 4 comes back (a new registration, hosting nothing) and is unregistered while it
    runs: it stops cleanly instead of registering again."""
    if 4 not in cluster.running():
        cluster.start(4)
    cluster.wait_for("broker 4 unfenced", cluster.brokers_unfenced)

    assert _send(cluster, 1, unregister_broker_request(4)).error_code == ErrorCode.none
    process = cluster.nodes[4].process
    assert process is not None
    assert process.wait(timeout=30) == 0
    cluster.nodes[4].process = None
    # It did not register again on its way out.
    log = cluster.nodes[4].log_path.read_text()
    assert '"event": "broker_registered"' not in log[log.rindex('"event": "broker_unregistered"') :]
    cluster.wait_for(
        "broker 4 gone from node 1's metadata",
        lambda: True if 4 not in {b["id"] for b in cluster.nodes[1].get("/v1/brokers")} else None,
    )
