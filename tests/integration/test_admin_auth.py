"""Authentication and authorization of the admin API and of forwarded admin requests, on a real
two-node cluster (both roles on each node) with TLS, SASL (SCRAM) and ACLs.

The nodes are formatted with `kraft format --add-scram` (the users exist from the first start);
the client listener is SASL_SSL, the controller listener SSL where nodes present their
certificates (User:CN=localhost, a super user beside User:admin); the admin API serves https.
alice is a user without ACLs at first.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import os
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from bench.cluster import Cluster, kraft_executable
from bench.tls_certificates import TlsFiles
from net.client import NodeConnection
from net.envelope import seal
from net.principal import KafkaPrincipal
from node.cli import main

pytestmark = pytest.mark.timeout(120)

ADMIN_PASSWORD = "admin-secret"
ALICE_PASSWORD = "alice-secret"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


ADMIN = basic("admin", ADMIN_PASSWORD)
ALICE = basic("alice", ALICE_PASSWORD)


class Secure:
    """The running cluster, its certificates, and the leader-less node to ask."""

    def __init__(self, cluster: Cluster, tls: TlsFiles) -> None:
        self.cluster = cluster
        self.tls = tls
        self.trusting = ssl.create_default_context(cafile=str(tls.authority.certificate_path))

    def admin_url(self, node_id: int) -> str:
        return f"https://127.0.0.1:{self.cluster.nodes[node_id].admin_port}"

    def call(
        self,
        method: str,
        path: str,
        authorization: str | None,
        body: object | None = None,
        node_id: int = 1,
    ) -> tuple[int, Any, dict[str, str]]:
        """Status, JSON answer and headers of an admin request."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.admin_url(node_id) + path, data, method=method)
        if authorization is not None:
            request.add_header("Authorization", authorization)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=15, context=self.trusting) as response:
                payload = response.read()
                return response.status, json.loads(payload) if payload else None, {}
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()), dict(error.headers)

    def client(
        self, user: str, password: str, node_id: int | None = None
    ) -> dict[str, str | int | float | bool]:
        port = None if node_id is None else self.cluster.nodes[node_id].broker_port
        return {
            "bootstrap.servers": self.cluster.bootstrap if port is None else f"127.0.0.1:{port}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.tls.authority.certificate_path),
        }

    def kraft(self, *args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
        environment = {key: value for key, value in os.environ.items() if key != "KRAFT_ADMIN_URL"}
        if password is not None:
            environment["KRAFT_ADMIN_PASSWORD"] = password
        return subprocess.run(
            [kraft_executable(), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=environment,
            check=False,
        )


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    root = tmp_path_factory.mktemp("adminauth")
    tls = TlsFiles.create(root / "tls")
    cluster = Cluster.combined(
        root,
        2,
        **{
            "listener.security.protocol.map": "CLIENT:SASL_SSL,CONTROLLER:SSL",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "CLIENT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "inter.broker.sasl.username": "admin",
            "inter.broker.sasl.password": ADMIN_PASSWORD,
            "ssl.keystore.location": str(tls.keystore),
            "ssl.truststore.location": str(tls.authority.certificate_path),
            # Nodes present their certificates on the controller listener; SASL clients need
            # none on the client listener.
            "ssl.client.auth": "requested",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:CN=localhost",
            "offsets.topic.replication.factor": "2",
        },
    )
    cluster.name_listeners("CLIENT", controller="CONTROLLER")
    secure = Secure(cluster, tls)
    for node in cluster.nodes.values():
        node.config_path.write_text(
            node.config_path.read_text().replace(
                "admin.listener=http://", "admin.listener=https://"
            )
        )
        node.admin_tls = secure.trusting
        node.admin_headers = {"Authorization": ADMIN}
        formatted = main(
            [
                "format",
                "--config",
                str(node.config_path),
                "--add-scram",
                f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]",
                "--add-scram",
                f'SCRAM-SHA-512=[name=alice,password="{ALICE_PASSWORD}",iterations=8192]',
            ]
        )
        assert formatted == 0
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(2), timeout=60)
        yield secure
    finally:
        cluster.stop_all()


def test_format_add_scram_users_authenticate_from_the_first_start(secure: Secure) -> None:
    topics = AdminClient(secure.client("alice", ALICE_PASSWORD)).list_topics(timeout=15).topics
    assert isinstance(topics, dict)
    wrong = AdminClient({**secure.client("alice", "wrong"), "socket.timeout.ms": 5000})
    with pytest.raises(KafkaException) as refused:
        wrong.list_topics(timeout=5)
    assert "Authentication failed" in str(refused.value) or refused.value.args[0].code() in (
        KafkaError._AUTHENTICATION,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
    )


