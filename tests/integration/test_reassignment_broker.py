"""The broker side of partition reassignment on real `kraft serve` processes: a throttled move
is held to the replication rates set at run time (dynamic broker configs) while an unthrottled
one is fast, and a replica moved away while its broker was down leaves that broker's disk when
it comes back.

One combined node (the quorum, and a broker) and two broker-only nodes. The quota window is
2 samples of 1 s, so a throttled copy reaches its rate after 1 s rather than Kafka's 10.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from kio.schema.errors import ErrorCode

from bench.cluster import Cluster
from controller.client import incremental_alter_configs_request
from controller.records import ConfigResourceType
from net.client import NodeConnection
from tests.integration.test_replication import partition_state, wait_for_partition_state

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

RATE = 300_000
DATA_BYTES = 3_000_000
# What one follower fetch may take of a partition (replica.fetch.max.bytes' partition share):
# the quota is checked before a fetch and charged after, so it may overshoot by one.
FETCH_BYTES = 1 << 20
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("reassign-broker")
    cluster = Cluster.combined(
        root,
        1,
        **{
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            "auto.leader.rebalance.enable": "false",
            "replication.quota.window.num": "2",
            "replication.quota.window.size.seconds": "1",
        },
    )
    cluster.add_brokers([2, 3])
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(3), timeout=60)
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="module")
def reassigner(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        yield client
    finally:
        client.close()


def create_with_data(cluster: Cluster, topic: str, replicas: list[int], size: int) -> None:
    """`topic`, one partition on `replicas`, holding `size` bytes of record values."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(30)
    wait_for_partition_state(cluster, 1, topic, "topic led", lambda s: s["leader"] >= 0)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    value = b"v" * 1000
    for _ in range(size // len(value)):
        producer.produce(topic, value)
        producer.poll(0)
    assert producer.flush(60) == 0


def set_cluster_rates(cluster: Cluster, rate: int | None) -> None:
    """Both throttle rates for every broker (None: deleted), as `kafka-configs --entity-default`
    does; sent by our own client, as confluent-kafka and kafka-python refuse the empty broker
    name."""
    rates = {} if rate is None else dict.fromkeys(RATE_KEYS, str(rate))
    request = incremental_alter_configs_request(
        "",
        rates,
        () if rate is not None else RATE_KEYS,
        resource_type=ConfigResourceType.BROKER,
    )

    async def send() -> Any:
        async with NodeConnection("127.0.0.1", cluster.nodes[2].broker_port or 0) as connection:
            return await connection.send(request)

    (result,) = asyncio.run(send()).responses
    assert result.error_code == ErrorCode.none, result.error_message


def rates_at(cluster: Cluster, broker_id: int, value: str) -> dict[str, Any] | None:
    """Broker `broker_id`'s configs (DescribeConfigs, which that broker answers) once both
    throttle rates there are `value`."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    (described,) = admin.describe_configs([resource]).values()
    configs: dict[str, Any] = described.result(30)
    return configs if all(configs[key].value == value for key in RATE_KEYS) else None


def move(
    cluster: Cluster,
    reassigner: KafkaAdminClient,
    topic: str,
    target: list[int],
    progress: list[int] | None = None,
) -> float:
    """Seconds from asking for the move of `topic` (led by broker 1) to `target` until it
    completed; `progress` gets the bytes behind of the first target replica as the leader
    showed them while the move went on (when given)."""
    started = time.monotonic()
    partition = TopicPartition(topic, 0)
    assert reassigner.alter_partition_reassignments({partition: target}) == {partition: None}
    if progress is not None:

        def copying() -> bool | None:
            view = cluster.nodes[1].get(f"/v1/topics/{topic}/partitions/0/log", timeout=5)
            behind = view["bytes_behind"].get(str(target[0]), -1)
            if behind > 0 and (not progress or behind != progress[-1]):
                progress.append(behind)
            return True if len(progress) >= 2 else None

        cluster.wait_for(f"{topic}'s move under way", copying, timeout=30)

    def done() -> bool | None:
        state = partition_state(cluster, 1, topic)
        return True if state["replicas"] == target and state["isr"] == target else None

    cluster.wait_for(f"{topic} moved to {target}", done, timeout=60)
    return time.monotonic() - started


def test_a_throttled_move_is_held_to_the_rate_and_an_unthrottled_one_is_not(
    cluster: Cluster, reassigner: KafkaAdminClient
) -> None:
    create_with_data(cluster, "throttled", [1], DATA_BYTES)
    create_with_data(cluster, "free", [1], DATA_BYTES)

    set_cluster_rates(cluster, RATE)
    for broker_id in cluster.broker_ids:
        configs = cluster.wait_for(
            f"broker {broker_id} applied the rates",
            partial(rates_at, cluster, broker_id, str(RATE)),
        )
        for key in RATE_KEYS:
            assert configs[key].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
            assert not configs[key].is_read_only
    # The rates alone throttle the move: no topic lists, the new replica is being added.
    progress: list[int] = []
    throttled = move(cluster, reassigner, "throttled", [2], progress)
    # The leader's view of the new replica: bytes behind, going down as it copies.
    assert 1.1 * DATA_BYTES >= progress[0] > progress[-1] > 0, progress
    # 3 MB at 300 KB/s, less the first second's worth and one fetch's overshoot: 5.5 s.
    assert throttled >= 0.75 * (DATA_BYTES - RATE - FETCH_BYTES) / RATE, throttled

    set_cluster_rates(cluster, None)
    for broker_id in cluster.broker_ids:
        cluster.wait_for(
            f"broker {broker_id} dropped the rates",
            partial(rates_at, cluster, broker_id, str(2**63 - 1)),
        )
    unthrottled = move(cluster, reassigner, "free", [3])
    assert unthrottled < throttled / 2, (unthrottled, throttled)


def test_a_replica_moved_away_while_its_broker_was_down_is_deleted_when_it_returns(
    cluster: Cluster,
) -> None:
    topic = "left-behind"
    create_with_data(cluster, topic, [1, 3], 10_000)
    directory = cluster.nodes[3].data_dir / f"{topic}-0"
    cluster.wait_for("broker 3 has the replica", lambda: directory.is_dir() or None)
    cluster.kill(3)

    def fenced() -> bool | None:
        brokers = {broker["id"]: broker for broker in cluster.nodes[1].get("/v1/brokers")}
        return True if brokers[3]["fenced"] else None

    # Once fenced, the brokers' metadata no longer offers broker 3 to clients; this client
    # never met it (kafka-python keeps sending admin requests to a broker it knows).
    cluster.wait_for("broker 3 fenced", fenced)
    reassigner = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{cluster.nodes[1].broker_port}", request_timeout_ms=30_000
    )
    try:
        move(cluster, reassigner, topic, [1, 2])
    finally:
        reassigner.close()
    assert directory.is_dir()

    cluster.start(3)
    cluster.wait_for("broker 3 back", lambda: cluster.brokers_unfenced(3), timeout=60)
    cluster.wait_for("the moved replica's log deleted", lambda: not directory.exists() or None)
    log_text = cluster.nodes[3].log_path.read_text()
    assert "replica_unassigned" in log_text
    assert partition_state(cluster, 1, topic)["replicas"] == [1, 2]
