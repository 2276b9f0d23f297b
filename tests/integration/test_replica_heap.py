"""A real node keeps its replicas' objects out of the garbage collector's walks (frozen as they
are hosted), and walks them once after many are gone, for any reference cycle they left: once a
topic of RECLAIM_AFTER_STOPPED partitions is deleted, the node collects its whole heap once,
after the last of them is gone (never in the middle of the change), and says so
(`gc_reclaimed`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from node.frozen_heap import RECLAIM_AFTER_STOPPED

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster.combined(tmp_path_factory.mktemp("replica-heap"), 1).started() as cluster:
        yield cluster


def named(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    return [event for event in cluster.nodes[1].log_events() if event["event"] == name]


def test_the_heap_of_deleted_replicas_is_collected_once_their_deletion_is_applied(
    node: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic("churn", RECLAIM_AFTER_STOPPED, 1)])["churn"].result(60)
    # Hosted by the node's replica manager (it applies the metadata in slices), not only in
    # the metadata: a deletion applied before the last replicas were hosted would stop fewer
    # than were created.
    node.wait_for(
        "every replica hosted",
        lambda: len(named(node, "partition_became_leader")) == RECLAIM_AFTER_STOPPED,
        60,
    )
    assert named(node, "gc_reclaimed") == []

    admin.delete_topics(["churn"], operation_timeout=30)["churn"].result(60)
    node.wait_for("the heap reclaimed", lambda: named(node, "gc_reclaimed"), 60)
    logged = [event["event"] for event in node.nodes[1].log_events()]
    assert logged.count("gc_reclaimed") == 1
    assert logged.count("partition_replica_deleted") == RECLAIM_AFTER_STOPPED
    last_deleted = max(i for i, name in enumerate(logged) if name == "partition_replica_deleted")
    assert logged.index("gc_reclaimed") > last_deleted
    (reclaimed,) = named(node, "gc_reclaimed")
    assert reclaimed["replicas_stopped"] == RECLAIM_AFTER_STOPPED
