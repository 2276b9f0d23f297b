"""The active controller on real `kraft serve` processes, spoken to over the Kafka protocol.

Brokers are played by the test: it registers them and heartbeats for them exactly as a broker
does (the broker itself is a later piece), and reads every node's metadata image back through
the admin API, so what is checked is what the replicated metadata log says.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_topics.v7.response import CreateTopicsResponse
from kio.schema.errors import ErrorCode

from bench.broker_stand_in import BrokerStandIn, metadata, unfenced
from bench.cluster import Cluster
from controller.client import (
    ControllerClient,
    broker_heartbeat_request,
    create_topics_request,
)
from net.api_keys import ApiKey
from net.client import NodeConnection
from net.protocol import field_entity_type, make_entity, request_schema


def topics_of(view: dict[str, Any]) -> dict[str, Any]:
    return {topic["name"]: topic for topic in view["topics"]}


@contextlib.asynccontextmanager
async def running(cluster: Cluster) -> AsyncIterator[ControllerClient]:
    cluster.start_all()
    client = ControllerClient(cluster.voters(), client_id="test", request_timeout=3.0)
    try:
        await asyncio.to_thread(cluster.wait_for, "a quorum leader", cluster.agreed_leader)
        yield client
    finally:
        await client.close()
        cluster.stop_all()


def request(api_key: int, version: int, **values: Any) -> Any:
    schema = request_schema(api_key, version)
    assert schema is not None
    return make_entity(schema, **values)


def alter_partition_request(
    leader: BrokerStandIn, topic_id: str, partition: dict[str, Any], isr: list[int]
) -> Any:
    schema = request_schema(ApiKey.ALTER_PARTITION, 3)
    assert schema is not None
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    state_type = field_entity_type(partition_type, "new_isr_with_epochs")
    return request(
        ApiKey.ALTER_PARTITION,
        3,
        broker_id=leader.broker_id,
        broker_epoch=leader.broker_epoch,
        topics=(
            make_entity(
                topic_type,
                topic_id=uuid.UUID(topic_id),
                partitions=(
                    make_entity(
                        partition_type,
                        partition_index=partition["partition"],
                        leader_epoch=partition["leader_epoch"],
                        new_isr_with_epochs=tuple(
                            make_entity(state_type, broker_id=b, broker_epoch=-1) for b in isr
                        ),
                        leader_recovery_state=0,
                        partition_epoch=partition["partition_epoch"],
                    ),
                ),
            ),
        ),
    )


def single_controller(root: Path, **extra: str) -> Cluster:
    """One controller with short broker sessions, so fencing happens within a test."""
    return Cluster.controllers(
        root,
        1,
        **{"broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300", **extra},
    )


async def test_broker_lifecycle_topics_and_elections_over_the_wire(tmp_path: Path) -> None:
    cluster = single_controller(tmp_path, **{"auto.leader.rebalance.enable": "false"})
    async with running(cluster) as client:
        a, b = BrokerStandIn(cluster, client, 11), BrokerStandIn(cluster, client, 12)
        for broker in (a, b):
            assert (await broker.register()).error_code == ErrorCode.none
        assert a.broker_epoch != b.broker_epoch
        await unfenced([a, b])
        a.start_heartbeats()
        b.start_heartbeats()

        # A second incarnation of a live broker is refused; a wrong epoch is stale.
        intruder = BrokerStandIn(cluster, client, 11)
        refused = await intruder.register()
        assert refused.error_code == ErrorCode.duplicate_broker_registration
        stale = await client.send(broker_heartbeat_request(11, a.broker_epoch + 1000, 0))
        assert stale.error_code == ErrorCode.stale_broker_epoch

        created = await client.send(create_topics_request([("orders", 4, 2)]))
        assert [t.error_code for t in created.topics] == [ErrorCode.none]
        again = await client.send(create_topics_request([("orders", 4, 2), ("wide", 1, 3)]))
        assert [t.error_code for t in again.topics] == [
            ErrorCode.topic_already_exists,
            ErrorCode.invalid_replication_factor,
        ]
        orders = topics_of(metadata(cluster, 1))["orders"]
        assert orders["topic_id"] == str(created.topics[0].topic_id)
        leaders = [p["leader"] for p in orders["partitions"]]
        assert sorted(leaders) == [11, 11, 12, 12]
        assert all(p["isr"] == p["replicas"] for p in orders["partitions"])

        blocks = [
            await client.send(
                request(ApiKey.ALLOCATE_PRODUCER_IDS, 0, broker_id=11, broker_epoch=a.broker_epoch)
            )
            for _ in range(2)
        ]
        assert [(r.producer_id_start, r.producer_id_len) for r in blocks] == [
            (0, 1000),
            (1000, 1000),
        ]

        # Broker 12 stops heartbeating: it is fenced after the session timeout and its
        # partitions move to 11, the only ISR member left.
        await b.stop_heartbeats()

        def fenced() -> dict[str, Any] | None:
            view = metadata(cluster, 1)
            brokers = {broker["id"]: broker for broker in view["brokers"]}
            return view if brokers[12]["fenced"] else None

        view = await asyncio.to_thread(cluster.wait_for, "broker 12 fenced", fenced, 10.0)
        for partition in topics_of(view)["orders"]["partitions"]:
            assert partition["leader"] == 11
            assert partition["isr"] == [11]

        # A new incarnation of 12 after a clean shutdown comes back; the leader (11) adds it
        # to the ISR; the preferred election gives it back its partitions.
        b2 = BrokerStandIn(cluster, client, 12)
        assert (await b2.register(previous_broker_epoch=b.broker_epoch)).error_code == (
            ErrorCode.none
        )
        await unfenced([b2])
        b2.start_heartbeats()
        orders = topics_of(metadata(cluster, 1))["orders"]
        for partition in orders["partitions"]:
            answer = await client.send(
                alter_partition_request(a, orders["topic_id"], partition, [11, 12])
            )
            result = answer.topics[0].partitions[0]
            assert result.error_code == ErrorCode.none
            assert sorted(result.isr) == [11, 12]
            assert result.partition_epoch == partition["partition_epoch"] + 1
            # The same request again is fenced by the partition epoch it carries.
            replay = await client.send(
                alter_partition_request(a, orders["topic_id"], partition, [11, 12])
            )
            assert replay.topics[0].partitions[0].error_code == ErrorCode.invalid_update_version
        elected = await client.send(
            request(ApiKey.ELECT_LEADERS, 2, election_type=0, topic_partitions=None)
        )
        moved = [
            (result.topic, p.partition_id, p.error_code)
            for result in elected.replica_election_results
            for p in result.partition_result
        ]
        orders = topics_of(metadata(cluster, 1))["orders"]
        preferred_12 = [p["partition"] for p in orders["partitions"] if p["replicas"][0] == 12]
        assert sorted(moved) == [("orders", p, ErrorCode.none) for p in preferred_12]
        assert all(p["leader"] == p["replicas"][0] for p in orders["partitions"])

        # Controlled shutdown of 12: its leaderships move to 11 before it may stop.
        await b2.stop_heartbeats()

        async def until_released() -> None:
            while not (await b2.heartbeat(want_shut_down=True)).should_shut_down:
                await asyncio.sleep(0.1)

        await asyncio.wait_for(until_released(), 10)
        view = metadata(cluster, 1)
        assert {broker["id"]: broker["fenced"] for broker in view["brokers"]} == {
            11: False,
            12: True,
        }
        for partition in topics_of(view)["orders"]["partitions"]:
            assert partition["leader"] == 11
            assert partition["isr"] == [11]
        await a.stop_heartbeats()


async def test_automatic_preferred_leader_election(tmp_path: Path) -> None:
    cluster = single_controller(tmp_path, **{"leader.imbalance.check.interval.seconds": "1"})
    async with running(cluster) as client:
        a, b = BrokerStandIn(cluster, client, 11), BrokerStandIn(cluster, client, 12)
        for broker in (a, b):
            await broker.register()
        await unfenced([a, b])
        a.start_heartbeats()
        created = await client.send(create_topics_request([("events", 2, 2)]))
        assert created.topics[0].error_code == ErrorCode.none
        # 12 never heartbeats again: fenced, its partition moves to 11.
        await asyncio.to_thread(
            cluster.wait_for,
            "broker 12 fenced",
            lambda: all(
                p["leader"] == 11 for p in topics_of(metadata(cluster, 1))["events"]["partitions"]
            ),
            10.0,
        )
        b2 = BrokerStandIn(cluster, client, 12)
        await b2.register(previous_broker_epoch=b.broker_epoch)
        await unfenced([b2])
        b2.start_heartbeats()
        events = topics_of(metadata(cluster, 1))["events"]
        for partition in events["partitions"]:
            answer = await client.send(
                alter_partition_request(a, events["topic_id"], partition, [11, 12])
            )
            assert answer.topics[0].partitions[0].error_code == ErrorCode.none
        # Nobody asks: the controller's periodic check moves leadership back.
        await asyncio.to_thread(
            cluster.wait_for,
            "preferred leaders restored",
            lambda: all(
                p["leader"] == p["replicas"][0]
                for p in topics_of(metadata(cluster, 1))["events"]["partitions"]
            ),
            10.0,
        )
        for broker in (a, b2):
            await broker.stop_heartbeats()


@pytest.mark.timeout(180)
async def test_failover_during_topic_creation_keeps_every_committed_topic_whole(
    tmp_path: Path,
) -> None:
    # Small snapshot interval: the image is snapshotted several times during the test, and the
    # restarted node may catch up from a snapshot.
    cluster = Cluster.controllers(
        tmp_path,
        3,
        **{
            "broker.session.timeout.ms": "6000",
            "metadata.log.max.record.bytes.between.snapshots": "16384",
        },
    )
    async with running(cluster) as client:
        brokers = [BrokerStandIn(cluster, client, broker_id) for broker_id in (11, 12, 13)]
        for broker in brokers:
            assert (await broker.register()).error_code == ErrorCode.none
        await unfenced(brokers)
        for broker in brokers:
            broker.start_heartbeats()

        acknowledged: list[str] = []
        names = [f"topic-{index:03d}" for index in range(80)]

        async def create_all() -> None:
            for name in names:
                response = await client.send(create_topics_request([(name, 3, 3)]))
                code = response.topics[0].error_code
                # A retry after the failover may find the topic the old controller committed.
                assert code in (ErrorCode.none, ErrorCode.topic_already_exists), code
                acknowledged.append(name)

        # Only the active controller takes requests; the others point elsewhere.
        active = client.active_controller
        for voter, (host, port) in cluster.voters().items():
            if voter != active:
                connection = NodeConnection(host, port)
                try:
                    refused = await connection.send(create_topics_request([("elsewhere", 1, 3)]))
                finally:
                    await connection.close()
                # CreateTopics at the controllers' highest version, 7.
                assert isinstance(refused, CreateTopicsResponse)
                assert [t.error_code for t in refused.topics] == [ErrorCode.not_controller]

        creating = asyncio.create_task(create_all())
        while len(acknowledged) < 15:
            await asyncio.sleep(0.01)
        victim = client.active_controller
        assert victim is not None
        cluster.kill(victim)
        await asyncio.wait_for(creating, 60)
        assert acknowledged == names
        assert client.active_controller != victim

        survivors = cluster.running()

        def converged() -> dict[str, Any] | None:
            views = [metadata(cluster, node_id) for node_id in survivors]
            if len({view["metadata_offset"] for view in views}) != 1:
                return None
            return views[0]

        view = await asyncio.to_thread(cluster.wait_for, "survivors agree", converged, 20.0)
        topics = topics_of(view)
        assert sorted(topics) == names
        for topic in topics.values():
            assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
            for partition in topic["partitions"]:
                assert sorted(partition["replicas"]) == [11, 12, 13]
                assert partition["leader"] in partition["replicas"]
                assert partition["isr"] == partition["replicas"]

        # The killed controller comes back and replays the same metadata.
        cluster.start(victim)

        def caught_up() -> bool:
            with contextlib.suppress(OSError, ValueError):
                return topics_of(metadata(cluster, victim)) == topics_of(
                    metadata(cluster, survivors[0])
                )
            return False

        await asyncio.to_thread(cluster.wait_for, "restarted node caught up", caught_up, 20.0)
        for broker in brokers:
            await broker.stop_heartbeats()
