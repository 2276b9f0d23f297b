"""Topic identity across a broker's absence, on real processes: a topic deleted (and created
again under the same name) while a broker was down never has its old records served by that
broker once it is back, and its old log leaves that broker's disk.

Three combined nodes; the broker that goes down is not the quorum leader, so the metadata
quorum keeps its leader while it is away.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from storage.partition_metadata import read_partition_metadata
from tests.integration.test_leader_epoch_scenarios import produce, wait_for_isr, wait_for_leader
from tests.integration.test_produce_consume import READ_ALL
from tests.integration.test_replication import segment_bytes

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Three combined nodes with short broker sessions, so a killed one is fenced soon."""
    cluster = Cluster.combined(
        tmp_path, 3, **{"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500"}
    )
    with cluster.started(20.0):
        yield cluster


def absent_broker_and_observer(cluster: Cluster) -> tuple[int, int]:
    """A broker that does not lead the metadata quorum (the one to take down), and another
    node to watch the metadata from."""
    quorum_leader = cluster.wait_for("a quorum leader", cluster.agreed_leader)[0]
    absent = next(node_id for node_id in sorted(cluster.nodes) if node_id != quorum_leader)
    return absent, quorum_leader


def create_led_by(cluster: Cluster, topic: str, leader: int) -> None:
    """A one-partition topic on all three brokers, `leader` its preferred replica."""
    replicas = [leader, *(node_id for node_id in sorted(cluster.nodes) if node_id != leader)]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(30)


