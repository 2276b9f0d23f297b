"""The HTTP admin API on real `kraft serve` processes: every field DESIGN.md names, the topic
life cycle as HTTP and Kafka admin clients both see it, errors, elections and events."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from prometheus_client.parser import text_string_to_metric_families

from bench.cluster import Cluster

pytestmark = pytest.mark.slow

TOKEN = "s3cret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("admin")
    cluster = Cluster.combined(
        root,
        3,
        **{
            "admin.token": TOKEN,
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            # Preferred elections happen when the test asks, not on the controller's timer.
            "auto.leader.rebalance.enable": "false",
        },
    )
    with cluster.started(30):
        yield cluster


def call(
    cluster: Cluster,
    node_id: int,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = TOKEN,
    raw: bytes | None = None,
) -> tuple[int, Any]:
    """(HTTP status, decoded JSON body or None) of one request to node `node_id`."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{cluster.nodes[node_id].admin_port}{path}", data=data, method=method
    )
    request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    return status, json.loads(payload) if payload else None


def admin_client(cluster: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def kafka_topics(cluster: Cluster) -> dict[str, int]:
    metadata = admin_client(cluster).list_topics(timeout=10)
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


def test_every_field_of_the_contract_is_there(cluster: Cluster) -> None:
    status, created = call(
        cluster,
        1,
        "POST",
        "/v1/topics",
        {"name": "fields", "partitions": 2, "replication_factor": 3},
    )
    assert status == 201, created
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for index in range(10):
        producer.produce("fields", value=b"x%d" % index, partition=0)
    assert producer.flush(30) == 0

    status, info = call(cluster, 2, "GET", "/v1/cluster")
    assert status == 200
    assert info["cluster_id"] == "integration"
    assert info["controller_id"] in (1, 2, 3)
    assert info["brokers"] == 3 and info["topics"] >= 1 and info["metadata_offset"] > 0

    status, quorum = call(cluster, 3, "GET", "/v1/quorum")
    assert status == 200
    assert {"leader_id", "leader_epoch", "high_watermark", "voters", "observers"} <= set(quorum)
    assert {"id", "log_end_offset", "last_caught_up_ms"} <= set(quorum["voters"][0])

    status, brokers = call(cluster, 1, "GET", "/v1/brokers")
    assert status == 200 and [b["id"] for b in brokers] == [1, 2, 3]
    status, broker = call(cluster, 1, "GET", "/v1/brokers/2")
    assert status == 200
    assert {"id", "epoch", "fenced", "in_controlled_shutdown", "rack", "listeners"} <= set(broker)
    assert broker["fenced"] is False
    assert any(listener.startswith("PLAINTEXT://") for listener in broker["listeners"])

    status, topic = call(cluster, 3, "GET", "/v1/topics/fields")
    assert status == 200
    assert {"name", "topic_id", "partitions", "configs"} <= set(topic)
    assert [p["partition"] for p in topic["partitions"]] == [0, 1]

    leader = topic["partitions"][0]["leader"]
    # Every node answers, the leader from its own replica, the others by asking the leader.
    for node_id in (1, 2, 3):

        def replicated(node_id: int = node_id) -> Any:
            status, partition = call(cluster, node_id, "GET", "/v1/topics/fields/partitions/0")
            assert status == 200
            ends = partition["log_end_offsets"]
            if partition["high_watermark"] == 10 and sorted(ends.values()) == [10, 10, 10]:
                return partition
            return None

        partition = cluster.wait_for(f"node {node_id} sees HW 10", replicated)
        assert partition["topic"] == "fields" and partition["partition"] == 0
        assert partition["leader"] == leader
        for name in ("leader_epoch", "partition_epoch", "replicas", "isr", "elr", "last_known_elr"):
            assert name in partition
        assert partition["log_start_offset"] == 0
        assert sorted(partition["log_end_offsets"]) == ["1", "2", "3"]
        assert partition["log_view_error"] is None

    status, events = call(cluster, 2, "GET", "/v1/events")
    assert status == 200
    kinds = {event["type"] for event in events}
    assert {"broker_registered", "broker_unfenced", "topic_created", "partition_created"} <= kinds
    for event in events:
        assert {"time", "type", "topic", "partition", "leader_epoch", "partition_epoch"} <= set(
            event
        )
    offsets = [event["offset"] for event in events]
    assert offsets == sorted(offsets)

    status, document = call(cluster, 1, "GET", "/v1/openapi.json")
    assert status == 200
    assert {
        "/v1/health/ready",
        "/v1/cluster",
        "/v1/quorum",
        "/v1/brokers/{id}",
        "/v1/topics",
        "/v1/topics/{name}",
        "/v1/topics/{name}/partitions",
        "/v1/topics/{name}/partitions/{p}",
        "/v1/reassignments",
        "/v1/elections",
        "/v1/events",
    } <= set(document["paths"])


def test_the_topic_life_cycle_agrees_with_kafka_admin_clients(cluster: Cluster) -> None:
    status, topic = call(
        cluster,
        2,
        "POST",
        "/v1/topics",
        {
            "name": "cycle",
            "partitions": 3,
            "replication_factor": 2,
            "configs": {"retention.ms": "60000"},
        },
    )
    assert status == 201, topic
    assert topic["configs"] == {"retention.ms": "60000"}
    assert all(len(p["replicas"]) == 2 for p in topic["partitions"])
    admin = admin_client(cluster)
    assert cluster.wait_for("kafka sees cycle", lambda: kafka_topics(cluster).get("cycle") == 3)
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "cycle")])
    configs = next(iter(described.values())).result(timeout=10)
    assert configs["retention.ms"].value == "60000"

    status, grown = call(cluster, 3, "POST", "/v1/topics/cycle/partitions", {"count": 5})
    assert status == 200, grown
    assert len(grown["partitions"]) == 5
    assert cluster.wait_for("kafka sees 5", lambda: kafka_topics(cluster).get("cycle") == 5)

    # Defaults: -1 (or absent) takes num.partitions and default.replication.factor.
    status, defaulted = call(cluster, 1, "POST", "/v1/topics", {"name": "defaults"})
    assert status == 201 and len(defaulted["partitions"]) == 1
    assert len(defaulted["partitions"][0]["replicas"]) == 1

    # What a Kafka client creates, the HTTP API shows.
    admin.create_topics([NewTopic("from-kafka", num_partitions=4, replication_factor=3)])[
        "from-kafka"
    ].result(timeout=30)

    def shown() -> Any:
        status, topic = call(cluster, 1, "GET", "/v1/topics/from-kafka")
        return topic if status == 200 else None

    assert len(cluster.wait_for("http sees from-kafka", shown)["partitions"]) == 4
    status, listed = call(cluster, 1, "GET", "/v1/topics")
    assert {"cycle", "defaults", "from-kafka"} <= {t["name"] for t in listed}

    status, _ = call(cluster, 1, "DELETE", "/v1/topics/cycle")
    assert status == 204
    assert call(cluster, 1, "GET", "/v1/topics/cycle")[0] == 404
    assert cluster.wait_for("kafka lost cycle", lambda: "cycle" not in kafka_topics(cluster))
    status, events = call(cluster, 3, "GET", "/v1/events")
    deleted = [e for e in events if e["type"] == "topic_deleted"]
    assert any(e["topic"] == "cycle" for e in deleted)


