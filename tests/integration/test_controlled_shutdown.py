"""Controlled shutdown of a broker on SIGTERM, on real `kraft serve` nodes: the controller moves
its leaderships away while it still serves, so a producer writing through the stop loses
nothing and sees no error; then it flushes, writes the clean-shutdown marker with its broker
epoch and exits 0. When the controller cannot agree (no quorum), the wait ends at
`controlled.shutdown.timeout.ms`, at a second SIGTERM, or after a broker session without any
controller's answer, and the stop is still clean."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from storage.log_manager import CLEAN_SHUTDOWN_MARKER
from tests.integration.test_broker_metadata import log_events
from tests.integration.test_produce_consume import kcat_consume

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500"},
    )
    with cluster.started(60.0):
        yield cluster


def leaders(cluster: Cluster, observer: int, topic: str) -> list[int]:
    """Each partition's leader as `observer` sees it; none while it does not know the topic
    yet (a restarted node replaying its metadata log answers 404 until then)."""
    try:
        partitions = cluster.nodes[observer].get(f"/v1/topics/{topic}")["partitions"]
    except (OSError, ValueError):
        return []
    return [partition["leader"] for partition in partitions]


def marker_epoch(cluster: Cluster, node_id: int) -> int | None:
    marker = cluster.nodes[node_id].data_dir / CLEAN_SHUTDOWN_MARKER
    if not marker.exists():
        return None
    epoch: int = json.loads(marker.read_text())["broker_epoch"]
    return epoch


def sigterm(cluster: Cluster, node_id: int) -> Any:
    process = cluster.nodes[node_id].process
    assert process is not None
    process.send_signal(signal.SIGTERM)
    return process


def test_sigterm_moves_leadership_away_before_the_broker_stops(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("moving", 3, replication_factor=3)])["moving"].result(30)
    cluster.wait_for("every partition led", lambda: -1 not in leaders(cluster, 1, "moving"))
    stopping = leaders(cluster, 1, "moving")[0]
    observer = next(node for node in cluster.nodes if node != stopping)
    unfenced = cluster.brokers_unfenced()
    assert unfenced is not None
    epoch = unfenced[stopping]["epoch"]

    # A producer writes through the shutdown, acks=all, as an application would.
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 2}
    )
    failures: list[Any] = []
    sent = 0
    done = threading.Event()

    def produce() -> None:
        nonlocal sent
        while not done.is_set():
            producer.produce(
                "moving",
                f"m-{sent}".encode(),
                partition=sent % 3,
                on_delivery=lambda error, _: failures.append(error) if error else None,
            )
            sent += 1
            producer.poll(0.002)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        time.sleep(1.0)
        process = sigterm(cluster, stopping)
        assert process.wait(timeout=30) == 0
        cluster.nodes[stopping].process = None
        time.sleep(1.0)
    finally:
        done.set()
        writer.join(timeout=30)
    assert producer.flush(30) == 0
    assert failures == []

    # The controller moved every leadership before the broker went away.
    assert stopping not in leaders(cluster, observer, "moving")
    granted = log_events(cluster, stopping, "controlled_shutdown_granted")
    stopped = log_events(cluster, stopping, "broker_stopped")
    assert granted and stopped and granted[0]["timestamp"] < stopped[0]["timestamp"]
    assert marker_epoch(cluster, stopping) == epoch
    # Nothing acknowledged was lost, and nothing written twice (an idempotent producer).
    values = sorted(value for _, _, value in kcat_consume(cluster, "moving"))
    assert values == sorted(f"m-{i}" for i in range(sent))


def test_without_a_controller_the_wait_ends_at_a_second_sigterm_or_the_timeout(
    cluster: Cluster,
) -> None:
    # Node 1 leads a partition that has nowhere else to go: the controller must write the
    # change, and with two of the three voters gone there is no quorum to write it.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("pinned", 1, replica_assignment=[[1]])])["pinned"].result(30)
    cluster.wait_for("node 1 leading", lambda: leaders(cluster, 1, "pinned") == [1])
    epochs = {node: broker["epoch"] for node, broker in brokers(cluster, 1).items()}
    cluster.kill(2)
    cluster.kill(3)
    process = sigterm(cluster, 1)
    time.sleep(1.5)
    assert process.poll() is None  # still waiting for the controller (30 s by default)
    hurried_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert time.monotonic() - hurried_at < 10
    cluster.nodes[1].process = None
    (incomplete,) = log_events(cluster, 1, "controlled_shutdown_incomplete")
    assert incomplete["reason"] == "second signal"
    assert marker_epoch(cluster, 1) is not None

    # The timeout alone ends the wait too.
    epochs = restart_nodes_1_and_2(cluster, epochs, controlled_shutdown_timeout_ms=2000)
    cluster.kill(2)
    started = time.monotonic()
    process = sigterm(cluster, 1)
    assert process.wait(timeout=30) == 0
    assert 2.0 <= time.monotonic() - started < 15
    cluster.nodes[1].process = None

    # And so does a whole broker session (4 s here) without any controller answering: one that
    # cannot hear the broker fences it after that long and moves its leaderships itself.
    restart_nodes_1_and_2(cluster, epochs, controlled_shutdown_timeout_ms=60_000)
    cluster.kill(2)
    started = time.monotonic()
    process = sigterm(cluster, 1)
    assert process.wait(timeout=30) == 0
    assert 3.0 <= time.monotonic() - started < 15
    cluster.nodes[1].process = None
    reasons = [e["reason"] for e in log_events(cluster, 1, "controlled_shutdown_incomplete")]
    assert reasons == ["second signal", "timeout", "no controller"]


def restart_nodes_1_and_2(
    cluster: Cluster, epochs: dict[int, int], *, controlled_shutdown_timeout_ms: int
) -> dict[int, int]:
    """Start nodes 1 (with that timeout) and 2 again; their new broker epochs."""
    node = cluster.nodes[1]
    node.config_path.write_text(
        node.config_path.read_text()
        + f"controlled.shutdown.timeout.ms={controlled_shutdown_timeout_ms}\n"
    )
    cluster.start(1)
    cluster.start(2)
    cluster.wait_for(
        "brokers 1 and 2 registered again and unfenced",
        lambda: registered_again(cluster, epochs),
        60.0,
    )
    cluster.wait_for("node 1 leading again", lambda: leaders(cluster, 1, "pinned") == [1], 30.0)
    return {node_id: broker["epoch"] for node_id, broker in brokers(cluster, 1).items()}


def brokers(cluster: Cluster, observer: int) -> dict[int, dict[str, Any]]:
    return {broker["id"]: broker for broker in cluster.nodes[observer].get("/v1/brokers")}


def registered_again(cluster: Cluster, epochs: dict[int, int]) -> bool:
    """Whether brokers 1 and 2 registered anew (a new broker epoch) and are unfenced."""
    try:
        known = brokers(cluster, 1)
    except (OSError, ValueError):
        return False
    return all(
        node in known and known[node]["epoch"] != epochs[node] and not known[node]["fenced"]
        for node in (1, 2)
    )
