"""Unclean recovery on real processes (async-storage-and-recovery.txt 5.3, KIP-966).

A partition whose every replica restarted uncleanly has an empty ISR and ELR: no clean election
is ever possible, and the controller inspects the replicas' logs (GetReplicaLogInfo) to elect
one, by the topic's `unclean.recovery.strategy`:

- one node with default settings (balanced): its RF 1 partition leads again after `kill -9`
  and a restart, with every acknowledged record, and the event log reports the recovery;
- balanced waits for every LastKnownELR member, naming the missing one, and elects once it
  returns; proactive elects the best answer within its window; manual waits for the operator,
  who elects through the admin API and the CLI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.cluster import Cluster
from tests.integration.test_produce_consume import kcat_consume

pytestmark = pytest.mark.timeout(180)

FAST_SESSIONS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300"}


def create_topic(cluster: Cluster, name: str, assignment: list[int], **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, 1, replica_assignment=[assignment], config=configs)
    admin.create_topics([topic])[name].result(30)


def produce(cluster: Cluster, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    errors: list[Any] = []
    for value in values:
        producer.produce(
            topic, value.encode(), on_delivery=lambda e, _: errors.append(e) if e else None
        )
    assert producer.flush(30) == 0
    assert errors == []


def partition(cluster: Cluster, observer: int, topic: str) -> dict[str, Any]:
    state: dict[str, Any] = cluster.nodes[observer].get(f"/v1/topics/{topic}/partitions/0")
    return state


def events(cluster: Cluster, observer: int, topic: str, kind: str) -> list[dict[str, Any]]:
    return [
        event
        for event in cluster.nodes[observer].get("/v1/events")
        if event["type"] == kind and event.get("topic") == topic
    ]


@pytest.fixture
def single_node(tmp_path: Path) -> Iterator[Cluster]:
    """One combined node with every setting at its default."""
    cluster = Cluster.combined(tmp_path, 1)
    cluster.start_all()
    try:
        cluster.wait_for("node ready", lambda: cluster.ready(1), 30)
        yield cluster
    finally:
        cluster.stop_all()


async def test_one_node_with_defaults_leads_again_after_kill_9(single_node: Cluster) -> None:
    cluster = single_node
    await asyncio.to_thread(create_topic, cluster, "solo", [1])
    values = [f"m{i}" for i in range(100)]
    await asyncio.to_thread(produce, cluster, "solo", values)

    cluster.kill(1)
    cluster.start(1)
    await asyncio.to_thread(
        cluster.wait_for,
        "the partition led again",
        lambda: cluster.ready(1) and partition(cluster, 1, "solo")["leader"] == 1,
        10.0,
    )
    state = partition(cluster, 1, "solo")
    assert (state["isr"], state["elr"], state["last_known_elr"]) == ([1], [], [])
    read = await asyncio.to_thread(kcat_consume, cluster, "solo")
    assert [value for _, _, value in read] == values

    [recovery] = events(cluster, 1, "solo", "unclean_recovery")
    assert recovery["data_loss_possible"] is True
    assert recovery["strategy"] == "balanced"
    assert recovery["leader"] == 1
    assert [(r["broker"], r["log_end_offset"]) for r in recovery["replica_logs"]] == [(1, 100)]
    assert recovery["lost_offsets"] is None
    # The election itself is not reported as a second data-loss event.
    assert [e for e in cluster.nodes[1].get("/v1/events") if e["data_loss_possible"]] == [recovery]
