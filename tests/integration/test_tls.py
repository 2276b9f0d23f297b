"""A real `kraft serve` with a TLS Kafka listener (`listeners=SSL://...`, Kafka's PEM keys):
confluent-kafka and kcat produce and consume over TLS with client certificates
(`ssl.client.auth=required`) and without (`ssl.client.auth=none`); a plaintext client, a
client with an untrusted certificate and one without a certificate are refused and write
nothing."""

from __future__ import annotations

import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from cryptography.x509.oid import NameOID

from bench.cluster import Cluster
from bench.tls_certificates import ALICE_SUBJECT, SERVER_SUBJECT
from node.certificates import CertificateAuthority, KeyPair

pytestmark = pytest.mark.timeout(120)

ClientValue = str | int | float | bool


class Certificates:
    def __init__(self, directory: Path) -> None:
        self.ca = CertificateAuthority(directory / "ca")
        self.server = self.ca.issue("server", SERVER_SUBJECT, server=True)
        self.alice = self.ca.issue("alice", ALICE_SUBJECT)
        self.mallory = CertificateAuthority(directory / "other", "other CA").issue(
            "mallory", {NameOID.COMMON_NAME: "alice"}
        )


def tls_node(root: Path, certificates: Certificates, client_auth: str) -> Cluster:
    """One combined node whose Kafka listener is `SSL://`: the server key pair given inline
    (Kafka's `ssl.keystore.certificate.chain` / `ssl.keystore.key`), the trusted certificates as
    a file location."""

    def inline(pem: str) -> str:
        # A properties value continued over lines, as Kafka's PEM configs are written.
        return "\\\n".join(pem.strip().splitlines())

    cluster = Cluster.combined(
        root,
        1,
        **{
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": inline(certificates.server.certificate_pem),
            "ssl.keystore.key": inline(certificates.server.key_pem),
            "ssl.truststore.location": str(certificates.ca.certificate_path),
            "ssl.client.auth": client_auth,
        },
    )
    cluster.name_listeners("SSL")
    return cluster


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("certificates"))


