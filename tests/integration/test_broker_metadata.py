"""Brokers on real `kraft serve` processes (broker and controller roles in each): they register
with the active controller, are unfenced once caught up, answer Metadata to real Kafka clients
and forward admin requests to the controller; a clean restart registers with its old epoch."""

from __future__ import annotations

import asyncio
import json
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as PythonNewTopic

from bench.cluster import Cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path, 3, **{"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
    )
    cluster.start_all()
    try:
        yield cluster
    finally:
        cluster.stop_all()


def log_events(cluster: Cluster, node_id: int, event: str) -> list[dict[str, Any]]:
    lines = cluster.nodes[node_id].log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return [e for e in events if e.get("event") == event]


async def test_clients_see_the_brokers_and_create_topics_through_any_broker(
    cluster: Cluster,
) -> None:
    await asyncio.to_thread(cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=3)])
    futures["orders"].result(timeout=30)
    duplicate = admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        duplicate["orders"].result(timeout=30)

    def orders_everywhere() -> Any:
        metadata = admin.list_topics(timeout=10)
        topic = metadata.topics.get("orders")
        if topic is None or topic.error is not None or len(topic.partitions) != 6:
            return None
        return metadata

    metadata = await asyncio.to_thread(cluster.wait_for, "topic in metadata", orders_everywhere)
    assert sorted(metadata.brokers) == [1, 2, 3]
    partitions = metadata.topics["orders"].partitions
    leaders = [partitions[p].leader for p in range(6)]
    # Preferred leaders spread evenly: two partitions lead on each broker.
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    for partition in partitions.values():
        assert sorted(partition.replicas) == [1, 2, 3]
        assert sorted(partition.isrs) == [1, 2, 3]

    # kafka-python's admin client sends CreateTopics to the controller id Metadata names (a
    # broker), which forwards it.
    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        python_admin.create_topics([PythonNewTopic("payments", 2, 2)])
        await asyncio.to_thread(
            cluster.wait_for,
            "payments in metadata",
            lambda: "payments" in python_admin.list_topics(),
        )
        python_admin.delete_topics(["payments"])
    finally:
        python_admin.close()
    # The admin API reads the same image: the topic with its id and partitions, 404 otherwise.
    orders = cluster.nodes[3].get("/v1/topics/orders")
    assert orders["topic_id"] == cluster.nodes[1].get("/v1/topics/orders")["topic_id"]
    assert orders["topic_id"] != "00000000-0000-0000-0000-000000000000"
    assert [p["partition"] for p in orders["partitions"]] == list(range(6))
    with pytest.raises(urllib.error.HTTPError) as missing:
        cluster.nodes[3].get("/v1/topics/nowhere")
    assert missing.value.code == 404
    assert json.loads(missing.value.read())["error"] == "not_found"
    await asyncio.to_thread(
        cluster.wait_for,
        "payments deleted",
        lambda: "payments" not in {t["name"] for t in cluster.nodes[2].get("/v1/topics")},
    )


async def test_clean_restart_registers_with_the_previous_broker_epoch(cluster: Cluster) -> None:
    before = await asyncio.to_thread(cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced)
    assert cluster.terminate(3) == 0
    cluster.start(3)

    def re_registered() -> dict[int, Any] | None:
        known = cluster.brokers_unfenced()
        if known is None or known[3]["epoch"] == before[3]["epoch"]:
            return None
        return known

    after = await asyncio.to_thread(cluster.wait_for, "broker 3 back", re_registered)
    assert after[3]["incarnation_id"] != before[3]["incarnation_id"]
    (registered,) = log_events(cluster, 3, "broker_registered")[-1:]
    assert registered["previous_broker_epoch"] == before[3]["epoch"]
    assert registered["broker_epoch"] == after[3]["epoch"]


async def test_a_create_topics_slower_than_the_controller_request_timeout_is_sent_once(
    tmp_path: Path,
) -> None:
    # The active controller stalls (SIGSTOP) for longer than the 0.8 s request timeout while
    # the CreateTopics is forwarded to it: the forwarding broker's heartbeats (every 0.3 s)
    # time out meanwhile and close their connection. The forwarded CreateTopics waits on
    # connections of its own, so it is neither lost nor sent again (which would answer
    # TOPIC_ALREADY_EXISTS for the topic it created). (Creating 3,000 replicas used to stall
    # every node long enough; their creation no longer holds the event loop.)
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{"controller.quorum.request.timeout.ms": "800", "broker.heartbeat.interval.ms": "300"},
    )
    cluster.start_all()
    try:
        await asyncio.to_thread(cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced)
        leader = await asyncio.to_thread(cluster.wait_for, "a quorum leader", cluster.agreed_leader)
        controller = leader[0]
        forwarder = cluster.nodes[min(set(cluster.nodes) - {controller})]
        # Each broker names itself the controller: the admin client asks the forwarder.
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{forwarder.broker_port}"})
        futures = admin.create_topics(
            [NewTopic("wide", num_partitions=3000, replication_factor=3)],
            operation_timeout=60,
            request_timeout=90,
        )
        cluster.pause(controller)
        # Under the followers' fetch timeout (2 s): the quorum keeps its leader.
        await asyncio.sleep(1.5)
        cluster.resume(controller)
        await asyncio.to_thread(futures["wide"].result, 90)
        timed_out = [
            event
            for node_id in cluster.nodes
            for event in log_events(cluster, node_id, "kafka_request_timed_out")
        ]
        assert timed_out, "no request to the controller timed out: the case was not exercised"
        requested = [
            event
            for node_id in cluster.nodes
            for event in log_events(cluster, node_id, "create_topics_requested")
            if event["topics"] == ["wide"]
        ]
        assert len(requested) == 1
    finally:
        cluster.stop_all()