def test_config_changes_agree_with_kafka_admin_clients(cluster: Cluster) -> None:
    status, _ = call(
        cluster, 1, "POST", "/v1/topics", {"name": "tuned", "configs": {"retention.ms": "1000"}}
    )
    assert status == 201
    status, topic = call(
        cluster,
        2,
        "PATCH",
        "/v1/topics/tuned/configs",
        {
            "set": {"segment.bytes": "1048576", "cleanup.policy": "compact"},
            "delete": ["retention.ms"],
        },
    )
    assert status == 200, topic
    assert topic["configs"] == {"segment.bytes": "1048576", "cleanup.policy": "compact"}
    admin = admin_client(cluster)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "tuned")

    def described() -> dict[str, Any]:
        configs: dict[str, Any] = admin.describe_configs([resource])[resource].result(timeout=10)
        return configs

    configs = described()
    assert configs["segment.bytes"].value == "1048576"
    assert configs["cleanup.policy"].value == "compact"
    # Back to the broker's setting: no topic override any more.
    assert ConfigSource(configs["retention.ms"].source) is not ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert ConfigSource(configs["segment.bytes"].source) is ConfigSource.DYNAMIC_TOPIC_CONFIG

    # A Kafka client's IncrementalAlterConfigs goes the same way.
    change = ConfigResource(
        ConfigResource.Type.TOPIC,
        "tuned",
        incremental_configs=[
            ConfigEntry("retention.ms", "7000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    admin.incremental_alter_configs([change])[change].result(timeout=30)

    def shown() -> Any:
        _, topic = call(cluster, 3, "GET", "/v1/topics/tuned")
        return topic["configs"].get("retention.ms") == "7000" and topic

    assert cluster.wait_for("http sees retention", shown)["configs"]["cleanup.policy"] == (
        "compact,delete"
    )
    bad = ConfigResource(
        ConfigResource.Type.TOPIC,
        "tuned",
        incremental_configs=[
            ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        admin.incremental_alter_configs([bad])[bad].result(timeout=30)

    def refused(body: Any, name: str = "tuned") -> tuple[int, str]:
        status, answer = call(cluster, 1, "PATCH", f"/v1/topics/{name}/configs", body)
        return status, answer["error"]

    assert refused({"set": {"retention.ms": "soon"}}) == (400, "invalid_config")
    _, answer = call(
        cluster, 1, "PATCH", "/v1/topics/tuned/configs", {"set": {"retention.ms": "x"}}
    )
    assert answer["message"] == (
        "Invalid value x for configuration retention.ms: Not a number of type LONG"
    )
    assert refused({"set": {"no.such": "1"}}) == (400, "invalid_config")
    assert refused({"set": {"retention.ms": "1"}, "delete": ["retention.ms"]}) == (
        400,
        "invalid_request",
    )
    assert refused({"sett": {}}) == (400, "invalid_request")
    assert refused({"set": {"retention.ms": "1"}}, name="missing") == (
        404,
        "unknown_topic_or_partition",
    )
    assert call(cluster, 1, "PATCH", "/v1/topics/tuned/configs", {}, token=None)[0] == 401
    assert described()["retention.ms"].value == "7000"


def test_bad_requests_are_answered_with_the_right_status(cluster: Cluster) -> None:
    def expect(status: int, error: str, response: tuple[int, Any]) -> dict[str, Any]:
        assert response[0] == status, response
        assert response[1]["error"] == error, response
        assert isinstance(response[1]["message"], str)
        body: dict[str, Any] = response[1]
        return body

    # 400: the field is named, by pydantic or by the controller's validation.
    body = expect(
        400,
        "invalid_request",
        call(cluster, 1, "POST", "/v1/topics", {"name": "a", "partitions": "x"}),
    )
    assert "partitions" in body["message"]
    body = expect(400, "invalid_request", call(cluster, 1, "POST", "/v1/topics", {"partitions": 1}))
    assert "name" in body["message"]
    expect(
        400, "invalid_request", call(cluster, 1, "POST", "/v1/topics", {"name": "a", "bogus": 1})
    )
    expect(400, "invalid_json", call(cluster, 1, "POST", "/v1/topics", raw=b"{not json"))
    expect(400, "invalid_request", call(cluster, 1, "POST", "/v1/topics", [1, 2]))
    expect(400, "invalid_topic_exception", call(cluster, 1, "POST", "/v1/topics", {"name": ".."}))
    body = expect(
        400,
        "invalid_config",
        call(cluster, 1, "POST", "/v1/topics", {"name": "cfg", "configs": {"no.such": "1"}}),
    )
    assert body["message"] == "Unknown topic config name: no.such"
    expect(
        400,
        "invalid_replication_factor",
        call(cluster, 1, "POST", "/v1/topics", {"name": "rf", "replication_factor": 5}),
    )
    expect(
        400,
        "invalid_request",
        call(
            cluster,
            1,
            "POST",
            "/v1/elections",
            {"type": "fastest", "partitions": [{"topic": "a", "partition": 0}]},
        ),
    )

    body = expect(400, "invalid_request", call(cluster, 1, "POST", "/v1/topics", {"name": "a/b"}))
    assert "name" in body["message"]

    # 401: mutations need the token; reads stay open.
    expect(
        401, "unauthorized", call(cluster, 1, "POST", "/v1/topics", {"name": "noauth"}, token=None)
    )
    expect(401, "unauthorized", call(cluster, 1, "DELETE", "/v1/topics/fields", token="wrong"))
    expect(401, "unauthorized", call(cluster, 1, "POST", "/v1/elections", {}, token=None))
    assert call(cluster, 1, "GET", "/v1/topics", token=None)[0] == 200
    assert call(cluster, 1, "GET", "/v1/topics/noauth")[0] == 404

    # 404
    expect(404, "not_found", call(cluster, 2, "GET", "/v1/topics/missing"))
    expect(404, "not_found", call(cluster, 2, "GET", "/v1/topics/fields/partitions/99"))
    expect(404, "not_found", call(cluster, 2, "GET", "/v1/brokers/42"))
    expect(404, "unknown_topic_or_partition", call(cluster, 2, "DELETE", "/v1/topics/missing"))
    expect(
        404,
        "unknown_topic_or_partition",
        call(cluster, 2, "POST", "/v1/topics/missing/partitions", {"count": 3}),
    )
    expect(404, "not_found", call(cluster, 2, "GET", "/v1/nothing/here"))

    # 409, and a partition count that does not grow.
    call(cluster, 3, "POST", "/v1/topics", {"name": "twice"})
    expect(409, "topic_already_exists", call(cluster, 3, "POST", "/v1/topics", {"name": "twice"}))
    expect(
        400,
        "invalid_partitions",
        call(cluster, 3, "POST", "/v1/topics/twice/partitions", {"count": 1}),
    )

    # Reassignments: Kafka's refusals as HTTP errors, and nothing to cancel.
    expect(
        404,
        "unknown_topic_or_partition",
        call(
            cluster,
            1,
            "POST",
            "/v1/reassignments",
            {"topic": "missing", "partition": 0, "replicas": [1]},
        ),
    )
    expect(
        400,
        "invalid_replica_assignment",
        call(
            cluster,
            1,
            "POST",
            "/v1/reassignments",
            {"topic": "twice", "partition": 0, "replicas": [1, 1]},
        ),
    )
    expect(
        400,
        "invalid_request",
        call(cluster, 1, "POST", "/v1/reassignments", {"topic": "twice", "partition": 0}),
    )
    expect(404, "no_reassignment", call(cluster, 1, "DELETE", "/v1/reassignments/twice/0"))
    expect(404, "not_found", call(cluster, 1, "DELETE", "/v1/reassignments/missing/0"))
    expect(404, "not_found", call(cluster, 1, "DELETE", "/v1/brokers/99"))
    expect(404, "not_found", call(cluster, 1, "POST", "/v1/brokers/99/drain"))
    expect(409, "broker_has_replicas", call(cluster, 1, "DELETE", "/v1/brokers/1"))

    # A bad method is JSON too.
    expect(405, "method_not_allowed", call(cluster, 1, "PUT", "/v1/topics", {}))


def test_elections_move_leadership_back_to_the_preferred_replica(cluster: Cluster) -> None:
    status, topic = call(
        cluster,
        1,
        "POST",
        "/v1/topics",
        {"name": "elect", "partitions": 3, "replication_factor": 3},
    )
    assert status == 201
    # Replica placement starts each partition at a different broker: broker 1 is preferred
    # for exactly one of them. Stopping broker 1 moves that leadership away.
    preferred = next(p for p in topic["partitions"] if p["replicas"][0] == 1)
    index = preferred["partition"]
    assert cluster.terminate(1) == 0

    def moved() -> Any:
        status, partition = call(cluster, 2, "GET", f"/v1/topics/elect/partitions/{index}")
        return partition if status == 200 and partition["leader"] not in (-1, 1) else None

    away = cluster.wait_for("leadership moved", moved)
    cluster.start(1)

    def back_in_isr() -> Any:
        status, partition = call(cluster, 2, "GET", f"/v1/topics/elect/partitions/{index}")
        return status == 200 and 1 in partition["isr"] and cluster.brokers_unfenced()

    cluster.wait_for("broker 1 back in the ISR", back_in_isr, timeout=30)

    request = {"type": "preferred", "partitions": [{"topic": "elect", "partition": index}]}
    status, results = call(cluster, 2, "POST", "/v1/elections", request)
    assert status == 200, results
    assert results["results"] == [
        {"topic": "elect", "partition": index, "error": None, "message": None}
    ]
    # The node that answered has replayed the election already.
    status, partition = call(cluster, 2, "GET", f"/v1/topics/elect/partitions/{index}")
    assert partition["leader"] == 1
    assert partition["leader_epoch"] > away["leader_epoch"]

    # Nothing to do now, for preferred and unclean alike.
    for kind in ("preferred", "unclean"):
        request["type"] = kind
        status, results = call(cluster, 3, "POST", "/v1/elections", request)
        assert status == 200
        assert results["results"][0]["error"] == "election_not_needed"
    status, results = call(
        cluster,
        3,
        "POST",
        "/v1/elections",
        {"type": "preferred", "partitions": [{"topic": "nope", "partition": 0}]},
    )
    assert results["results"][0]["error"] == "unknown_topic_or_partition"

    # The same story on every node: the leader changes of this partition, with their epochs.
    def story(node_id: int) -> list[tuple[int, str, int | None, int | None]]:
        deadline = time.monotonic() + 10
        while True:
            _, events = call(cluster, node_id, "GET", "/v1/events")
            changes = [
                (e["offset"], e["type"], e["leader"], e["leader_epoch"])
                for e in events
                if e["topic"] == "elect" and e["partition"] == index
            ]
            if (changes and changes[-1][2] == 1) or time.monotonic() > deadline:
                return changes

    stories = [story(node_id) for node_id in (1, 2, 3)]
    assert stories[0] == stories[1] == stories[2]
    leaders = [(kind, leader) for _, kind, leader, _ in stories[0] if kind == "leader_changed"]
    assert leaders[-1] == ("leader_changed", 1)
    assert ("leader_changed", away["leader"]) in leaders


def test_an_unreachable_leader_leaves_the_log_view_empty_with_the_reason(cluster: Cluster) -> None:
    status, topic = call(
        cluster,
        1,
        "POST",
        "/v1/topics",
        {"name": "stalled", "partitions": 3, "replication_factor": 3},
    )
    assert status == 201
    led_by_3 = next(p["partition"] for p in topic["partitions"] if p["leader"] == 3)
    cluster.pause(3)
    try:
        # Well within broker 3's session timeout: the metadata still names it the leader.
        status, partition = call(cluster, 1, "GET", f"/v1/topics/stalled/partitions/{led_by_3}")
    finally:
        cluster.resume(3)
    assert status == 200
    assert partition["leader"] == 3
    assert partition["high_watermark"] is None and partition["log_start_offset"] is None
    assert partition["log_end_offsets"] == {}
    assert "leader 3 could not be asked" in partition["log_view_error"]
    cluster.wait_for("brokers unfenced again", cluster.brokers_unfenced, timeout=30)


def test_metrics_show_requests_replicas_and_the_quorum(cluster: Cluster) -> None:
    status, _ = call(
        cluster,
        1,
        "POST",
        "/v1/topics",
        {"name": "metered", "partitions": 1, "replication_factor": 3},
    )
    assert status == 201
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for index in range(10):
        producer.produce("metered", f"m{index}".encode())
    assert producer.flush(30) == 0

    def scrape(node_id: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        url = f"http://127.0.0.1:{cluster.nodes[node_id].admin_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            text = response.read().decode()
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    partition = (("partition", "0"), ("topic", "metered"))
    leader = cluster.wait_for(
        "the leader's metrics",
        lambda: next(
            (
                node_id
                for node_id in cluster.nodes
                if scrape(node_id).get(("kraft_partition_isr_size", partition)) == 3
            ),
            None,
        ),
    )
    found = scrape(leader)
    assert found["kraft_partition_high_watermark", partition] == 10
    assert found["kraft_requests_total", (("api", "produce"),)] >= 1
    assert found["kraft_request_bytes_total", (("api", "produce"),)] > 0
    assert found["kraft_under_replicated_partitions", ()] == 0
    assert found["kraft_fenced_brokers", ()] == 0
    roles = {
        dict(labels)["role"]
        for node_id in cluster.nodes
        for (name, labels), value in scrape(node_id).items()
        if name == "kraft_quorum_role" and value == 1
    }
    assert roles == {"leader", "follower"}
    # Every node watches its event loop's lag, ten times a second since it started.
    for node_id in cluster.nodes:
        lags = scrape(node_id)
        measured = lags["kraft_event_loop_lag_seconds_count", ()]
        assert measured > 10
        assert lags["kraft_event_loop_lag_seconds_bucket", (("le", "+Inf"),)] == measured


def test_without_a_quorum_mutations_answer_503_and_reads_still_work(cluster: Cluster) -> None:
    # The last test of the module: it leaves node 1 alone.
    cluster.kill(2)
    cluster.kill(3)
    # Node 1, if it led the quorum, resigns once it hears no voter (check-quorum); until then
    # it would still take the request, and answer from what it appended but cannot commit.
    cluster.wait_for(
        "node 1 without a quorum leader",
        lambda: call(cluster, 1, "GET", "/v1/health/ready", token=None)[0] == 503,
        30.0,
    )
    started = time.monotonic()
    status, answer = call(cluster, 1, "POST", "/v1/topics", {"name": "nowhere"})
    assert (status, answer["error"]) == (503, "no_controller")
    assert time.monotonic() - started < 20
    status, topics = call(cluster, 1, "GET", "/v1/topics")
    assert status == 200 and "fields" in {topic["name"] for topic in topics}


def test_a_broker_is_ready_only_once_registered_and_unfenced(tmp_path: Path) -> None:
    node = Cluster.combined(tmp_path, 1)
    node.start_all()
    seen: list[tuple[int, bool]] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                ready_status, reason = call(node, 1, "GET", "/v1/health/ready", token=None)
                _, brokers = call(node, 1, "GET", "/v1/brokers", token=None)
            except OSError:
                continue  # not listening yet
            unfenced = any(b["id"] == 1 and not b["fenced"] for b in brokers)
            seen.append((ready_status, unfenced))
            if ready_status == 200:
                break
            assert reason["reason"]
            time.sleep(0.02)
    finally:
        node.stop_all()
    assert seen[-1] == (200, True)
    assert all(unfenced for status, unfenced in seen if status == 200)
