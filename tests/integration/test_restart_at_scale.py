"""A node hosting hundreds of replicas restarted, cleanly and after SIGKILL: it is ready again,
its replicas rejoin every ISR through batched AlterPartition requests, and no acknowledged
acks=all write is lost (kcat reads them all back once the restarted node leads partitions).
After SIGKILL, the logs its start recovers (all at once, from their recovery points) are those
a full recovery of each log alone makes: log end, leader epochs, producer state."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from broker.producer_snapshots import ProducerSnapshots
from broker.producer_state import ProducerStateManager
from storage.log import Log
from storage.log_manager import LogManager
from tests.integration.test_produce_consume import kcat_consume

TOPIC = "many"
PARTITIONS = 300
NODES = (1, 2, 3)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("restart-at-scale"), 3, **{"min.insync.replicas": "2"}
    )
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, timeout=60)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=60)
        controller = quorum_leader(cluster)
        # Generous: a loaded machine takes a while to elect 300 leaders.
        cluster.wait_for("every ISR full", lambda: every_isr_full(cluster, controller), 120)
        yield cluster
    finally:
        cluster.stop_all()


def produce_acked(
    cluster: Cluster,
    tag: str,
    count: int,
    *,
    to: list[int] | None = None,
    settings: dict[str, str | int | bool] | None = None,
) -> set[tuple[int, int, str]]:
    """`count` messages spread over the partitions `to` (default: all), acks=all unless
    `settings` say otherwise: (partition, offset, value) of each one the cluster
    acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "retries": 0,
            **(settings or {}),
        }
    )
    targets = to if to is not None else list(range(PARTITIONS))
    acked: set[tuple[int, int, str]] = set()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acked.add((message.partition(), message.offset(), message.value().decode()))

    for index in range(count):
        producer.produce(
            TOPIC,
            f"{tag}-{index}".encode(),
            partition=targets[index % len(targets)],
            on_delivery=delivered,
        )
    assert producer.flush(60) == 0
    return acked


def partitions(cluster: Cluster, node_id: int) -> list[dict[str, Any]]:
    described: list[dict[str, Any]] = cluster.nodes[node_id].get(f"/v1/topics/{TOPIC}", 10)[
        "partitions"
    ]
    return described


def every_isr_full(cluster: Cluster, observer: int) -> bool:
    try:
        found = partitions(cluster, observer)
    except (OSError, ValueError):
        return False
    return len(found) == PARTITIONS and all(sorted(p["isr"]) == list(NODES) for p in found)


def quorum_leader(cluster: Cluster) -> int:
    leader = cluster.wait_for("a quorum leader", cluster.agreed_leader, timeout=60)
    return leader[0]


def isr_requests_answered(cluster: Cluster) -> dict[int, list[dict[str, int]]]:
    """By node, the answers (error name -> partitions) to each AlterPartition request it
    had answered so far as a leader."""
    answered: dict[int, list[dict[str, int]]] = {}
    for node_id, node in cluster.nodes.items():
        answered[node_id] = [
            json.loads(line)["answers"]
            for line in node.log_path.read_text(errors="replace").splitlines()
            if '"isr_changes_answered"' in line
        ]
    return answered


def test_a_cleanly_restarted_node_rejoins_every_isr_in_few_requests(cluster: Cluster) -> None:
    acked = produce_acked(cluster, "before-stop", 3 * PARTITIONS)
    controller = quorum_leader(cluster)
    cluster.wait_for("every ISR full", lambda: every_isr_full(cluster, controller), 60)
    restarted = max(node for node in NODES if node != controller)
    assert cluster.terminate(restarted) == 0
    # While it was shutting down, its leaders may have asked for it and been refused.
    asked_before = isr_requests_answered(cluster)
    log_before = len(cluster.nodes[restarted].log_path.read_text(errors="replace"))
    cluster.start(restarted)
    cluster.wait_for(f"node {restarted} ready", lambda: cluster.ready(restarted), timeout=120)
    # The metadata its earlier run applied is replayed without an event per record: one sums
    # it up, and only the records after it are logged one by one.
    since_start = [
        json.loads(line)
        for line in cluster.nodes[restarted]
        .log_path.read_text(errors="replace")[log_before:]
        .splitlines()
        if line.startswith("{")
    ]
    replayed = [e for e in since_start if e["event"] == "metadata_log_replayed"]
    assert len(replayed) == 1
    assert replayed[0]["records"] > PARTITIONS
    applied = [e["offset"] for e in since_start if e["event"] == "metadata_applied"]
    assert all(offset >= replayed[0]["logged_below"] for offset in applied)
    # The leaders shrink the ISRs of the stopped node's replicas while it is away (controlled
    # shutdown) and expand them again once it caught up.
    cluster.wait_for("every ISR full", lambda: every_isr_full(cluster, controller), 120)

    def answered_since() -> list[dict[str, int]]:
        return [
            answers
            for node_id, answered in isr_requests_answered(cluster).items()
            for answers in answered[len(asked_before[node_id]) :]
        ]

    def accepted(requests: list[dict[str, int]]) -> int:
        return sum(answers.get("none", 0) for answers in requests)

    # The controller's image shows the new ISRs a moment before each leader logs its answer.
    cluster.wait_for(
        "every expansion answered", lambda: accepted(answered_since()) >= PARTITIONS, 30
    )
    requests = answered_since()
    # It was asked for only once the node was unfenced, so nothing was refused as ineligible.
    assert sum(sum(answers.values()) for answers in requests) == accepted(requests)
    # One request per partition would be at least PARTITIONS requests; batched, a handful.
    assert len(requests) < PARTITIONS / 5
    read = set(kcat_consume(cluster, TOPIC))
    assert acked <= read


