"""The two scenarios of hw-leo-leader-epoch.txt on real processes (SIGKILL, restarts).

- Data loss: a follower that restarts keeps what it had beyond its (stale) high watermark, so
  when the leader then dies and it takes over, no committed message is lost.
- Data diverge: both replicas crash and the one missing the other's last message returns first
  and leads in a new epoch; the other returns, truncates its orphaned message where the
  leader's epoch begins, and the logs end up byte-identical. With the reference's setting (no
  ELR) the last ISR member leads again; with the defaults (ELR, balanced unclean recovery) the
  returning replica is elected by unclean recovery, with the same end.

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

from bench.cluster import Cluster
from tests.integration.test_produce_consume import kcat_consume
from tests.integration.test_replication import segment_bytes, wait_for_partition_state

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Three combined nodes with short broker sessions, plus a test's own settings (indirect
    parametrization)."""
    settings = {"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500"}
    settings.update(getattr(request, "param", {}))
    cluster = Cluster.combined(tmp_path, 3, **settings)
    with cluster.started(20.0):
        yield cluster


def two_replica_topic(cluster: Cluster, name: str) -> tuple[int, int, int]:
    """A one-partition topic on the two nodes that do not lead the quorum, led by the first:
    (leader, follower, quorum leader)."""
    quorum_leader = cluster.wait_for("a quorum leader", cluster.agreed_leader)[0]
    leader, follower = [n for n in sorted(cluster.nodes) if n != quorum_leader]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, 1, replica_assignment=[[leader, follower]])
    admin.create_topics([topic])[name].result(30)
    wait_for_partition_state(
        cluster, quorum_leader, name, f"{name} led by {leader}", lambda s: s["leader"] == leader
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
    wait_for_partition_state(
        cluster, observer, topic, f"{topic} led by {leader}", lambda s: s["leader"] == leader, 30.0
    )


def reregistered(cluster: Cluster, observer: int, node_id: int, old_epoch: int) -> None:
    def check() -> bool:
        brokers = cluster.brokers_unfenced(observer)
        return brokers is not None and brokers[node_id]["epoch"] != old_epoch

    cluster.wait_for(f"broker {node_id} registered again", check, 30.0)


def wait_for_isr(cluster: Cluster, observer: int, topic: str, isr: list[int]) -> None:
    wait_for_partition_state(
        cluster, observer, topic, f"{topic} ISR {isr}", lambda s: sorted(s["isr"]) == isr, 30.0
    )


async def test_data_loss_scenario_a_restarted_follower_keeps_committed_messages(
    cluster: Cluster,
) -> None:
    leader, follower, observer = await asyncio.to_thread(two_replica_topic, cluster, "loss")
    await asyncio.to_thread(produce, cluster, "loss", ["m1", "m2"], "all")
    # The follower has m2 (acks=all), but its high watermark checkpoint is older: it crashes
    # and restarts. It must not truncate to that high watermark.
    unfenced = cluster.brokers_unfenced(observer)
    assert unfenced is not None
    old_epoch = unfenced[follower]["epoch"]
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


@pytest.mark.parametrize(
    "cluster",
    [{"eligible.leader.replicas.enable": "false"}, {}],
    ids=["without-elr", "defaults"],
    indirect=True,
)
async def test_data_diverge_scenario_the_returning_replica_truncates_its_orphaned_tail(
    cluster: Cluster,
) -> None:
    """Both replicas crash; B, which lacks A's last message, returns first and leads.

    Without the ELR (the reference's setting) the last ISR member stays in the ISR while it is
    down, and leads again when it returns, even after an unclean shutdown. With the defaults
    (ELR on, balanced recovery) B's new incarnation registers without a clean shutdown and
    leaves the ISR for the LastKnownELR: no clean election is possible, and balanced unclean
    recovery asks B, the only LastKnownELR member, for its log and elects it (a potential
    data-loss event). Either way A returns as a follower and converges.
    """
    elr_enabled = "eligible.leader.replicas.enable" not in cluster.extra
    a, b, observer = await asyncio.to_thread(two_replica_topic, cluster, "diverge")
    await asyncio.to_thread(produce, cluster, "diverge", ["m1"], "all")
    # B stops fetching (its parked fetch is answered empty after the follower's wait), so A
    # alone takes m2 (acks=1): A's log is m1 m2, B's is m1.
    cluster.pause(b)
    await asyncio.sleep(1.5)
    await asyncio.to_thread(produce, cluster, "diverge", ["m2"], "1")
    cluster.kill(a)
    cluster.resume(b)
    await asyncio.to_thread(wait_for_leader, cluster, observer, "diverge", b)
    # B crashes too. It comes back first and leads again in a new leader epoch, and takes m3
    # at the offset where A has m2.
    cluster.kill(b)
    cluster.start(b)
    await asyncio.to_thread(
        wait_for_partition_state,
        cluster,
        observer,
        "diverge",
        "B leads again",
        lambda state: state["leader"] == b and state["leader_epoch"] >= 2,
        30.0,
    )
    recoveries = [
        event
        for event in cluster.nodes[observer].get("/v1/events")
        if event["type"] == "unclean_recovery" and event["topic"] == "diverge"
    ]
    if elr_enabled:
        [recovery] = recoveries
        assert (recovery["strategy"], recovery["leader"]) == ("balanced", b)
        assert [r["broker"] for r in recovery["replica_logs"]] == [b]
    else:
        assert recoveries == []
    await asyncio.to_thread(produce, cluster, "diverge", ["m3"], "1")
    assert b"m2" in segment_bytes(cluster, a, "diverge", 0)

    # A returns as a follower: the leader epochs show where the logs part, A drops m2 and
    # takes m3; the ISR heals and the logs are byte-identical.
    cluster.start(a)
    await asyncio.to_thread(wait_for_isr, cluster, observer, "diverge", sorted([a, b]))
    await asyncio.to_thread(
        cluster.wait_for,
        "identical replicas",
        lambda: segment_bytes(cluster, a, "diverge", 0) == segment_bytes(cluster, b, "diverge", 0),
        10.0,
    )
    assert b"m2" not in segment_bytes(cluster, a, "diverge", 0)
    read = await asyncio.to_thread(kcat_consume, cluster, "diverge")
    assert [(offset, value) for _, offset, value in read] == [(0, "m1"), (1, "m3")]
