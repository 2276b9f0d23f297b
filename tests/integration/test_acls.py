"""ACLs against a real two-node cluster (both roles on each node) with Kafka's
StandardAuthorizer, driven by confluent-kafka and kafka-python.

Every PLAINTEXT connection is User:ANONYMOUS, as in Kafka. The cluster starts with
`super.users=User:ANONYMOUS` (the brokers' own connections, and the operator creating the first
ACLs), then restarts without it: from then on the ACLs in the metadata log decide, and brokers
keep replicating because ANONYMOUS holds ALL on the cluster (CLUSTER_ACTION). The controller
listener is SASL_PLAINTEXT, where the nodes are `User:node`, a super user: a voter restarting
knows no ACL until it replayed the metadata, so the quorum's own principal must be a super
user, as in Kafka.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as PythonResourceType
from kafka.errors import SecurityDisabledError

from bench.cluster import Cluster, kraft_executable
from node.admin_cli import AdminApi

ANONYMOUS = "User:ANONYMOUS"
NODE = "User:node"
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": f"{ANONYMOUS};{NODE}",
}
SASL_CONTROLLER_LISTENER = {
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    "inter.broker.sasl.username": "node",
    "inter.broker.sasl.password": "node-secret",
}


def binding(
    resource_type: ResourceType,
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, ANONYMOUS, host, operation, permission)


# The ACLs the operator creates while ANONYMOUS is still a super user.
INITIAL_ACLS = [
    binding(ResourceType.BROKER, "kafka-cluster", AclOperation.ALL),
    binding(ResourceType.TOPIC, "orders", AclOperation.WRITE, host="127.0.0.1"),
    binding(ResourceType.TOPIC, "orders", AclOperation.READ),
    # A literal allow that a prefixed deny overrides.
    binding(ResourceType.TOPIC, "ord-audit", AclOperation.WRITE),
    binding(
        ResourceType.TOPIC,
        "ord-",
        AclOperation.WRITE,
        AclPermissionType.DENY,
        ResourcePatternType.PREFIXED,
    ),
    binding(ResourceType.GROUP, "readers", AclOperation.READ),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("acls"), 2, **AUTHORIZER, **SASL_CONTROLLER_LISTENER
    )
    cluster.name_listeners("PLAINTEXT", "CONTROLLER")
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(2), timeout=60)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topics = [NewTopic(name, 1, 2) for name in ("orders", "ord-audit", "secret")]
        for future in admin.create_topics(topics).values():
            future.result(timeout=30)
        for future in admin.create_acls(INITIAL_ACLS).values():
            future.result(timeout=30)
        # From here on, ANONYMOUS is only what the ACLs make it.
        for node in cluster.nodes.values():
            lines = node.config_path.read_text().splitlines()
            node.config_path.write_text(
                "".join(f"{line}\n" for line in lines if not line.startswith("super.users="))
                + f"super.users={NODE}\n"
            )
            cluster.terminate(node.node_id)
        cluster.start_all()
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(2), timeout=60)
        yield cluster
    finally:
        cluster.stop_all()


def produce(cluster: Cluster, topic: str) -> list[Any]:
    """The delivery errors (None for a delivered message) of three messages to `topic`."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "message.timeout.ms": 20_000,
        }
    )
    outcomes: list[Any] = []
    for index in range(3):
        producer.produce(
            topic,
            value=f"m{index}".encode(),
            on_delivery=lambda error, _: outcomes.append(error),
        )
    assert producer.flush(30) == 0
    return outcomes