def test_basic_auth_good_bad_and_unknown_users(secure: Secure) -> None:
    status, cluster, _ = secure.call("GET", "/v1/cluster", ADMIN)
    assert status == 200 and cluster["brokers"] == 2
    for authorization in (basic("admin", "wrong"), basic("mallory", ADMIN_PASSWORD), None):
        status, error, headers = secure.call("GET", "/v1/cluster", authorization)
        assert status == 401, error
        assert error["error"] == "unauthorized"
        assert "Basic" in headers["WWW-Authenticate"]
    # Authenticated, without DESCRIBE on the cluster: 403 naming what is missing.
    status, error, _ = secure.call("GET", "/v1/cluster", ALICE)
    assert (status, error["error"]) == (403, "forbidden")
    assert error["message"] == (
        "User:alice is not authorized: this request needs DESCRIBE on CLUSTER 'kafka-cluster'"
    )
    # Health needs nothing: probes carry no credentials.
    assert secure.call("GET", "/v1/health/live", None)[0] == 200


def grant_alice(secure: Secure) -> None:
    """ACLs letting alice CREATE, ALTER_CONFIGS and DESCRIBE the topics named `alice-...`,
    once both nodes replayed them (creating an ACL that exists changes nothing)."""
    for operation in ("CREATE", "ALTER_CONFIGS", "DESCRIBE"):
        acl = {
            "resource_type": "TOPIC",
            "resource_name": "alice-",
            "pattern_type": "PREFIXED",
            "principal": "User:alice",
            "operation": operation,
        }
        assert secure.call("POST", "/v1/acls", ADMIN, acl)[0] == 201
    for node_id in secure.cluster.nodes:

        def replayed(node_id: int = node_id) -> bool | None:
            # 404 (no such topic) once alice may DESCRIBE it, 403 before.
            status = secure.call("GET", "/v1/topics/alice-probe", ALICE, node_id=node_id)[0]
            return status == 404 or None

        secure.cluster.wait_for(f"alice's ACLs on node {node_id}", replayed)


def test_a_mutation_without_the_acl_is_403_and_changes_nothing_until_the_acl_exists(
    secure: Secure,
) -> None:
    status, error, _ = secure.call(
        "POST", "/v1/topics", ALICE, {"name": "alice-orders", "partitions": 1}
    )
    assert status == 403
    assert "CREATE on CLUSTER 'kafka-cluster' or TOPIC 'alice-orders'" in error["message"]
    assert secure.call("GET", "/v1/topics/alice-orders", ADMIN)[0] == 404
    grant_alice(secure)
    status, topic, _ = secure.call(
        "POST", "/v1/topics", ALICE, {"name": "alice-orders", "partitions": 1}
    )
    assert status == 201, topic
    assert secure.call("GET", "/v1/topics/alice-orders", ALICE)[0] == 200
    # Listings show what the caller may DESCRIBE, as Metadata does.
    admin_only = {"name": "admin-only", "partitions": 1}
    assert secure.call("POST", "/v1/topics", ADMIN, admin_only)[0] == 201
    listed = {topic["name"] for topic in secure.call("GET", "/v1/topics", ALICE)[1]}
    assert "alice-orders" in listed and all(name.startswith("alice-") for name in listed)
    assert "admin-only" in {t["name"] for t in secure.call("GET", "/v1/topics", ADMIN)[1]}
    assert secure.call("GET", "/v1/topics", None)[:2] == (200, [])
    # DELETE is still not hers.
    status, error, _ = secure.call("DELETE", "/v1/topics/alice-orders", ALICE)
    assert status == 403 and "DELETE on TOPIC 'alice-orders'" in error["message"]


