"""A topic of more partitions than one commit of the metadata log holds is created as one
metadata transaction on a real node: its records are committed in several pieces, and the
node's image (so its replica manager, and every client's Metadata answer) takes the topic
only once the transaction's end is committed, whole."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from kraft.raft import RaftConfig

# More partition records than one Ready hands out: the commit is cut inside the topic.
PARTITIONS = RaftConfig().max_committed_per_ready + 500

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster.combined(tmp_path_factory.mktemp("metadata-transactions"), 1).started() as cluster:
        yield cluster


def test_a_wide_topic_reaches_the_image_whole(node: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic("wide", PARTITIONS, 1)])["wide"].result(60)
    node.wait_for(
        "every replica hosted",
        lambda: (
            sum(e["event"] == "partition_became_leader" for e in node.nodes[1].log_events())
            == PARTITIONS
        ),
        60,
    )
    logged = node.nodes[1].log_events()
    applied = [e.get("record") for e in logged if e["event"] == "metadata_applied"]
    assert applied.count("BeginTransactionRecord") == applied.count("EndTransactionRecord") == 1
    end = next(
        i
        for i, e in enumerate(logged)
        if e["event"] == "metadata_applied" and e.get("record") == "EndTransactionRecord"
    )
    first_hosted = next(i for i, e in enumerate(logged) if e["event"] == "partition_became_leader")
    # Not one replica taken up before the whole topic was in the image.
    assert first_hosted > end
    assert len(admin.list_topics("wide", timeout=10).topics["wide"].partitions) == PARTITIONS
