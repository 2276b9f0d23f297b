"""Three named listeners per node, as Kafka deployments split their traffic: CLIENT
(SASL_SSL, SCRAM-SHA-512 only through a `listener.name.client.` override), REPLICATION (SSL
with client certificates required through a `listener.name.replication.` override) and
CONTROLLER (SASL_PLAINTEXT), with the StandardAuthorizer on. One 3-node cluster for the module.

Clients produce and consume through CLIENT with confluent-kafka; the replica fetchers can only
work on REPLICATION (they have no SASL user, which CLIENT requires), so a full ISR shows
replication runs there; Metadata answers each listener's own endpoints; a peer without
CLUSTER_ACTION is refused by the quorum and by GetReplicaLogInfo, and changes nothing."""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from bench.cluster import CLUSTER_ID, Cluster, free_ports
from bench.tls_certificates import SERVER_SUBJECT
from kraft.messages import FetchRequest, VoteRequest
from kraft.wire import describe_quorum_request, request_to_wire
from net.client import ClusterClient, KafkaConnectionError, NodeConnection
from net.replica_log_info import GetReplicaLogInfoRequest, TopicPartitions
from net.sasl import SaslClientCredentials
from net.tls import Pem, TlsSettings, client_context
from node.certificates import CertificateAuthority, KeyPair

pytestmark = pytest.mark.timeout(180)

ADMIN = SaslClientCredentials("SCRAM-SHA-512", "admin", "admin-secret")
MALLORY = SaslClientCredentials("SCRAM-SHA-512", "mallory", "mallory-secret")
TOPIC = "orders"


class Listeners:
    """The cluster and each node's port per listener."""

    def __init__(self, cluster: Cluster, ca: CertificateAuthority, node_keys: KeyPair) -> None:
        self.cluster = cluster
        self.ca = ca
        self.node_keys = node_keys
        self.client: dict[int, int] = {}
        self.replication: dict[int, int] = {}
        self.controller: dict[int, int] = {}

    def tls(self, key_pair: KeyPair | None = None) -> ssl.SSLContext:
        return client_context(
            TlsSettings(
                certificate_chain=None if key_pair is None else Pem(path=key_pair.certificate_path),
                private_key=None if key_pair is None else Pem(path=key_pair.key_path),
                trusted_certificates=Pem(path=self.ca.certificate_path),
            )
        )

    def confluent(self) -> dict[str, str | int | float | bool]:
        return {
            "bootstrap.servers": self.cluster.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": ADMIN.username,
            "sasl.password": ADMIN.password,
            "ssl.ca.location": str(self.ca.certificate_path),
        }


ADMIN_TOKEN = "listeners-admin-token"


def configure(root: Path, ca: CertificateAuthority, node_keys: KeyPair) -> Listeners:
    keystore = root / "node.keystore.pem"
    root.mkdir(parents=True, exist_ok=True)
    keystore.write_text(node_keys.key_pem + node_keys.certificate_pem)
    cluster = Cluster.combined(
        root,
        3,
        **{
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": (
                "CLIENT:SASL_SSL,REPLICATION:SSL,CONTROLLER:SASL_PLAINTEXT"
            ),
            "inter.broker.listener.name": "REPLICATION",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.location": str(ca.certificate_path),
            "ssl.client.auth": "none",
            "listener.name.replication.ssl.client.auth": "required",
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
            "inter.broker.sasl.username": "broker",
            "inter.broker.sasl.password": "broker-secret",
            "bootstrap.scram.credentials": "SCRAM-SHA-512=[name=admin,password=admin-secret]",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # The nodes: SASL user `broker` towards the controllers, their certificate's
            # subject on REPLICATION.
            "super.users": "User:broker;User:admin;User:CN=localhost",
            # With an authorizer the admin API answers only who it knows: the token's holder.
            "admin.token": ADMIN_TOKEN,
        },
    )
    cluster.name_listeners("CLIENT", "CONTROLLER")
    listeners = Listeners(cluster, ca, node_keys)
    for (node_id, node), replication_port in zip(
        cluster.nodes.items(), free_ports(len(cluster.nodes)), strict=True
    ):
        lines = node.config_path.read_text().splitlines()
        for index, line in enumerate(lines):
            if line.startswith("listeners="):
                lines[index] = f"{line},REPLICATION://127.0.0.1:{replication_port}"
                for item in line.removeprefix("listeners=").split(","):
                    name, _, address = item.partition("://")
                    port = int(address.rpartition(":")[2])
                    if name == "CONTROLLER":
                        listeners.controller[node_id] = port
        node.config_path.write_text("\n".join(lines) + "\n")
        node.admin_headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        assert node.broker_port is not None
        listeners.client[node_id] = node.broker_port
        listeners.replication[node_id] = replication_port
    return listeners


