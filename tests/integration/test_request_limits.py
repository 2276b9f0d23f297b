"""Bounded resources on a real `kraft serve`: a request too large for the controller is refused
at once on both doors (HTTP admin API and Kafka's CreateTopics / CreatePartitions, with Kafka's
POLICY_VIOLATION), while the node keeps answering; connections over the per-IP limit are
closed; idle connections are closed on every listener."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path

import pytest
import requests
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.cluster import Cluster
from controller.limits import TOO_MANY_PARTITIONS, TOO_MANY_RECORDS
from net.api_keys import ApiKey

IDLE_MS = 3000
# Connections from 127.0.0.2 are limited; the node's own (from 127.0.0.1) are not.
LIMITED_ADDRESS = "127.0.0.2"
LIMITED_CONNECTIONS = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("limits")
    cluster = Cluster.combined(
        root,
        1,
        **{
            "connections.max.idle.ms": str(IDLE_MS),
            "max.connections.per.ip.overrides": f"{LIMITED_ADDRESS}:{LIMITED_CONNECTIONS}",
        },
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced, timeout=30)
        yield cluster
    finally:
        cluster.stop_all()


def admin_url(cluster: Cluster) -> str:
    return f"http://127.0.0.1:{cluster.nodes[1].admin_port}"


class LatencyProbe:
    """Runs `ask` in a loop from a thread, every `pause` seconds; `worst` is the slowest answer.
    `ask` gets the number of the question (from 1)."""

    def __init__(self, ask: Callable[[int], None], pause: float) -> None:
        self._ask = ask
        self._pause = pause
        self._stop = threading.Event()
        self.latencies: list[float] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asked = 0
        while not self._stop.is_set():
            asked += 1
            start = time.monotonic()
            self._ask(asked)
            self.latencies.append(time.monotonic() - start)
            time.sleep(self._pause)

    def __enter__(self) -> LatencyProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    @property
    def worst(self) -> float:
        return max(self.latencies)


def liveness_probe(base: str) -> LatencyProbe:
    """/v1/health/live, asked in a loop."""

    def ask(_: int) -> None:
        requests.get(f"{base}/v1/health/live", timeout=60).raise_for_status()

    return LatencyProbe(ask, 0.02)


def test_a_post_of_999999_partitions_is_refused_at_once_and_the_node_stays_responsive(
    cluster: Cluster,
) -> None:
    base = admin_url(cluster)
    with liveness_probe(base) as probe:
        time.sleep(0.2)
        start = time.monotonic()
        refused = requests.post(
            f"{base}/v1/topics", json={"name": "x", "partitions": 999_999}, timeout=60
        )
        took = time.monotonic() - start
        time.sleep(0.2)
    assert refused.status_code == 400, refused.text
    assert refused.json() == {"error": "policy_violation", "message": TOO_MANY_PARTITIONS}
    assert took < 2.0
    assert probe.worst < 1.0
    # Nothing of it was written, and the controller serves the next request.
    assert requests.get(f"{base}/v1/topics/x", timeout=5).status_code == 404
    created = requests.post(f"{base}/v1/topics", json={"name": "x", "partitions": 2}, timeout=30)
    assert created.status_code == 201, created.text
    start = time.monotonic()
    grown = requests.post(f"{base}/v1/topics/x/partitions", json={"count": 999_999}, timeout=60)
    assert time.monotonic() - start < 2.0
    assert grown.status_code == 400, grown.text
    assert grown.json() == {"error": "policy_violation", "message": TOO_MANY_RECORDS}
    assert len(requests.get(f"{base}/v1/topics/x", timeout=5).json()["partitions"]) == 2


def policy_violations(futures: Mapping[str, Future[None]]) -> dict[str, str]:
    """Each future's error message, asserting it is POLICY_VIOLATION."""
    messages = {}
    for name, future in futures.items():
        with pytest.raises(KafkaException) as failed:
            future.result(timeout=30)
        error: KafkaError = failed.value.args[0]
        assert error.code() == KafkaError.POLICY_VIOLATION, error
        messages[name] = error.str()
    return messages