def consume(cluster: Cluster, topic: str, group: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is None:
                if len(values) >= count:
                    break
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            value = message.value()
            assert value is not None
            values.append(value)
        return values
    finally:
        consumer.close()


def test_allowed_topic_is_written_replicated_and_read_by_an_allowed_group(
    cluster: Cluster,
) -> None:
    assert produce(cluster, "orders") == [None, None, None]
    assert consume(cluster, "orders", "readers", 3) == [b"m0", b"m1", b"m2"]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # Both replicas in sync: the follower's fetches are CLUSTER_ACTION, allowed by the ACL.
    cluster.wait_for(
        "orders replicated",
        lambda: (
            len(admin.list_topics("orders", timeout=10).topics["orders"].partitions[0].isrs) == 2
            or None
        ),
        timeout=30,
    )


def test_produce_without_an_acl_is_topic_authorization_failed_and_writes_nothing(
    cluster: Cluster,
) -> None:
    outcomes = produce(cluster, "secret")
    assert {error.code() for error in outcomes} == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_acls(
        [binding(ResourceType.TOPIC, "secret", AclOperation.READ)]
    ).values():
        future.result(timeout=30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "readers"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("secret", 0), timeout=20)
    finally:
        consumer.close()
    assert (low, high) == (0, 0)


def test_fetch_without_read_is_topic_authorization_failed(cluster: Cluster) -> None:
    # ord-audit: described (WRITE implies DESCRIBE) but never readable.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "readers"})
    try:
        consumer.assign([TopicPartition("ord-audit", 0, 0)])
        errors: list[Any] = []
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is not None:
                error = message.error()
                assert error is not None, "a record was read without READ"
                errors.append(error.code())
                break
    finally:
        consumer.close()
    assert errors == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_prefixed_deny_overrides_literal_allow(cluster: Cluster) -> None:
    outcomes = produce(cluster, "ord-audit")
    assert {error.code() for error in outcomes} == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert denials(cluster) > 0


def denials(cluster: Cluster) -> float:
    """The authorization denials both nodes counted, from their Prometheus metrics."""
    total = 0.0
    for node in cluster.nodes.values():
        url = f"http://127.0.0.1:{node.admin_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("kraft_authorization_denials_total "):
                    total += float(line.split()[1])
    return total


def test_metadata_lists_only_the_topics_the_client_may_describe(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    listed = set(admin.list_topics(timeout=20).topics)
    # orders (READ, WRITE imply DESCRIBE), ord-audit (WRITE allowed, only WRITE denied), and
    # secret once READ is granted by the test above; never __consumer_offsets.
    assert {"orders", "ord-audit"} <= listed
    assert "__consumer_offsets" not in listed


def test_authorized_operations_are_the_clients_own(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    # ALL on the cluster: every operation Kafka supports on it.
    assert set(described.authorized_operations) == {
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    }
    [topic] = admin.describe_topics(
        TopicCollection(["orders"]), include_authorized_operations=True
    ).values()
    # READ and WRITE (from 127.0.0.1, where this client is), which imply DESCRIBE.
    assert set(topic.result(timeout=30).authorized_operations) == {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DESCRIBE,
    }


def test_consumer_without_group_read_is_group_authorization_failed(cluster: Cluster) -> None:
    with pytest.raises(KafkaException) as raised:
        consume(cluster, "orders", "strangers", 1)
    assert raised.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def any_acl_of(
    resource_type: ResourceType, name: str, pattern: ResourcePatternType
) -> AclBindingFilter:
    """The filter of every ACL of the resource pattern, whatever its principal and host."""
    # confluent-kafka's stubs type the principal and host as str; None is its documented "any".
    anyone: Any = None
    return AclBindingFilter(
        resource_type, name, pattern, anyone, anyone, AclOperation.ANY, AclPermissionType.ANY
    )


def test_confluent_describes_and_deletes_acls(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic_filter = any_acl_of(ResourceType.TOPIC, "orders", ResourcePatternType.MATCH)
    described = admin.describe_acls(topic_filter).result(timeout=30)
    assert {(b.name, b.operation, b.permission_type) for b in described} == {
        ("orders", AclOperation.WRITE, AclPermissionType.ALLOW),
        ("orders", AclOperation.READ, AclPermissionType.ALLOW),
    }
    temporary = binding(ResourceType.GROUP, "temporary", AclOperation.READ)
    for future in admin.create_acls([temporary]).values():
        future.result(timeout=30)
    group_filter = any_acl_of(ResourceType.GROUP, "temporary", ResourcePatternType.LITERAL)
    deleted = admin.delete_acls([group_filter])[group_filter].result(timeout=30)
    assert deleted == [temporary]
    # DescribeAcls is answered from the image of the broker asked, which replays the deletion
    # a moment after the controller committed it.
    cluster.wait_for(
        "the deleted ACL no longer described",
        lambda: admin.describe_acls(group_filter).result(timeout=30) == [] or None,
    )


def test_invalid_acl_is_invalid_request(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    invalid = binding(ResourceType.BROKER, "not-the-cluster", AclOperation.ALTER)
    with pytest.raises(KafkaException) as raised:
        admin.create_acls([invalid])[invalid].result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.INVALID_REQUEST


def test_kafka_python_creates_describes_and_deletes_acls(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        pattern = ResourcePattern(PythonResourceType.TOPIC, "py-", ACLResourcePatternType.PREFIXED)
        acl = ACL(ANONYMOUS, "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, pattern)
        assert admin.create_acls([acl]) == {"succeeded": [acl], "failed": []}
        acl_filter = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(PythonResourceType.TOPIC, "py-", ACLResourcePatternType.PREFIXED),
        )
        found, error = admin.describe_acls(acl_filter)
        assert found == [acl]
        assert error.errno == 0
        [(_, deleted, error)] = admin.delete_acls([acl_filter])
        assert deleted == [acl]
        assert error.errno == 0
        assert admin.describe_acls(acl_filter)[0] == []
    finally:
        admin.close()


def kraft(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KRAFT_")}
    return subprocess.run(
        [
            kraft_executable(),
            *args,
            "--admin",
            f"http://127.0.0.1:{cluster.nodes[1].admin_port}",
            "--json",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )


def test_kraft_acls_add_list_and_delete_through_the_admin_api(cluster: Cluster) -> None:
    fields = [
        "--resource-type",
        "topic",
        "--resource-name",
        "cli-",
        "--pattern-type",
        "prefixed",
        "--principal",
        "User:carol",
        "--operation",
        "read",
    ]
    added = kraft(cluster, "acls", "add", *fields)
    assert added.returncode == 0, added.stderr
    expected = {
        "resource_type": "TOPIC",
        "resource_name": "cli-",
        "pattern_type": "PREFIXED",
        "principal": "User:carol",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    assert json.loads(added.stdout) == expected
    listed = kraft(cluster, "acls", "list")
    assert expected in json.loads(listed.stdout)
    # The other node replays it too: DescribeAcls there answers it.
    other = AdminApi(f"http://127.0.0.1:{cluster.nodes[2].admin_port}")
    cluster.wait_for("ACL on node 2", lambda: expected in other.call("GET", "/v1/acls"))
    deleted = kraft(cluster, "acls", "delete", "--principal", "User:carol")
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout) == [expected]
    invalid = kraft(
        cluster,
        "acls",
        "add",
        "--resource-type",
        "cluster",
        "--resource-name",
        "other",
        "--principal",
        "User:carol",
        "--operation",
        "alter",
    )
    assert invalid.returncode == 1
    assert "kafka-cluster" in invalid.stderr


def test_a_broker_without_cluster_action_is_not_registered(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Kafka's rule, documented: with an authorizer, the brokers' connections (User:ANONYMOUS
    on PLAINTEXT) need CLUSTER_ACTION, from `super.users` or an ACL, or the controller refuses
    their registration."""
    settings = {"authorizer.class.name": AUTHORIZER["authorizer.class.name"]}
    lonely = Cluster.combined(tmp_path_factory.mktemp("acls-no-super-user"), 1, **settings)
    lonely.start_all()
    try:
        node = lonely.nodes[1]
        lonely.wait_for(
            "registration refused",
            lambda: any(
                '"error": "cluster_authorization_failed", "event": "broker_registration_refused"'
                in line
                for line in node.log_path.read_text().splitlines()
            ),
            timeout=30,
        )
        assert lonely.brokers_unfenced(1) is None
    finally:
        lonely.stop_all()


def test_topic_admin_requests_are_authorized_per_topic(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_acls(
        [binding(ResourceType.TOPIC, "doomed", AclOperation.DELETE)]
    ).values():
        future.result(timeout=30)
    # CREATE on the cluster (ALL) allows every topic.
    admin.create_topics([NewTopic("doomed", 1, 2)])["doomed"].result(timeout=30)
    outcomes = admin.delete_topics(["doomed", "orders"], operation_timeout=30)
    outcomes["doomed"].result(timeout=30)
    with pytest.raises(KafkaException) as raised:
        outcomes["orders"].result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as raised:
        admin.create_partitions([NewPartitions("orders", 2)])["orders"].result(timeout=30)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert "orders" in admin.list_topics(timeout=20).topics


def test_without_an_authorizer_acl_requests_are_security_disabled_and_all_is_allowed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    open_cluster = Cluster.combined(tmp_path_factory.mktemp("acls-off"), 1)
    open_cluster.start_all()
    try:
        open_cluster.wait_for("broker unfenced", lambda: open_cluster.brokers_unfenced(1))
        admin = KafkaAdminClient(
            bootstrap_servers=open_cluster.bootstrap, request_timeout_ms=30_000
        )
        try:
            pattern = ResourcePattern(PythonResourceType.TOPIC, "t")
            acl = ACL(ANONYMOUS, "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
            assert admin.create_acls([acl])["failed"][0].errno == 54  # SECURITY_DISABLED
            acl_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)
            with pytest.raises(SecurityDisabledError):
                admin.describe_acls(acl_filter)
            [(_, _, error)] = admin.delete_acls([acl_filter])
            assert error.errno == 54
        finally:
            admin.close()
        assert produce(open_cluster, "anything") == [None, None, None]
    finally:
        open_cluster.stop_all()