def delete_topic(cluster: Cluster, observer: int, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    cluster.wait_for(f"{topic} deleted", lambda: topic not in topic_names(cluster, observer))


def produce_one_batch_each(cluster: Cluster, topic: str, values: list[str]) -> None:
    """acks=all, each value in a batch of its own (each is delivered before the next is sent),
    so that a replica's log can be cut at any of them."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    errors: list[Any] = []
    for value in values:
        producer.produce(
            topic, value.encode(), on_delivery=lambda e, _: errors.append(e) if e else None
        )
        assert producer.flush(30) == 0
    assert errors == []


def topic_names(cluster: Cluster, node_id: int) -> set[str]:
    return {topic["name"] for topic in cluster.nodes[node_id].get("/v1/topics")}


def topic_id(cluster: Cluster, node_id: int, topic: str) -> UUID:
    return UUID(cluster.nodes[node_id].get(f"/v1/topics/{topic}")["topic_id"])


def fenced(cluster: Cluster, observer: int, broker: int) -> bool:
    listed = cluster.nodes[observer].get(f"/v1/brokers/{broker}")
    return bool(listed["fenced"])


def elect_preferred(cluster: Cluster, observer: int, topic: str) -> None:
    body = {"type": "preferred", "partitions": [{"topic": topic, "partition": 0}]}
    node = cluster.nodes[observer]
    request = urllib.request.Request(
        f"http://{node.host}:{node.admin_port}/v1/elections",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        (result,) = json.loads(response.read())["results"]
    assert result["error"] in (None, "election_not_needed"), result


def consume_from(cluster: Cluster, node_id: int, topic: str) -> list[str]:
    """Every value of partition 0 of `topic`, read with kcat bootstrapped from `node_id` alone."""
    node = cluster.nodes[node_id]
    output = subprocess.run(
        ["kcat", "-C", "-b", f"{node.host}:{node.broker_port}", "-t", topic, "-p", "0", *READ_ALL],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return [line.split(" ", 2)[2] for line in output.splitlines()]


def node_events(cluster: Cluster, node_id: int, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of `node_id` for `event`."""
    found = []
    for line in cluster.nodes[node_id].log_path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == event:
            found.append(entry)
    return found


def topic_dirs(cluster: Cluster, node_id: int, topic: str) -> list[str]:
    """The directories of `topic`'s partitions on `node_id`, aside for deletion ones too."""
    return sorted(
        path.name
        for path in cluster.nodes[node_id].data_dir.iterdir()
        if path.is_dir() and path.name.startswith(f"{topic}-")
    )


def files_holding(cluster: Cluster, node_id: int, needle: bytes) -> list[Path]:
    """The files under `node_id`'s data directory that hold `needle`."""
    return [
        path
        for path in cluster.nodes[node_id].data_dir.rglob("*")
        if path.is_file() and needle in path.read_bytes()
    ]


async def test_a_topic_created_again_while_a_broker_was_down_is_never_served_old_records(
    cluster: Cluster,
) -> None:
    absent, observer = await asyncio.to_thread(absent_broker_and_observer, cluster)
    await asyncio.to_thread(create_led_by, cluster, "reborn", absent)
    await asyncio.to_thread(wait_for_leader, cluster, observer, "reborn", absent)
    # One batch each: a replica that kept this log would find it diverging from the new
    # topic's only where the new leader's first epoch ends, and keep the records below (its
    # last fetched epoch, 0, is the new topic's first too).
    await asyncio.to_thread(
        produce_one_batch_each, cluster, "reborn", [f"old-{i}" for i in range(20)]
    )
    await asyncio.to_thread(wait_for_isr, cluster, observer, "reborn", sorted(cluster.nodes))
    old_id = topic_id(cluster, observer, "reborn")
    assert read_partition_metadata(cluster.nodes[absent].data_dir / "reborn-0") == old_id

    cluster.kill(absent)
    await asyncio.to_thread(
        cluster.wait_for, f"broker {absent} fenced", lambda: fenced(cluster, observer, absent)
    )
    await asyncio.to_thread(delete_topic, cluster, observer, "reborn")
    # The same name, the absent broker again its preferred replica, and fewer records, so a
    # replica that kept the old log would be ahead of the new leader, not behind it, and
    # would keep old records below the new leader's log end.
    await asyncio.to_thread(create_led_by, cluster, "reborn", absent)
    new_id = topic_id(cluster, observer, "reborn")
    assert new_id != old_id
    await asyncio.to_thread(produce, cluster, "reborn", [f"new-{i}" for i in range(5)], "all")

    cluster.start(absent)
    await asyncio.to_thread(wait_for_isr, cluster, observer, "reborn", sorted(cluster.nodes))
    await asyncio.to_thread(elect_preferred, cluster, observer, "reborn")
    await asyncio.to_thread(wait_for_leader, cluster, observer, "reborn", absent)
    read = await asyncio.to_thread(consume_from, cluster, absent, "reborn")
    assert read == [f"new-{i}" for i in range(5)]

    absent_dir = cluster.nodes[absent].data_dir
    assert read_partition_metadata(absent_dir / "reborn-0") == new_id

    def identical() -> bool:
        return len({segment_bytes(cluster, node_id, "reborn", 0) for node_id in cluster.nodes}) == 1

    await asyncio.to_thread(cluster.wait_for, "identical replicas", identical, 20.0)
    # The old log went aside, then off the disk: no old record is anywhere on it.
    await asyncio.to_thread(
        cluster.wait_for,
        "the old log removed",
        lambda: topic_dirs(cluster, absent, "reborn") == ["reborn-0"],
    )
    assert files_holding(cluster, absent, b"old-") == []
    (deleted,) = node_events(cluster, absent, "partition_replica_deleted")
    assert (deleted["topic"], deleted["partition"], deleted["reason"]) == (
        "reborn",
        0,
        "topic_recreated",
    )
    assert (deleted["topic_id"], deleted["new_topic_id"]) == (str(old_id), str(new_id))
    assert Path(deleted["directory"]).parent == absent_dir


async def test_a_topic_deleted_while_a_broker_was_down_leaves_its_disk_after_a_restart(
    cluster: Cluster,
) -> None:
    absent, observer = await asyncio.to_thread(absent_broker_and_observer, cluster)
    await asyncio.to_thread(create_led_by, cluster, "gone", absent)
    await asyncio.to_thread(wait_for_leader, cluster, observer, "gone", absent)
    await asyncio.to_thread(produce, cluster, "gone", [f"gone-{i}" for i in range(10)], "all")
    await asyncio.to_thread(wait_for_isr, cluster, observer, "gone", sorted(cluster.nodes))
    old_id = topic_id(cluster, observer, "gone")

    # A clean stop this time: the log is flushed and whole when the broker comes back.
    assert cluster.terminate(absent) == 0
    await asyncio.to_thread(delete_topic, cluster, observer, "gone")
    assert topic_dirs(cluster, absent, "gone") == ["gone-0"]

    cluster.start(absent)
    await asyncio.to_thread(
        cluster.wait_for, f"{absent} ready", lambda: cluster.ready(absent), 30.0
    )
    await asyncio.to_thread(
        cluster.wait_for,
        "the deleted topic's log removed",
        lambda: topic_dirs(cluster, absent, "gone") == [],
    )
    assert files_holding(cluster, absent, b"gone-") == []
    (deleted,) = node_events(cluster, absent, "partition_replica_deleted")
    assert (deleted["topic"], deleted["reason"], deleted["topic_id"], deleted["new_topic_id"]) == (
        "gone",
        "topic_deleted",
        str(old_id),
        None,
    )