def producer_state_at_end(log: Log) -> bytes:
    """The log's producer state at its end, loaded as a replica loads it (newest snapshot
    within the log, then the batches after it)."""
    found = ProducerSnapshots(log.directory).load(log.log_start_offset, log.log_end_offset)
    start, state = found if found is not None else (0, ProducerStateManager())
    state.replay(header for _, header in log.batches(start))
    return state.to_snapshot()


def test_a_killed_nodes_logs_recover_as_a_full_recovery_of_each_would(
    cluster: Cluster, tmp_path: Path
) -> None:
    controller = quorum_leader(cluster)
    victim = max(node for node in NODES if node != controller)
    acked = produce_acked(
        cluster, "idempotent", 2 * PARTITIONS, settings={"enable.idempotence": True, "retries": 5}
    )
    # acks=1 writes survive the kill of a node that leads none of them.
    led_elsewhere = [
        p["partition"] for p in partitions(cluster, controller) if p["leader"] != victim
    ]
    assert led_elsewhere
    acked |= produce_acked(
        cluster, "acks-1", 2 * PARTITIONS, to=led_elsewhere, settings={"acks": 1}
    )
    cluster.kill(victim)
    left = cluster.nodes[victim].data_dir
    as_started, alone = tmp_path / "as-started", tmp_path / "alone"
    shutil.copytree(left, as_started)
    shutil.copytree(left, alone)
    # As the node's start opens them: together, from the checkpointed recovery points.
    started = LogManager.open([as_started])
    assert not started.clean_shutdown
    opened = {p: log for p, log in started.logs.items() if p.topic == TOPIC}
    assert len(opened) == PARTITIONS
    assert sum(log.log_end_offset for log in opened.values()) > 0
    for partition, log in opened.items():
        full = Log.open(alone / partition.dir_name, recovery_point=0, clean_shutdown=False)
        assert log.log_end_offset == full.log_end_offset, partition
        assert log.leader_epoch_cache.entries == full.leader_epoch_cache.entries, partition
        assert log.recovery_point <= full.log_end_offset
        assert producer_state_at_end(log) == producer_state_at_end(full), partition
        full.close()
    started.close()
    cluster.start(victim)
    cluster.wait_for(f"node {victim} ready", lambda: cluster.ready(victim), timeout=120)
    cluster.wait_for("every ISR full", lambda: every_isr_full(cluster, controller), 120)
    read = set(kcat_consume(cluster, TOPIC))
    assert acked <= read


def test_a_node_killed_and_restarted_loses_no_acknowledged_write(cluster: Cluster) -> None:
    controller = quorum_leader(cluster)
    victim = max(node for node in NODES if node != controller)
    acked = produce_acked(cluster, "before-kill", 3 * PARTITIONS)
    cluster.kill(victim)
    # Written while the victim is down: it copies them once restarted.
    acked |= produce_acked(cluster, "while-down", 3 * PARTITIONS)
    started = time.monotonic()
    cluster.start(victim)
    cluster.wait_for(f"node {victim} ready", lambda: cluster.ready(victim), timeout=120)
    cluster.wait_for("every ISR full", lambda: every_isr_full(cluster, controller), 120)
    assert time.monotonic() - started < 120
    # The other broker goes: the restarted node now leads partitions it recovered and copied.
    other = next(node for node in NODES if node not in (controller, victim))
    cluster.kill(other)
    cluster.wait_for(
        "leaders on the surviving nodes",
        lambda: all(p["leader"] in (controller, victim) for p in partitions(cluster, controller)),
        60,
    )
    led_by_victim = [p for p in partitions(cluster, controller) if p["leader"] == victim]
    assert led_by_victim
    read = set(kcat_consume(cluster, TOPIC))
    assert acked <= read