@contextmanager
def running(cluster: Cluster) -> Iterator[Cluster]:
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced, timeout=30)
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="module")
def mutual_tls(
    tmp_path_factory: pytest.TempPathFactory, certificates: Certificates
) -> Iterator[Cluster]:
    with running(tls_node(tmp_path_factory.mktemp("mtls"), certificates, "required")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server_tls(
    tmp_path_factory: pytest.TempPathFactory, certificates: Certificates
) -> Iterator[Cluster]:
    with running(tls_node(tmp_path_factory.mktemp("tls"), certificates, "none")) as cluster:
        yield cluster


def ssl_config(
    cluster: Cluster, certificates: Certificates, key_pair: KeyPair | None
) -> dict[str, ClientValue]:
    config: dict[str, ClientValue] = {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(certificates.ca.certificate_path),
    }
    if key_pair is not None:
        config["ssl.certificate.location"] = str(key_pair.certificate_path)
        config["ssl.key.location"] = str(key_pair.key_path)
    return config


def produce_and_consume(config: dict[str, ClientValue], topic: str, count: int) -> list[bytes]:
    producer = Producer({**config, "acks": "all", "enable.idempotence": True})
    for index in range(count):
        producer.produce(topic, value=f"{topic}-{index}".encode())
    assert producer.flush(30) == 0
    return consume(config, topic, count)


def consume(config: dict[str, ClientValue], topic: str, count: int) -> list[bytes]:
    consumer = Consumer({**config, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(60):
            for message in consumer.consume(count, timeout=1):
                assert message.error() is None, message.error()
                values.append(message.value() or b"")
            if len(values) >= count:
                break
    finally:
        consumer.close()
    return values


def kcat_options(
    cluster: Cluster, certificates: Certificates, key_pair: KeyPair | None
) -> list[str]:
    options = [
        "-b",
        cluster.bootstrap,
        "-X",
        "security.protocol=SSL",
        "-X",
        f"ssl.ca.location={certificates.ca.certificate_path}",
    ]
    if key_pair is not None:
        options += [
            "-X",
            f"ssl.certificate.location={key_pair.certificate_path}",
            "-X",
            f"ssl.key.location={key_pair.key_path}",
        ]
    return options


def kcat_round_trip(options: list[str], topic: str) -> list[str]:
    lines = [f"kcat-{index}" for index in range(20)]
    subprocess.run(
        ["kcat", *options, "-P", "-t", topic, "-X", "acks=all"],
        input="\n".join(lines).encode(),
        check=True,
        timeout=30,
    )
    consumed = subprocess.run(
        ["kcat", *options, "-C", "-t", topic, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        check=True,
        timeout=30,
    )
    assert consumed.stdout.decode().splitlines() == lines
    return lines


def test_confluent_kafka_produces_and_consumes_with_a_client_certificate(
    mutual_tls: Cluster, certificates: Certificates
) -> None:
    config = ssl_config(mutual_tls, certificates, certificates.alice)
    values = produce_and_consume(config, "mtls-orders", 200)
    assert sorted(values) == sorted(f"mtls-orders-{index}".encode() for index in range(200))


def test_kcat_produces_and_consumes_with_a_client_certificate(
    mutual_tls: Cluster, certificates: Certificates
) -> None:
    kcat_round_trip(kcat_options(mutual_tls, certificates, certificates.alice), "mtls-kcat")


@pytest.mark.parametrize("offender", ["plaintext", "untrusted certificate", "no certificate"])
def test_refused_clients_write_nothing(
    mutual_tls: Cluster, certificates: Certificates, offender: str
) -> None:
    topic = f"refused-{offender.replace(' ', '-')}"
    config: dict[str, ClientValue]
    if offender == "plaintext":
        config = {"bootstrap.servers": mutual_tls.bootstrap}
    else:
        key_pair = certificates.mallory if offender == "untrusted certificate" else None
        config = ssl_config(mutual_tls, certificates, key_pair)
    outcomes: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 3000, "socket.timeout.ms": 2000})
    producer.produce(
        topic, value=b"should not be written", on_delivery=lambda error, _: outcomes.append(error)
    )
    producer.flush(10)
    assert len(outcomes) == 1
    assert outcomes[0] is not None
    assert outcomes[0].code() == KafkaError._MSG_TIMED_OUT
    admin = AdminClient(ssl_config(mutual_tls, certificates, certificates.alice))
    topics = admin.list_topics(timeout=10).topics
    assert topic not in topics
    with pytest.raises(KafkaException):
        AdminClient({**config, "socket.timeout.ms": 2000}).list_topics(timeout=3)


def test_without_client_authentication_clients_need_no_certificate(
    server_tls: Cluster, certificates: Certificates
) -> None:
    config = ssl_config(server_tls, certificates, None)
    values = produce_and_consume(config, "tls-orders", 100)
    assert sorted(values) == sorted(f"tls-orders-{index}".encode() for index in range(100))
    kcat_round_trip(kcat_options(server_tls, certificates, None), "tls-kcat")


def tls_cluster(root: Path, certificates: Certificates) -> Cluster:
    """Three combined nodes in Kafka's form: `listeners=CLIENT://...,CONTROLLER://...` with
    both on TLS and client certificates required, so replication (replica fetchers on the
    CLIENT listener) and controller traffic (the quorum, registrations, heartbeats) are TLS."""
    keystore = certificates.server.key_path.with_suffix(".keystore.pem")
    keystore.write_text(certificates.server.key_pem + certificates.server.certificate_pem)
    cluster = Cluster.combined(
        root,
        3,
        **{
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CLIENT:SSL,CONTROLLER:SSL",
            "inter.broker.listener.name": "CLIENT",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.location": str(certificates.ca.certificate_path),
            "ssl.client.auth": "required",
            "default.replication.factor": "3",
            "min.insync.replicas": "2",
            "offsets.topic.replication.factor": "3",
        },
    )
    cluster.name_listeners("CLIENT", controller="CONTROLLER")
    # The admin APIs serve https too (and ask each other over it).
    trusting = ssl.create_default_context(cafile=str(certificates.ca.certificate_path))
    for node in cluster.nodes.values():
        text = node.config_path.read_text()
        node.config_path.write_text(
            text.replace("admin.listener=http://", "admin.listener=https://")
        )
        node.admin_tls = trusting
    return cluster


def test_a_cluster_replicates_and_runs_its_quorum_on_tls(
    tmp_path: Path, certificates: Certificates
) -> None:
    with running(tls_cluster(tmp_path, certificates)) as cluster:
        config = ssl_config(cluster, certificates, certificates.alice)
        values = produce_and_consume(config, "replicated", 300)
        assert sorted(values) == sorted(f"replicated-{index}".encode() for index in range(300))
        admin = AdminClient(config)
        partitions = admin.list_topics("replicated", timeout=10).topics["replicated"].partitions
        assert sorted(partitions[0].isrs) == [1, 2, 3]
        # A follower's admin API asks the leader's, over https, for the partition's log view.
        leader = partitions[0].leader
        follower = next(node for node in cluster.nodes.values() if node.node_id != leader)
        detail = follower.get("/v1/topics/replicated/partitions/0", timeout=10)
        assert detail["high_watermark"] == 300
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{follower.admin_port}/v1/brokers", timeout=5)
        # The quorum's port speaks TLS only: a plaintext Kafka client is refused there too.
        host, port = cluster.voters()[1]
        with pytest.raises(KafkaException):
            AdminClient(
                {"bootstrap.servers": f"{host}:{port}", "socket.timeout.ms": 2000}
            ).list_topics(timeout=3)
