"""The "data loss" scenario of hw-leo-leader-epoch.txt on real processes (SIGKILL, restarts).

A follower that restarts keeps what it had beyond its (stale) high watermark, so
when the leader then dies and it takes over, no committed message is lost.
The "data diverge" resolution (a returning old leader truncating its unreplicated tail where
the new leader's epoch begins) is exercised by the leader failover test of test_replication.py.

Three combined nodes; the partition lives on the two that do not lead the metadata quorum, so
the quorum keeps a majority while one of them is down.
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
from tests.integration.test_replication import partition_state, segment_bytes

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500"},
    )
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def two_replica_topic(cluster: Cluster, name: str) -> tuple[int, int, int]:
    """A one-partition topic on the two nodes that do not lead the quorum, led by the first:
    (leader, follower, quorum leader)."""
    quorum_leader = cluster.wait_for("a quorum leader", cluster.agreed_leader)[0]
    leader, follower = [n for n in sorted(cluster.nodes) if n != quorum_leader]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, 1, replica_assignment=[[leader, follower]])
    admin.create_topics([topic])[name].result(30)
    cluster.wait_for(
        f"{name} led by {leader}",
        lambda: partition_state(cluster, quorum_leader, name)["leader"] == leader,
    )
    return leader, follower, quorum_leader


def produce(cluster: Cluster, topic: str, values: list[str], acks: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks})
    errors: list[Any] = []
    for value in values:
        producer.produce(
            topic, value.encode(), on_delivery=lambda e, _: errors.append(e) if e else None
        )
    assert producer.flush(30) == 0
    assert errors == []


def wait_for_leader(cluster: Cluster, observer: int, topic: str, leader: int) -> None:
    cluster.wait_for(
        f"{topic} led by {leader}",
        lambda: partition_state(cluster, observer, topic)["leader"] == leader,
        30.0,
    )


def reregistered(cluster: Cluster, observer: int, node_id: int, old_epoch: int) -> None:
    def check() -> bool:
        brokers = cluster.brokers_unfenced(observer)
        return brokers is not None and brokers[node_id]["epoch"] != old_epoch

    cluster.wait_for(f"broker {node_id} registered again", check, 30.0)


def wait_for_isr(cluster: Cluster, observer: int, topic: str, isr: list[int]) -> None:
    cluster.wait_for(
        f"{topic} ISR {isr}",
        lambda: sorted(partition_state(cluster, observer, topic)["isr"]) == isr,
        30.0,
    )


async def test_data_loss_scenario_a_restarted_follower_keeps_committed_messages(
    cluster: Cluster,
) -> None:
    leader, follower, observer = await asyncio.to_thread(two_replica_topic, cluster, "loss")
    await asyncio.to_thread(produce, cluster, "loss", ["m1", "m2"], "all")
    # The follower has m2 (acks=all), but its high watermark checkpoint is older: it crashes
    # and restarts. It must not truncate to that high watermark.
    old_epoch = cluster.brokers_unfenced(observer)[follower]["epoch"]  # type: ignore[index]
    cluster.kill(follower)
    cluster.start(follower)
    await asyncio.to_thread(reregistered, cluster, observer, follower, old_epoch)
    # Registered without a clean shutdown, it left the ISR; the leader adds it back once it
    # caught up, which is what lets it lead.
    await asyncio.to_thread(wait_for_isr, cluster, observer, "loss", sorted([leader, follower]))
    # Now the leader dies and the restarted follower takes over.
    cluster.kill(leader)
    await asyncio.to_thread(wait_for_leader, cluster, observer, "loss", follower)
    read = await asyncio.to_thread(kcat_consume, cluster, "loss")
    assert [value for _, _, value in read] == ["m1", "m2"]

    cluster.start(leader)
    await asyncio.to_thread(wait_for_isr, cluster, observer, "loss", sorted([leader, follower]))
    assert segment_bytes(cluster, leader, "loss", 0) == segment_bytes(cluster, follower, "loss", 0)