@pytest.fixture(scope="module")
def listeners(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    root = tmp_path_factory.mktemp("listeners")
    ca = CertificateAuthority(root / "ca")
    setup = configure(root / "cluster", ca, ca.issue("node", SERVER_SUBJECT, server=True))
    cluster = setup.cluster
    with cluster.started(60):
        yield setup


@pytest.fixture(scope="module")
def orders(listeners: Listeners) -> str:
    """A topic replicated on every node, written through CLIENT; its id."""
    admin = AdminClient(listeners.confluent())
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(30)
    producer = Producer({**listeners.confluent(), "acks": "all", "enable.idempotence": True})
    for index in range(20):
        producer.produce(TOPIC, value=f"order-{index}".encode())
    assert producer.flush(30) == 0
    topic_id: str = listeners.cluster.nodes[1].get(f"/v1/topics/{TOPIC}")["topic_id"]
    return topic_id


def test_clients_produce_and_consume_through_the_client_listener(
    listeners: Listeners, orders: str
) -> None:
    consumer = Consumer(
        {**listeners.confluent(), "group.id": "order-readers", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([TOPIC])
    values: list[bytes] = []
    try:
        for _ in range(60):
            for message in consumer.consume(20, timeout=1):
                assert message.error() is None, message.error()
                values.append(message.value() or b"")
            if len(values) >= 20:
                break
    finally:
        consumer.close()
    assert values == [f"order-{index}".encode() for index in range(20)]


def test_followers_replicate_on_the_replication_listener(listeners: Listeners, orders: str) -> None:
    """The fetchers have a client certificate and no SASL user: CLIENT would refuse them."""
    cluster = listeners.cluster

    def fully_replicated() -> bool | None:
        partition = cluster.nodes[1].get(f"/v1/topics/{TOPIC}/partitions/0")
        return sorted(partition["isr"]) == [1, 2, 3] or None

    cluster.wait_for("every replica in the ISR", fully_replicated, timeout=60)
    registered = cluster.nodes[2].get("/v1/brokers/3")["listeners"]
    assert f"CLIENT://127.0.0.1:{listeners.client[3]}" in registered
    assert f"REPLICATION://127.0.0.1:{listeners.replication[3]}" in registered


def test_metadata_advertises_the_listener_the_request_came_in_on(listeners: Listeners) -> None:
    async def brokers(port: int, tls: ssl.SSLContext, sasl: SaslClientCredentials | None) -> Any:
        async with ClusterClient(
            f"127.0.0.1:{port}", ssl_context=tls, sasl=sasl, connect_timeout=10
        ) as client:
            metadata: Any = await client.bootstrap()
        return {broker.node_id: broker.port for broker in metadata.brokers}

    for node_id in (1, 3):
        through_client = asyncio.run(brokers(listeners.client[node_id], listeners.tls(), ADMIN))
        assert through_client == listeners.client
        through_replication = asyncio.run(
            brokers(listeners.replication[node_id], listeners.tls(listeners.node_keys), None)
        )
        assert through_replication == listeners.replication


def test_listener_overrides_are_in_effect(listeners: Listeners) -> None:
    """REPLICATION requires a client certificate (the global ssl.client.auth is none); CLIENT
    takes only SCRAM-SHA-512, the controller listener the global mechanisms."""

    async def connect(port: int, tls: ssl.SSLContext | None, sasl: SaslClientCredentials) -> None:
        async with NodeConnection(
            "127.0.0.1", port, ssl_context=tls, sasl=sasl, connect_timeout=10
        ):
            pass  # connected and authenticated

    async def replication_without_certificate() -> None:
        async with NodeConnection(
            "127.0.0.1", listeners.replication[1], ssl_context=listeners.tls(), connect_timeout=10
        ):
            pass

    with pytest.raises(KafkaConnectionError):
        asyncio.run(replication_without_certificate())
    sha256 = SaslClientCredentials("SCRAM-SHA-256", "broker", "broker-secret")
    with pytest.raises(KafkaConnectionError, match="does not take SASL mechanism SCRAM-SHA-256"):
        asyncio.run(connect(listeners.client[1], listeners.tls(), sha256))
    asyncio.run(connect(listeners.controller[1], None, sha256))


@pytest.fixture(scope="module")
def mallory(listeners: Listeners) -> None:
    """A user with no ACL at all."""
    node = listeners.cluster.nodes[1]
    body = json.dumps(
        {"name": "mallory", "mechanism": "SCRAM-SHA-512", "password": MALLORY.password}
    ).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.admin_port}/v1/users",
        data=body,
        headers={"Content-Type": "application/json", **node.admin_headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 201)


def test_a_peer_without_cluster_action_is_refused_by_the_quorum(
    listeners: Listeners, mallory: None
) -> None:
    cluster = listeners.cluster
    before = cluster.nodes[1].get("/v1/quorum")
    leader = before["leader_id"]
    epoch = before["leader_epoch"]
    vote = request_to_wire(
        VoteRequest(epoch + 5, 2, epoch, 10**6, pre_vote=False), CLUSTER_ID, leader
    )
    fetch = request_to_wire(FetchRequest(2, epoch, 0, 0), CLUSTER_ID, leader)

    async def ask(sasl: SaslClientCredentials, *requests: Any) -> list[Any]:
        async with NodeConnection(
            "127.0.0.1", listeners.controller[leader], sasl=sasl, connect_timeout=10
        ) as connection:
            return [await connection.send(request, timeout=10) for request in requests]

    async def mallory_authenticated() -> list[Any] | None:
        try:
            return await ask(MALLORY, vote, fetch, describe_quorum_request())
        except KafkaConnectionError:
            return None  # the controller has not replayed the new user yet

    answers = cluster.wait_for(
        "mallory's credential replayed", lambda: asyncio.run(mallory_authenticated()), timeout=30
    )
    assert [answer.error_code for answer in answers] == [ErrorCode.cluster_authorization_failed] * 3
    after = cluster.nodes[1].get("/v1/quorum")
    assert (after["leader_id"], after["leader_epoch"]) == (leader, epoch)
    # A super user is answered on the same listener.
    (described,) = asyncio.run(
        ask(
            SaslClientCredentials("SCRAM-SHA-512", "broker", "broker-secret"),
            describe_quorum_request(),
        )
    )
    assert described.error_code == ErrorCode.none


def test_an_unauthenticated_peer_cannot_reach_the_quorum(listeners: Listeners) -> None:
    async def vote_without_sasl() -> None:
        async with NodeConnection(
            "127.0.0.1", listeners.controller[1], connect_timeout=10, request_timeout=10
        ) as connection:
            await connection.send(
                request_to_wire(VoteRequest(10**6, 2, 0, 0, pre_vote=False), CLUSTER_ID, 1)
            )

    with pytest.raises(KafkaConnectionError):
        asyncio.run(vote_without_sasl())
    assert listeners.cluster.nodes[1].get("/v1/quorum")["leader_epoch"] < 10**6


def test_get_replica_log_info_needs_cluster_action(
    listeners: Listeners, orders: str, mallory: None
) -> None:
    request = GetReplicaLogInfoRequest(
        topic_partitions=(TopicPartitions(topic_id=uuid.UUID(orders), partitions=(i32(0),)),)
    )

    async def ask(sasl: SaslClientCredentials) -> Any:
        async with NodeConnection(
            "127.0.0.1",
            listeners.client[2],
            ssl_context=listeners.tls(),
            sasl=sasl,
            connect_timeout=10,
        ) as connection:
            return await connection.send(request, timeout=10)

    def errors(sasl: SaslClientCredentials) -> list[int] | None:
        try:
            answer = asyncio.run(ask(sasl))
        except KafkaConnectionError:
            return None  # the broker has not replayed the new user yet
        return [
            info.error_code
            for topic in answer.topic_partition_log_info_list
            for info in topic.partition_log_info
        ]

    refused = listeners.cluster.wait_for("mallory refused", lambda: errors(MALLORY), timeout=30)
    assert refused == [ErrorCode.cluster_authorization_failed]
    assert errors(ADMIN) == [ErrorCode.none]