def test_kafka_clients_get_policy_violation_for_requests_over_the_bound(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # One topic of 10,000 partitions is 10,001 records: over the bound of one operation.
    assert policy_violations(admin.create_topics([NewTopic("huge", 10_000, 1)])) == {
        "huge": TOO_MANY_RECORDS
    }
    # More than 10,000 partitions in one request: refused before anything else is checked.
    assert policy_violations(
        admin.create_topics([NewTopic("a", 6_000, 1), NewTopic("b", 6_000, 1)])
    ) == {"a": TOO_MANY_PARTITIONS, "b": TOO_MANY_PARTITIONS}
    admin.create_topics([NewTopic("small", 1, 1)])["small"].result(timeout=30)
    assert policy_violations(admin.create_partitions([NewPartitions("small", 20_000)])) == {
        "small": TOO_MANY_RECORDS
    }
    listed = admin.list_topics(timeout=10).topics
    assert "huge" not in listed and "a" not in listed
    assert len(listed["small"].partitions) == 1


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    connection = socket.create_connection(
        ("127.0.0.1", port), timeout=5, source_address=(source, 0)
    )
    return connection


def closed_by_peer(connection: socket.socket, timeout: float) -> bool:
    """Whether the other side closes `connection` within `timeout` seconds."""
    connection.settimeout(timeout)
    try:
        while connection.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def api_versions(connection: socket.socket, correlation_id: int, timeout: float = 5) -> int:
    """Sends ApiVersions v0; returns the correlation id of the answer."""
    client_id = b"limits-test"
    header = (
        struct.pack(">hhih", ApiKey.API_VERSIONS, 0, correlation_id, len(client_id)) + client_id
    )
    connection.sendall(struct.pack(">i", len(header)) + header)
    connection.settimeout(timeout)
    size = struct.unpack(">i", connection.recv(4, socket.MSG_WAITALL))[0]
    answer = connection.recv(size, socket.MSG_WAITALL)
    return int(struct.unpack_from(">i", answer)[0])


def kafka_probe(connection: socket.socket) -> LatencyProbe:
    """ApiVersions over the Kafka listener, asked in a loop on `connection`."""

    def ask(correlation_id: int) -> None:
        assert api_versions(connection, correlation_id, timeout=60) == correlation_id

    return LatencyProbe(ask, 0.01)


def test_the_largest_topic_one_request_may_create_does_not_freeze_the_node(
    cluster: Cluster,
) -> None:
    base = admin_url(cluster)
    port = cluster.nodes[1].broker_port
    assert port is not None
    partitions = 9_999  # with its TopicRecord, the 10,000 records one request may write
    with connect(port) as connection, kafka_probe(connection) as probe:
        time.sleep(0.2)
        created = requests.post(
            f"{base}/v1/topics", json={"name": "largest", "partitions": partitions}, timeout=120
        )
        assert created.status_code == 201, created.text
        # Its replicas are created in the background: until they are, the probe goes on.
        replica_log = f"{base}/v1/topics/largest/partitions/{partitions - 1}/log"
        cluster.wait_for(
            "the last replica created",
            lambda: requests.get(replica_log, timeout=30).status_code == 200 or None,
            timeout=120,
        )
    # It froze the node for 12 s before (and the request failed with 503: its commit waited
    # behind the creation of every replica), fencing the broker on its own controller.
    assert probe.worst < 3.0, sorted(probe.latencies)[-5:]
    broker = requests.get(f"{base}/v1/brokers/1", timeout=10).json()
    assert broker["fenced"] is False


def test_connections_over_the_per_ip_limit_are_closed_and_others_served(cluster: Cluster) -> None:
    port = cluster.nodes[1].broker_port
    assert port is not None
    held = [connect(port, LIMITED_ADDRESS) for _ in range(LIMITED_CONNECTIONS)]
    try:
        over = connect(port, LIMITED_ADDRESS)
        assert closed_by_peer(over, timeout=2.0)
        over.close()
        assert [api_versions(connection, 7) for connection in held] == [7, 7]
        with connect(port) as unlimited:
            assert api_versions(unlimited, 8) == 8
    finally:
        for connection in held:
            connection.close()
    time.sleep(0.2)
    with connect(port, LIMITED_ADDRESS) as again:
        assert api_versions(again, 9) == 9


def test_idle_connections_are_closed_on_every_listener(cluster: Cluster) -> None:
    node = cluster.nodes[1]
    assert node.broker_port is not None
    _host, controller_port = cluster.voters()[1]
    ports = {"kafka": node.broker_port, "controller": controller_port, "admin": node.admin_port}
    connections = {name: connect(port) for name, port in ports.items()}
    start = time.monotonic()
    closed = {}
    for name, connection in connections.items():
        remaining = IDLE_MS / 1000 + 5 - (time.monotonic() - start)
        closed[name] = closed_by_peer(connection, timeout=max(remaining, 0.1))
        connection.close()
    assert closed == {"kafka": True, "controller": True, "admin": True}
    assert time.monotonic() - start > IDLE_MS / 1000 - 0.5
