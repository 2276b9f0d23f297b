"""SASL_PLAINTEXT on a real node with real clients: SCRAM-SHA-256 and PLAIN (kafka-python,
aiokafka), SCRAM-SHA-512 (confluent-kafka, kcat); credentials bootstrapped into the metadata log
from `bootstrap.scram.credentials`; wrong passwords, unknown users and mechanisms, and requests
before authentication refused as Kafka refuses them, with nothing written."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic as PythonNewTopic
from kafka.errors import KafkaError

from bench.cluster import Cluster, kraft_executable
from bench.tls_certificates import SERVER_SUBJECT
from net.client import ClusterClient, KafkaConnectionError
from net.sasl import SaslClientCredentials
from node.certificates import CertificateAuthority
from tests.integration.test_groups import learn_partitions_before_joining

pytestmark = pytest.mark.timeout(180)

PASSWORD = "alice-secret"
BOOTSTRAP_USERS = (
    f"SCRAM-SHA-256=[name=alice,password={PASSWORD}];"
    f"SCRAM-SHA-512=[name=alice,password={PASSWORD},iterations=8192];"
    "SCRAM-SHA-512=[name=bob,password=bob-secret]"
)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("sasl"),
        1,
        **{
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "bootstrap.scram.credentials": BOOTSTRAP_USERS,
            "connection.failed.authentication.delay.ms": "300",
        },
    )
    # The client listener named SASL_PLAINTEXT: Kafka's default protocol map makes it SASL.
    cluster.name_listeners("SASL_PLAINTEXT")
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def confluent(node: Cluster, user: str = "alice", password: str = PASSWORD) -> dict[str, Any]:
    return {
        "bootstrap.servers": node.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
    }


def python_client(node: Cluster, mechanism: str, password: str = PASSWORD) -> dict[str, Any]:
    return {
        "bootstrap_servers": node.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": password,
    }


def create_topic(node: Cluster, topic: str) -> None:
    # The client must outlive the future: destroying it fails what it still owes.
    admin = AdminClient(confluent(node))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)


def topic_name() -> str:
    return f"sasl-{uuid.uuid4().hex[:8]}"


def offsets(node: Cluster, topic: str) -> tuple[int, int]:
    consumer = Consumer({**confluent(node), "group.id": "offsets"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return low, high
    finally:
        consumer.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_kafka_python_produces_consumes_and_administers(node: Cluster, mechanism: str) -> None:
    topic = topic_name()
    admin = KafkaAdminClient(**python_client(node, mechanism))
    try:
        admin.create_topics([PythonNewTopic(topic, 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(**python_client(node, mechanism))
    try:
        for i in range(10):
            producer.send(topic, f"m{i}".encode())
        producer.flush(timeout=20)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic,
        group_id=f"group-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
        **python_client(node, mechanism),
    )
    try:
        learn_partitions_before_joining(consumer, topic)
        values = [message.value for message in consumer][:10]
        consumer.commit()
    finally:
        consumer.close()
    assert values == [f"m{i}".encode() for i in range(10)]


def test_kafka_python_with_a_wrong_password_is_refused(node: Cluster) -> None:
    with pytest.raises(KafkaError):
        producer = KafkaProducer(
            **python_client(node, "SCRAM-SHA-256", "wrong"), max_block_ms=5_000
        )
        producer.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_aiokafka_produces_and_consumes_in_a_group(node: Cluster, mechanism: str) -> None:
    topic = topic_name()

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**python_client(node, mechanism))
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            group_id=f"group-{topic}",
            auto_offset_reset="earliest",
            **python_client(node, mechanism),
        )
        await consumer.start()
        try:
            values: list[bytes] = []
            while len(values) < 5:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 20)
                values.extend(m.value for messages in batch.values() for m in messages)
            await consumer.commit()
            return values
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [f"a{i}".encode() for i in range(5)]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_aiokafka_administers_topics_and_groups(node: Cluster, mechanism: str) -> None:
    topic = topic_name()
    group = f"group-{topic}"
    settings = python_client(node, mechanism)

    async def committed_by_a_group_member() -> None:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"one", partition=1)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", **settings)
        await consumer.start()
        try:
            await asyncio.wait_for(consumer.getone(), 20)
            await consumer.commit()
        finally:
            await consumer.stop()

    async def run() -> tuple[list[str], list[str], dict[Any, Any], list[str]]:
        admin = AIOKafkaAdminClient(**settings)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic(topic, 2, 1)])
            described = [found["topic"] for found in await admin.describe_topics([topic])]
            await committed_by_a_group_member()
            groups = [entry[0] for entry in await admin.list_consumer_groups()]
            offsets = await admin.list_consumer_group_offsets(group)
            await admin.delete_topics([topic])
            return described, groups, offsets, await admin.list_topics()
        finally:
            await admin.close()

    described, groups, offsets, remaining = asyncio.run(run())
    assert described == [topic]
    assert group in groups
    # The member committed its position in both partitions: past the record, and 0.
    assert {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()} == {
        (topic, 0): 0,
        (topic, 1): 1,
    }
    assert topic not in remaining


def test_confluent_kafka_scram_sha_512_produces_consumes_and_administers(node: Cluster) -> None:
    topic = topic_name()
    admin = AdminClient(confluent(node))
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    producer = Producer(confluent(node))
    for i in range(20):
        producer.produce(topic, f"c{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {**confluent(node), "group.id": f"group-{topic}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < 20 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(values) == sorted(f"c{i}".encode() for i in range(20))
    # The second user, with the same mechanism, sees the same topic.
    metadata = AdminClient(confluent(node, "bob", "bob-secret")).list_topics(timeout=20)
    assert topic in metadata.topics


def test_confluent_kafka_with_bad_credentials_writes_nothing(node: Cluster) -> None:
    topic = topic_name()
    create_topic(node, topic)
    for user, password in (("alice", "wrong"), ("mallory", PASSWORD)):
        errors: list[Any] = []
        producer = Producer(
            {
                **confluent(node, user, password),
                "message.timeout.ms": 3000,
                "error_cb": errors.append,
            }
        )
        producer.produce(topic, b"intruder")
        producer.flush(6)
        assert any("Authentication failed" in str(error) for error in errors), errors
    assert offsets(node, topic) == (0, 0)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_scram_sha_512_produces_and_consumes(node: Cluster) -> None:
    topic = topic_name()
    create_topic(node, topic)
    options = [
        "-b",
        node.bootstrap,
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanism=SCRAM-SHA-512",
        "-X",
        "sasl.username=alice",
        "-X",
        f"sasl.password={PASSWORD}",
    ]
    subprocess.run(["kcat", *options, "-P", "-t", topic], input=b"k1\nk2\n", check=True, timeout=30)
    out = subprocess.run(
        ["kcat", *options, "-C", "-t", topic, "-o", "beginning", "-e", "-q"],
        check=True,
        timeout=30,
        capture_output=True,
    )
    assert out.stdout.split() == [b"k1", b"k2"]


# Raw protocol: what Kafka's SaslServerAuthenticator does with each out-of-order request.


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    client_id = b"raw"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _read_response(sock: socket.socket) -> bytes | None:
    size_bytes = sock.recv(4)
    if not size_bytes:
        return None
    (size,) = struct.unpack(">i", size_bytes)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _connect(node: Cluster) -> socket.socket:
    host, port = node.bootstrap.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def test_a_request_before_authentication_closes_the_connection(node: Cluster) -> None:
    with _connect(node) as sock:
        # Metadata v1 for every topic, before any SASL exchange.
        sock.sendall(_request(3, 1, 1, struct.pack(">i", -1)))
        started = time.monotonic()
        assert _read_response(sock) is None
        # Closed after connection.failed.authentication.delay.ms.
        assert time.monotonic() - started >= 0.25


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed(
    node: Cluster,
) -> None:
    with _connect(node) as sock:
        mechanism = b"GSSAPI"
        sock.sendall(_request(17, 1, 7, struct.pack(">h", len(mechanism)) + mechanism))
        response = _read_response(sock)
        assert response is not None
        correlation_id, error_code = struct.unpack(">ih", response[:6])
        assert (correlation_id, error_code) == (7, 33)  # UNSUPPORTED_SASL_MECHANISM
        assert b"SCRAM-SHA-512" in response and b"PLAIN" in response
        assert _read_response(sock) is None


def test_sasl_authenticate_before_the_handshake_closes_the_connection(node: Cluster) -> None:
    with _connect(node) as sock:
        token = b"\0alice\0" + PASSWORD.encode()
        sock.sendall(_request(36, 0, 3, struct.pack(">i", len(token)) + token))
        assert _read_response(sock) is None


def test_a_plain_login_then_a_second_handshake_is_an_illegal_sasl_state(node: Cluster) -> None:
    with _connect(node) as sock:
        mechanism = b"PLAIN"
        sock.sendall(_request(17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism))
        response = _read_response(sock)
        assert response is not None and struct.unpack(">ih", response[:6]) == (1, 0)
        token = b"\0alice\0" + PASSWORD.encode()
        sock.sendall(_request(36, 0, 2, struct.pack(">i", len(token)) + token))
        response = _read_response(sock)
        assert response is not None and struct.unpack(">ih", response[:6]) == (2, 0)
        sock.sendall(_request(17, 1, 3, struct.pack(">h", len(mechanism)) + mechanism))
        response = _read_response(sock)
        assert response is not None
        assert struct.unpack(">ih", response[:6]) == (3, 34)  # ILLEGAL_SASL_STATE


# AlterUserScramCredentials (forwarded to the controller) and DescribeUserScramCredentials.


def _alter(admin: AdminClient, alterations: list[Any]) -> dict[str, str | None]:
    """Each user's outcome: None when done, else the error's name."""
    outcome: dict[str, str | None] = {}
    for user, future in admin.alter_user_scram_credentials(alterations).items():
        try:
            future.result(20)
            outcome[user] = None
        except KafkaException as error:
            outcome[user] = error.args[0].name()
    return outcome


def describe(admin: AdminClient, user: str) -> Any:
    futures = admin.describe_user_scram_credentials([user])
    assert isinstance(futures, dict)
    return futures[user].result(20)


def describe_all(admin: AdminClient) -> dict[str, Any]:
    future = admin.describe_user_scram_credentials()
    assert not isinstance(future, dict)
    result: dict[str, Any] = future.result(20)
    return result


def _can_log_in(node: Cluster, user: str, password: str) -> bool:
    admin = AdminClient({**confluent(node, user, password), "sasl.mechanism": "SCRAM-SHA-256"})
    try:
        admin.list_topics(timeout=5)
        return True
    except KafkaException:
        return False


def test_users_are_added_described_without_keys_and_deleted(node: Cluster) -> None:
    admin = AdminClient(confluent(node))
    sha256 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    assert _alter(admin, [UserScramCredentialUpsertion("carol", sha256, b"carol-secret")]) == {
        "carol": None
    }
    assert _can_log_in(node, "carol", "carol-secret")
    assert not _can_log_in(node, "carol", "wrong")
    described = describe(admin, "carol")
    assert [(info.mechanism, info.iterations) for info in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 4096)
    ]
    every = describe_all(admin)
    assert {"alice", "bob", "carol"} <= set(every)
    assert {info.mechanism for info in every["alice"].scram_credential_infos} == {
        ScramMechanism.SCRAM_SHA_256,
        ScramMechanism.SCRAM_SHA_512,
    }
    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    assert _alter(admin, [deletion]) == {"carol": None}
    assert not _can_log_in(node, "carol", "carol-secret")
    with pytest.raises(KafkaException, match="RESOURCE_NOT_FOUND"):
        describe(admin, "carol")


def test_credential_alterations_are_validated_as_kafka_validates_them(node: Cluster) -> None:
    admin = AdminClient(confluent(node))

    def upsert(user: str, mechanism: ScramMechanism, iterations: int) -> Any:
        info = ScramCredentialInfo(mechanism, iterations)
        return UserScramCredentialUpsertion(user, info, b"secret")

    sha256 = ScramMechanism.SCRAM_SHA_256
    assert _alter(
        admin,
        [
            upsert("few", sha256, 1000),
            upsert("many", sha256, 20000),
            upsert("twice", sha256, 4096),
            UserScramCredentialDeletion("twice", ScramMechanism.SCRAM_SHA_512),
            UserScramCredentialDeletion("nobody", sha256),
            upsert("fine", sha256, 16384),
        ],
    ) == {
        "few": "UNACCEPTABLE_CREDENTIAL",
        "many": "UNACCEPTABLE_CREDENTIAL",
        "twice": "DUPLICATE_RESOURCE",
        "nobody": "RESOURCE_NOT_FOUND",
        "fine": None,
    }
    every = describe_all(admin)
    assert "fine" in every
    assert not {"few", "many", "twice"} & set(every)
    assert _alter(admin, [UserScramCredentialDeletion("fine", sha256)]) == {"fine": None}


def test_users_are_managed_through_the_admin_api_and_the_cli(node: Cluster) -> None:
    admin_url = f"http://127.0.0.1:{node.nodes[1].admin_port}"

    def kraft(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kraft_executable(), "users", *args, "--admin", admin_url],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )

    added = kraft("add", "dave", "--mechanism", "SCRAM-SHA-256", "--password", "dave-secret")
    assert added.returncode == 0, added.stderr
    assert "dave" in added.stdout and "SCRAM-SHA-256" in added.stdout
    assert _can_log_in(node, "dave", "dave-secret")
    listed = kraft("list", "--json")
    users = {user["name"]: user for user in json.loads(listed.stdout)}
    assert users["dave"]["credentials"] == [{"mechanism": "SCRAM-SHA-256", "iterations": 4096}]
    # Nothing but mechanisms and iterations: no salt, no key, no password.
    assert set(users["alice"]["credentials"][0]) == {"mechanism", "iterations"}
    refused = kraft("add", "erin", "--password", "x", "--iterations", "100")
    assert refused.returncode == 1 and "iterations" in refused.stderr
    assert kraft("delete", "dave").returncode == 0
    assert not _can_log_in(node, "dave", "dave-secret")
    missing = kraft("delete", "dave")
    assert missing.returncode == 1 and "RESOURCE_NOT_FOUND" in missing.stderr


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_our_own_client_authenticates(node: Cluster, mechanism: str) -> None:
    async def run(password: str) -> Any:
        credentials = SaslClientCredentials(mechanism, "alice", password)
        async with ClusterClient(node.bootstrap, sasl=credentials, connect_timeout=5) as client:
            return await client.bootstrap()

    metadata = asyncio.run(run(PASSWORD))
    assert [broker.node_id for broker in metadata.brokers] == [1]
    with pytest.raises(KafkaConnectionError, match="refused 'alice'"):
        asyncio.run(run("wrong"))


def test_followers_replicate_from_a_sasl_listener(tmp_path: Path) -> None:
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{
            "bootstrap.scram.credentials": BOOTSTRAP_USERS,
            "inter.broker.sasl.username": "bob",
            "inter.broker.sasl.password": "bob-secret",
        },
    )
    # The client listener named SASL_PLAINTEXT: Kafka's default protocol map makes it SASL.
    cluster.name_listeners("SASL_PLAINTEXT")
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, timeout=60)
        settings = {**confluent(cluster), "bootstrap.servers": cluster.bootstrap}
        admin = AdminClient(settings)
        admin.create_topics([NewTopic("replicated", 1, 3)])["replicated"].result(30)
        producer = Producer({**settings, "acks": "all"})
        for i in range(5):
            producer.produce("replicated", f"r{i}".encode())
        assert producer.flush(30) == 0

        def fully_replicated() -> bool | None:
            topic = cluster.nodes[1].get("/v1/topics/replicated")
            return sorted(topic["partitions"][0]["isr"]) == [1, 2, 3] or None

        cluster.wait_for("every replica in the ISR", fully_replicated, timeout=30)
    finally:
        cluster.stop_all()


def test_sasl_ssl_with_scram_sha_512(tmp_path: Path) -> None:
    authority = CertificateAuthority(tmp_path / "ca")
    server = authority.issue("server", SERVER_SUBJECT, server=True)
    cluster = Cluster.combined(
        tmp_path / "node",
        1,
        **{
            "ssl.keystore.type": "PEM",
            # A properties value continued over lines, as Kafka's PEM configs are written.
            "ssl.keystore.certificate.chain": "\\\n".join(
                server.certificate_pem.strip().splitlines()
            ),
            "ssl.keystore.key": "\\\n".join(server.key_pem.strip().splitlines()),
            "bootstrap.scram.credentials": BOOTSTRAP_USERS,
        },
    )
    cluster.name_listeners("SASL_SSL")
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced, timeout=30)
        settings = {
            **confluent(cluster),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(authority.certificate_path),
        }
        admin = AdminClient(settings)
        admin.create_topics([NewTopic("over-tls", 1, 1)])["over-tls"].result(20)
        producer = Producer(settings)
        producer.produce("over-tls", b"secret record")
        assert producer.flush(20) == 0
        consumer = Consumer({**settings, "group.id": "tls", "auto.offset.reset": "earliest"})
        consumer.subscribe(["over-tls"])
        try:
            deadline = time.monotonic() + 20
            message = None
            while message is None and time.monotonic() < deadline:
                polled = consumer.poll(1.0)
                if polled is not None and polled.error() is None:
                    message = polled
            assert message is not None and message.value() == b"secret record"
        finally:
            consumer.close()
        errors: list[Any] = []
        wrong = Producer({**settings, "sasl.password": "wrong", "error_cb": errors.append})
        wrong.produce("over-tls", b"intruder")
        wrong.flush(5)
        assert any("Authentication failed" in str(error) for error in errors), errors
    finally:
        cluster.stop_all()
