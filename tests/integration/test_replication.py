"""Replication between real `kraft serve` processes: followers pull from leaders, the high
watermark moves once every ISR member has a record, and the replicas' logs are identical."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster
from tests.integration.test_produce_consume import (
    create_topic,
    kcat_consume,
    produce_with_librdkafka,
)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path, 3)
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def segment_bytes(cluster: Cluster, node_id: int, topic: str, partition: int) -> bytes:
    directory = cluster.nodes[node_id].data_dir / f"{topic}-{partition}"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


async def test_acks_all_is_replicated_to_every_replica(cluster: Cluster) -> None:
    await asyncio.to_thread(create_topic, cluster, "replicated", 3, replication_factor=3)
    messages = [(i % 3, f"message-{i}") for i in range(300)]
    await asyncio.to_thread(produce_with_librdkafka, cluster, "replicated", messages)

    read = await asyncio.to_thread(kcat_consume, cluster, "replicated")
    assert sorted((p, o) for p, o, _ in read) == sorted(
        (p, o) for p in range(3) for o in range(100)
    )

    def identical() -> bool:
        return all(
            len({segment_bytes(cluster, node_id, "replicated", p) for node_id in (1, 2, 3)}) == 1
            for p in range(3)
        )

    await asyncio.to_thread(cluster.wait_for, "identical replicas", identical, 10.0)
    assert len(segment_bytes(cluster, 1, "replicated", 0)) > 100 * len("message-0")