def test_kraft_commands_reach_the_https_admin_api_with_credentials(
    secure: Secure, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grant_alice(secure)
    url = secure.admin_url(2)
    ca = str(secure.tls.authority.certificate_path)
    # The console script, end to end.
    created = secure.kraft(
        "topics", "create", "alice-cli", "--partitions", "1", "--admin-url", url,
        "--cafile", ca, "--user", "alice", password=ALICE_PASSWORD,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert "alice-cli" in created.stdout
    # The refusals, through the same entry point in this process (a `kraft` process takes
    # seconds to start on a loaded machine).
    monkeypatch.delenv("KRAFT_ADMIN_URL", raising=False)

    def kraft(password: str, *args: str) -> tuple[int, str]:
        monkeypatch.setenv("KRAFT_ADMIN_PASSWORD", password)
        status = main([*args, "--admin-url", url, "--user", "alice"])
        return status, capsys.readouterr().err

    # Without the CA: a TLS failure, said so.
    status, err = kraft(ALICE_PASSWORD, "topics", "list")
    assert status == 3 and "tls_failed" in err and "--cafile" in err
    # A wrong password: 401; an operation without the ACL: 403.
    status, err = kraft("wrong", "topics", "list", "--cafile", ca)
    assert status == 1 and "401 unauthorized" in err
    status, err = kraft(ALICE_PASSWORD, "topics", "delete", "alice-cli", "--cafile", ca)
    assert status == 1 and "403 forbidden" in err and "DELETE on TOPIC 'alice-cli'" in err
    # A password is never sent over http.
    status = main(["topics", "list", "--admin-url", url.replace("https", "http"), "--user", "a"])
    assert status == 2 and "in clear" in capsys.readouterr().err


def test_alter_configs_is_authorized_per_resource(secure: Secure) -> None:
    grant_alice(secure)
    admin = AdminClient(secure.client("admin", ADMIN_PASSWORD))
    for name in ("alice-configs", "admin-configs"):
        admin.create_topics([NewTopic(name, 1, 2)])[name].result(30)
    alice = AdminClient(secure.client("alice", ALICE_PASSWORD))
    change = [ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)]
    futures = alice.incremental_alter_configs(
        [
            ConfigResource(ResourceType.TOPIC, "alice-configs", incremental_configs=change),
            ConfigResource(ResourceType.TOPIC, "admin-configs", incremental_configs=change),
        ]
    )
    outcomes: dict[str, int | None] = {}
    for resource, future in futures.items():
        try:
            future.result(30)
            outcomes[resource.name] = None
        except KafkaException as error:
            outcomes[resource.name] = error.args[0].code()
    assert outcomes == {
        "alice-configs": None,
        "admin-configs": KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
    for name, expected in (("alice-configs", "123456"), ("admin-configs", None)):

        def applied(name: str = name, expected: str | None = expected) -> bool | None:
            configs = secure.call("GET", f"/v1/topics/{name}", ADMIN)[1]["configs"]
            return configs.get("retention.ms") == expected or None

        secure.cluster.wait_for(f"{name} configs", applied)


def test_a_forwarded_create_without_the_acl_is_refused_and_nothing_is_created(
    secure: Secure,
) -> None:
    grant_alice(secure)
    controller_id = secure.call("GET", "/v1/cluster", ADMIN)[1]["controller_id"]
    other = next(node_id for node_id in secure.cluster.nodes if node_id != controller_id)
    alice = AdminClient(secure.client("alice", ALICE_PASSWORD, node_id=other))
    futures = alice.create_topics([NewTopic("bob-orders", 1, 2), NewTopic("alice-more", 1, 2)])
    with pytest.raises(KafkaException) as refused:
        futures["bob-orders"].result(30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    futures["alice-more"].result(30)
    assert secure.call("GET", "/v1/topics/bob-orders", ADMIN)[0] == 404


def test_the_controller_refuses_admin_requests_from_a_peer_without_cluster_action(
    secure: Secure,
) -> None:
    """A client that reaches the controller listener (TLS, no certificate: ANONYMOUS) cannot
    create topics there behind the brokers' backs, directly or in an Envelope."""
    host, port = secure.cluster.voters()[1]
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName("sneaky"),
                num_partitions=i32(1),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        validate_only=False,
    )

    # Nor pass itself off as a forwarding broker acting for a super user.
    impersonating = seal(request, None, KafkaPrincipal.user("admin"), "127.0.0.1")

    async def ask() -> tuple[Any, Any]:
        connection = NodeConnection(host, port, ssl_context=secure.trusting)
        try:
            direct = await connection.send(request, timeout=15)
            return direct, await connection.send(impersonating, timeout=15)
        finally:
            await connection.close()

    direct, enveloped = asyncio.run(ask())
    assert direct.topics[0].error_code == ErrorCode.cluster_authorization_failed
    assert enveloped.error_code == ErrorCode.cluster_authorization_failed
    assert enveloped.response_data is None
    assert secure.call("GET", "/v1/topics/sneaky", ADMIN)[0] == 404
